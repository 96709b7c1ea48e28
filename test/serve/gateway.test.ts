import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import type { ServerConfig } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import type { Connection } from '../../lib/client/connection.js';
import { decodeCursor, encodeCursor, globPattern, NameFilter, templatePattern } from '../../lib/gateway/names.js';
import { TASKS_EXTENSION } from '../../lib/gateway/tasks.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { FILLED_FORM } from '../helpers/elicitation.js';
import { ROOT } from '../helpers/fixtures.js';
import { gone } from '../helpers/processes.js';
import { until, within } from '../helpers/poll.js';
import { modernPost, rawRequest } from '../helpers/raw-http.js';
import { cli, jsonLines } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const PEER = (name: string, env: Record<string, string> = {}): ServerConfig => ({
  command: process.execPath,
  args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name],
  env,
});
const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };
const FILESYSTEM = (dir: string) => ({
  command: process.execPath,
  args: [`${ROOT}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`, dir],
});
const SDK2_MODERN = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/sdk2.js`, 'modern'] };
const CONFORMANCE = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/conformance.js`] };
const CRASH = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/crash.js`] };

type Json = Record<string, unknown>;

/** Every page of a list, through a client's request function, with the cursors it was given. */
async function allPages(request: (params: Json) => Promise<Json>, key: string): Promise<{ items: Json[]; pages: number }> {
  const items: Json[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await request(cursor === undefined ? {} : { cursor });
    pages++;
    items.push(...(page[key] as Json[]));
    cursor = page.nextCursor as string | undefined;
  } while (cursor !== undefined && pages < 50);
  return { items, pages };
}

const names = (items: Json[]): string[] => items.map((i) => i.name as string);

describe('serve: a gateway in front of several servers', function () {
  this.timeout(60_000);
  const handles: ServeHandle[] = [];
  const clients: Connection[] = [];
  let log: string[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    for (const h of handles.splice(0).reverse()) await h.close();
  });

  async function gateway(servers: Record<string, ServerConfig>, options: ServeOptions = {}): Promise<ServeHandle> {
    log = [];
    const handle = await serve(servers, { log: (line) => log.push(line), ...options });
    handles.push(handle);
    return handle;
  }

  async function client(url: string, options: Parameters<typeof connect>[1] = {}): Promise<Connection> {
    const c = await connect({ type: 'http', url }, { protocolVersion: '2025-11-25', ...options });
    clients.push(c);
    return c;
  }

  it('offers server-everything and server-filesystem as one server to the MCP SDK 1.x client: prefixed names, merged pages, routed calls and reads', async () => {
    const dir = tempDir('gateway-fs-');
    writeFileSync(join(dir, 'note.txt'), 'a note ✓');
    const g = await gateway({ everything: EVERYTHING, files: FILESYSTEM(dir) });
    const host = new Client1({ name: 'legacy-host', version: '1.0.0' });
    await host.connect(new StreamableHTTPClientTransport1(new URL(g.url!)));
    try {
      expect(host.getServerVersion()?.name).to.equal('mcp-frame');
      const instructions = host.getInstructions() ?? '';
      expect(instructions).to.match(/^## everything\n/);
      expect(host.getServerCapabilities()).to.deep.include({ tools: { listChanged: true } });
      // A host that reads one page (an SDK 1.x listTools() without a loop, Gemini CLI, the Inspector CLI) sees
      // every server: the first page holds both servers' tools.
      const one = names(((await host.listTools()) as Json).tools as Json[]);
      expect(one).to.include.members(['everything__echo', 'files__read_text_file']);
      const tools = await allPages((p) => host.listTools(p) as Promise<Json>, 'tools');
      expect(tools.pages).to.equal(1);
      const listed = names(tools.items);
      expect(listed).to.include.members(['everything__echo', 'files__read_text_file', 'files__list_allowed_directories']);
      expect(listed.every((n) => /^(everything|files)__/.test(n))).to.equal(true);
      expect(listed.findIndex((n) => n.startsWith('files__'))).to.be.greaterThan(listed.lastIndexOf('everything__echo'));
      expect(await host.callTool({ name: 'everything__echo', arguments: { message: 'through the gateway ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'Echo: through the gateway ✓' }],
      });
      const read = (await host.callTool({ name: 'files__read_text_file', arguments: { path: join(dir, 'note.txt') } })) as Json;
      expect(JSON.stringify(read.content)).to.include('a note ✓');
      const unknown = (await host.callTool({ name: 'echo', arguments: {} }).catch((err: Error) => err)) as Error;
      expect(unknown.message).to.match(/Unknown tool: echo/);
      // Resources keep their URIs, and a read goes to the server that listed it.
      const { resources } = await host.listResources();
      expect(resources.length).to.be.greaterThan(0);
      const contents = await host.readResource({ uri: resources[0]!.uri });
      expect(contents.contents[0]!.uri).to.equal(resources[0]!.uri);
    } finally {
      await host.close();
    }
  });

  it('offers a modern-only MCP SDK 2.x server and a legacy one to the MCP SDK 2.x client in the modern era, an input_required round trip included', async () => {
    const g = await gateway({ everything: EVERYTHING, sdk2: SDK2_MODERN });
    const host = new Client({ name: 'sdk2-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
    const asked: string[] = [];
    host.setRequestHandler('elicitation/create', async (request) => {
      asked.push((request.params as { message: string }).message);
      const message = (request.params as { message: string }).message;
      return { action: 'accept', content: message.startsWith('Deploy') ? { confirm: true } : FILLED_FORM };
    });
    await host.connect(new StreamableHTTPClientTransport(new URL(g.url!)));
    try {
      const tools = await allPages((p) => host.listTools(p) as Promise<Json>, 'tools');
      expect(names(tools.items)).to.include.members(['everything__echo', 'sdk2__echo', 'sdk2__deploy']);
      expect(await host.callTool({ name: 'sdk2__echo', arguments: { text: 'modern behind the gateway ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'modern behind the gateway ✓' }],
      });
      // The modern server asks (input_required) through the gateway's Connection, which asks the gateway's client.
      const deployed = await host.callTool({ name: 'sdk2__deploy', arguments: { env: 'staging' } });
      expect(deployed).to.deep.include({ content: [{ type: 'text', text: 'deployed to staging (state deploy:staging:✓)' }] });
      const elicited = await host.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
      expect(JSON.stringify(elicited.content)).to.include('Ada');
      expect(asked).to.deep.equal(['Deploy to staging?', asked[1]]);
      expect(asked).to.have.length(2);
    } finally {
      await host.close();
    }
  });

  it('gives the MCP SDK 2.x client, which has no tasks surface, results and never a task: the gateway declares the tasks extension to a server only for a caller that did', async () => {
    const g = await gateway({ fixture: CONFORMANCE, everything: EVERYTHING }, { prefix: 'conflicts' });
    const host = new Client({ name: 'sdk2-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await host.connect(new StreamableHTTPClientTransport(new URL(g.url!)));
    try {
      const computed = await host.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'sync' } });
      expect(computed).to.deep.include({ content: [{ type: 'text', text: 'computed sync after 0s' }] });
      expect(computed).not.to.have.property('taskId');
      // A tool that needs a task: the server's -32021, naming the extension.
      const refused = await host.callTool({ name: 'failing_job', arguments: {} }).catch((err: Error) => err);
      expect(refused).to.be.instanceOf(Error);
      expect(String((refused as Error).message)).to.include('io.modelcontextprotocol/tasks');
    } finally {
      await host.close();
    }
    // The same gateway gives a caller that declares the extension a task, and its result once done.
    const declares = await connect({ type: 'http', url: g.url! }, { capabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    clients.push(declares);
    const task = (await declares.request('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'task' } })) as Json;
    expect(task).to.deep.include({ resultType: 'task' });
    expect(task.taskId).to.match(/^fixture:/);
    const done = (await within(5000, 'the task done', async () => {
      const got = (await declares.request('tasks/get', { taskId: task.taskId })) as Json;
      return got.status === 'completed' ? got : undefined;
    })) as Json;
    expect(done.result).to.deep.include({ content: [{ type: 'text', text: 'computed task after 0s' }] });
  });

  it("subscribes a session of the initialize era (MCP SDK 1.x) to a 2026-07-28 server's resource through a listen of its own, delivers its updates, and its list changes", async () => {
    const g = await gateway({ fixture: CONFORMANCE, everything: EVERYTHING }, { prefix: 'conflicts' });
    const host = new Client1({ name: 'sdk1-host', version: '1.0.0' });
    const updates: string[] = [];
    host.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(JSON.stringify(n.params)));
    const changes: unknown[] = [];
    host.setNotificationHandler(ToolListChangedNotificationSchema, (n) => void changes.push(n));
    await host.connect(new StreamableHTTPClientTransport1(new URL(g.url!)));
    try {
      // The modern server has no resources/subscribe: the gateway listens for that URI there instead.
      expect(await host.subscribeResource({ uri: 'test://watched-resource' })).to.deep.equal({});
      await host.callTool({ name: 'test_trigger_resource_update', arguments: {} });
      await until(5000, 'the update', () => updates.length > 0, 20);
      expect(updates).to.have.length(1);
      expect(JSON.parse(updates[0]!)).to.include({ uri: 'test://watched-resource' });
      expect(updates[0], "the server's stream id is no client's").not.to.include('subscriptionId');
      expect(await host.unsubscribeResource({ uri: 'test://watched-resource' })).to.deep.equal({});
      // A modern server tells its list changes only on a listen: the gateway keeps one open, and tells the session.
      // (The servers coming up told it of changes too: those are counted first, once they have stopped.)
      let before = -1;
      const settled = (): boolean => {
        const now = changes.length;
        const same = now === before;
        before = now;
        return same;
      };
      await until(5000, 'the start-up changes told', settled, 300);
      await host.callTool({ name: 'test_trigger_tool_change', arguments: {} });
      await until(5000, 'the list change', () => changes.length > before, 20);
      await host.callTool({ name: 'test_trigger_resource_update', arguments: {} });
      await host.callTool({ name: 'test_trigger_resource_update', arguments: {} });
      // A round trip after: an update would have come before its answer.
      await host.listTools();
      expect(updates, 'none once unsubscribed').to.have.length(1);
    } finally {
      await host.close();
    }
  });

  it("answers a 2026-07-28 client's server/discover itself, merged from its servers, with no translation in between", async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') }, { name: 'team' });
    const discovered = await rawRequest(g.url!, modernPost(1, 'server/discover', {}));
    expect(discovered.status).to.equal(200);
    const result = (JSON.parse(discovered.body) as { result: Json }).result;
    expect(result).to.deep.include({ supportedVersions: ['2026-07-28'], resultType: 'complete' });
    expect((result._meta as Json)['io.modelcontextprotocol/serverInfo']).to.deep.include({ name: 'team' });
    expect(result.capabilities).to.deep.include({ tools: { listChanged: true } });
    const removed = await rawRequest(g.url!, modernPost(2, 'ping', {}));
    expect([removed.status, (JSON.parse(removed.body) as { error: Json }).error.code]).to.deep.equal([404, -32601]);
    const called = await rawRequest(g.url!, modernPost(3, 'tools/call', { name: 'b__echo', arguments: { text: 'hi' } }));
    expect(JSON.parse(called.body)).to.deep.include({ result: { content: [{ type: 'text', text: 'b: hi' }], resultType: 'complete' } });
    expect(
      log.filter((l) => l.includes('translating')),
      'the gateway speaks the era itself',
    ).to.deep.equal([]);
  });

  it('reaches a remote server behind a second serve, beside a local one', async () => {
    log = [];
    const far = await serve(PEER('far') as never, { log: () => undefined });
    handles.push(far);
    const g = await gateway({ near: PEER('near'), remote: { type: 'http', url: far.url! } });
    const c = await client(g.url!);
    const tools = names((await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools')).items);
    expect(tools).to.include.members(['near__echo', 'remote__echo', 'remote__far-only', 'near__near-only']);
    expect(await c.request('tools/call', { name: 'remote__echo', arguments: { text: 'far away ✓' } })).to.deep.equal({
      content: [{ type: 'text', text: 'far: far away ✓' }],
    });
    expect(await c.request('tools/call', { name: 'near__echo', arguments: { text: 'close by' } })).to.deep.equal({
      content: [{ type: 'text', text: 'near: close by' }],
    });
    const read = (await c.request('resources/read', { uri: 'peer://far/files/a.txt' })) as { contents: Json[] };
    expect(read.contents[0]!.text).to.equal('far read peer://far/files/a.txt');
  });

  it('lists every server on one page when the total is modest, under cursors of its own beyond, and refuses a cursor it did not give', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') });
    const c = await client(g.url!);
    const { items, pages } = await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools');
    // Each peer lists 7 tools, two per page (4 pages each): one page of the gateway's holds them all, in config order.
    expect(pages).to.equal(1);
    expect(names(items)).to.deep.equal([
      ...['echo', 'shared', 'die', 'hang', 'progress', 'ask', 'a-only'].map((t) => `a__${t}`),
      ...['echo', 'shared', 'die', 'hang', 'progress', 'ask', 'b-only'].map((t) => `b__${t}`),
    ]);
    const bad = (await c.request('tools/list', { cursor: '2' }).catch((err: Error) => err)) as Error & { code: number };
    expect(bad.code).to.equal(-32602);
    expect(bad.message).to.match(/Invalid cursor/);
  });

  it("refuses at once a server's request no caller's call is waiting on (server-filesystem's first roots/list), for 2026-07-28 callers", async () => {
    const dir = tempDir('gateway-roots-');
    writeFileSync(join(dir, 'note.txt'), 'roots');
    const g = await gateway({ files: FILESYSTEM(dir), a: PEER('a') });
    const c = await client(g.url!, { protocolVersion: '2026-07-28' });
    const started = Date.now();
    const listed = (await c.request('tools/call', { name: 'files__list_allowed_directories', arguments: {} })) as Json;
    expect(JSON.stringify(listed.content)).to.include(dir);
    expect(Date.now() - started, 'the call did not wait for a roots/list nobody answers').to.be.below(5000);
    await within(5000, 'the refusal in the log', () => Promise.resolve(log.find((l) => /refused roots\/list of server "files"/.test(l))));
  });

  it('sends a session nothing before its initialize result: through mcp-remote, the host meets the result first', async () => {
    // Codex through mcp-remote showed its tools in one run of four: mcp-remote passes on what the gateway sends, and
    // the gateway sent a server's list change (sent right after that server's own initialize) before the result.
    const g = await gateway({ a: PEER('a', { PEER_CHANGED: '1' }), b: PEER('b', { PEER_CHANGED: '1' }) });
    for (let run = 0; run < 3; run++) {
      const home = tempDir('mcp-remote-home');
      const child = spawn(process.execPath, [`${ROOT}node_modules/mcp-remote/dist/proxy.js`, g.url!, '--transport', 'http-only'], {
        env: { ...process.env, HOME: home, MCP_REMOTE_CONFIG_DIR: home },
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      try {
        const lines = jsonLines(child.stdout);
        const init = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'codex-like', version: '1' } };
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: init })}\n`);
        await within(15_000, 'the initialize result', () => Promise.resolve(lines.some((l) => l.id === 1) ? true : undefined));
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(
          lines.map((l) => l.method ?? `answer ${String(l.id)}`),
          `run ${run}`,
        ).to.deep.equal(['answer 1']);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
        await within(15_000, 'the tool list', () => Promise.resolve(lines.some((l) => l.id === 2) ? true : undefined));
        expect(names((lines.find((l) => l.id === 2)!.result as Json).tools as Json[])).to.include.members(['a__echo', 'b__echo']);
      } finally {
        child.kill();
      }
    }
  });

  it('goes on under its own cursors past 1,000 tools, every tool once, in config order', async () => {
    const g = await gateway({ a: PEER('a'), big: PEER('big', { PEER_EXTRA: '1500', PEER_PAGE: '100' }), z: PEER('z') });
    const c = await client(g.url!);
    const first = (await c.request('tools/list')) as { tools: Json[]; nextCursor?: string };
    expect(first.tools.length).to.be.within(1000, 1100);
    expect(first.nextCursor).to.be.a('string');
    const { items, pages } = await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools');
    expect(pages).to.equal(2);
    const listed = names(items);
    expect(listed).to.have.length(7 + 1507 + 7);
    expect(new Set(listed).size).to.equal(listed.length);
    expect(listed[0]).to.equal('a__echo');
    expect(listed.at(-1)).to.equal('z__z-only');
  });

  it('leaves out the tools the filters leave out, and answers a call to one as to an unknown tool', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') }, { allowTools: ['a__*', 'b__echo'], denyTools: ['*__die'] });
    const c = await client(g.url!);
    const listed = names((await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools')).items);
    expect(listed).to.deep.equal(['a__echo', 'a__shared', 'a__hang', 'a__progress', 'a__ask', 'a__a-only', 'b__echo']);
    for (const name of ['a__die', 'b__shared']) {
      const err = (await c.request('tools/call', { name, arguments: {} }).catch((e: Error) => e)) as Error & { code: number };
      expect(err.code, name).to.equal(-32602);
      expect(err.message).to.equal(`Unknown tool: ${name}`);
    }
  });

  it('prefixes only the names two servers share with --prefix conflicts, and joins with the separator given', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') }, { prefix: 'conflicts', separator: '.' });
    const c = await client(g.url!);
    const listed = names((await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools')).items);
    expect(listed).to.include.members(['a.echo', 'b.echo', 'a-only', 'b-only']);
    expect(listed).to.not.include('echo');
    expect(await c.request('tools/call', { name: 'b-only', arguments: { text: 'x' } })).to.deep.equal({ content: [{ type: 'text', text: 'b: x' }] });
    expect(await c.request('tools/call', { name: 'a.shared', arguments: { text: 'y' } })).to.deep.equal({
      content: [{ type: 'text', text: 'a: y' }],
    });
  });

  it('refuses to start when two server names can make one exposed name, naming both and the flag', async () => {
    for (const [servers, separator, pair] of [
      [['google', 'google_drive'], '_', ['google', 'google_drive']],
      [['a', 'a__b'], undefined, ['a', 'a__b']],
      [['x_', 'x'], '__', ['x_', 'x']],
    ] as const) {
      const config = Object.fromEntries(servers.map((name) => [name, PEER(name)]));
      const err = (await serve(config, { log: () => undefined, ...(separator === undefined ? {} : { separator }) }).catch(
        (e: Error) => e,
      )) as Error & {
        code?: string;
      };
      expect(err, servers.join(' ')).to.be.instanceOf(Error);
      expect(err.code).to.equal('NAME_CLASH');
      expect(err.message).to.include(`servers "${pair[0]}" and "${pair[1]}" can expose one name`).and.to.include('--separator');
    }
    // Names that cannot meet are served.
    const g = await serve({ google: PEER('google'), drive: PEER('drive') }, { separator: '_', log: () => undefined });
    await g.close();
    const file = join(tempDir('clash'), 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { google: PEER('google'), google_drive: PEER('google_drive') } }));
    const cliRun = await cli(['serve', '--separator', '_', '--config', file, '--all', '--port', '0']);
    expect(cliRun.code).to.equal(3);
    expect(cliRun.stderr).to.include('--separator "_": servers "google" and "google_drive" can expose one name');
  });

  it('refuses to start with --prefix never when two servers offer one name, naming both', async () => {
    const err = (await serve({ a: PEER('a'), b: PEER('b') }, { prefix: 'never', log: () => undefined }).catch((e: Error) => e)) as Error & {
      code?: string;
    };
    expect(err).to.be.instanceOf(Error);
    expect(err.code).to.equal('NAME_CLASH');
    expect(err.message).to.include('tool echo (a, b)');
    expect(err.message).to.not.include('a-only');
  });

  it('routes progress back by the client’s own token, and a server’s question to the client whose call asked it', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') });
    const progress: Json[] = [];
    const c = await client(g.url!, {
      onSpawn: (conn) => conn.onRequest('elicitation/create', (p) => ({ action: 'accept', content: { ok: (p as Json).message === 'b asks' } })),
    });
    c.on('notification', (msg: Json) => {
      if (msg.method === 'notifications/progress') progress.push(msg.params as Json);
    });
    const result = await c.request('tools/call', { name: 'b__progress', arguments: {}, _meta: { progressToken: 'mine-7' } });
    expect(result).to.deep.equal({ content: [{ type: 'text', text: 'b: 3 steps' }] });
    expect(progress.map((p) => [p.progressToken, p.progress])).to.deep.equal([
      ['mine-7', 1],
      ['mine-7', 2],
      ['mine-7', 3],
    ]);
    expect(await c.request('tools/call', { name: 'b__ask', arguments: {} })).to.deep.equal({
      content: [{ type: 'text', text: 'b was told {"action":"accept","content":{"ok":true}}' }],
    });
  });

  it('sends a server’s question during a 2026-07-28 call to that call’s client, while calls to other servers are in flight', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') });
    const asker = await connect(
      { type: 'http', url: g.url! },
      { protocolVersion: '2026-07-28', onSpawn: (conn) => conn.onRequest('elicitation/create', () => ({ action: 'accept', content: { ok: true } })) },
    );
    const other = await connect({ type: 'http', url: g.url! }, { protocolVersion: '2026-07-28' });
    clients.push(asker, other);
    const abort = new AbortController();
    const hanging = other.request('tools/call', { name: 'a__hang', arguments: {} }, { signal: abort.signal }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    try {
      expect(await asker.request('tools/call', { name: 'b__ask', arguments: {} })).to.deep.equal({
        content: [{ type: 'text', text: 'b was told {"action":"accept","content":{"ok":true}}' }],
      });
    } finally {
      abort.abort();
      await hanging;
    }
  });

  it('passes a cancellation on to the server running the request', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') });
    const c = await client(g.url!);
    const abort = new AbortController();
    const call = c.request('tools/call', { name: 'b__hang', arguments: {} }, { signal: abort.signal });
    await new Promise((resolve) => setTimeout(resolve, 200));
    abort.abort();
    await call.catch(() => undefined);
    await until(5000, 'server b told of the cancellation', () => log.some((l) => /server "b" stderr: b cancelled \d+/.test(l)), 10);
    expect(log.some((l) => /server "a" stderr: a cancelled/.test(l))).to.equal(false);
  });

  it('keeps a failure where it starts: a server that cannot start takes only its own tools, calls to it name it, /healthz says degraded', async () => {
    const g = await gateway({ a: PEER('a'), broken: CRASH, b: PEER('b') });
    const c = await client(g.url!);
    const listed = names((await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools')).items);
    expect(listed).to.include.members(['a__echo', 'b__echo']);
    expect(listed.some((n) => n.startsWith('broken__'))).to.equal(false);
    const err = (await c.request('tools/call', { name: 'broken__anything', arguments: {} }).catch((e: Error) => e)) as Error & { code: number };
    expect(err.code).to.equal(-32000);
    expect(err.message).to.match(/^server "broken" is not available: /);
    expect(await c.request('tools/call', { name: 'b__echo', arguments: { text: 'still here' } })).to.deep.equal({
      content: [{ type: 'text', text: 'b: still here' }],
    });
    const health = await rawRequest(g.url!.replace('/mcp', '/healthz'));
    expect(health.status).to.equal(200);
    const body = JSON.parse(health.body) as { status: string; servers: Record<string, { state: string; reason?: string }> };
    expect(body.status).to.equal('degraded');
    expect(body.servers.a!.state).to.equal('up');
    expect(body.servers.broken!.state).to.equal('down');
    expect(body.servers.broken!.reason).to.match(/DEMO_API_KEY is not set|exit/);
  });

  it('says on /healthz that a server whose command cannot start is down, with why, before any session', async () => {
    const g = await gateway({ a: PEER('a'), gone: { command: '/nonexistent/mcp-server' } });
    const health = await rawRequest(g.url!.replace('/mcp', '/healthz'));
    expect(health.status).to.equal(200);
    const body = JSON.parse(health.body) as { status: string; servers: Record<string, { state: string; reason?: string }> };
    expect(body.status).to.equal('degraded');
    expect(body.servers.gone).to.deep.equal({ state: 'down', reason: 'cannot start "/nonexistent/mcp-server": no executable file there' });
    expect(body.servers.a).to.deep.equal({ state: 'idle' });
  });

  it('answers /healthz 503 when every server behind it is down', async () => {
    const g = await gateway({ one: CRASH, two: CRASH });
    const c = await client(g.url!);
    const err = (await c.request('tools/call', { name: 'one__x', arguments: {} }).catch((e: Error) => e)) as Error;
    expect(err.message).to.match(/server "one" is not available/);
    const health = await rawRequest(g.url!.replace('/mcp', '/healthz'));
    expect(health.status).to.equal(503);
    expect(JSON.parse(health.body)).to.deep.include({ status: 'unavailable', reason: 'every server behind the gateway is down' });
  });

  it('tells the client when a server dies and when it is back, restarted with backoff', async () => {
    const state = join(tempDir('gateway-state-'), 'starts');
    const g = await gateway({ a: PEER('a', { PEER_STATE: state }), b: PEER('b') });
    const changed: string[] = [];
    const c = await client(g.url!);
    c.on('notification', (msg: Json) => changed.push(msg.method as string));
    const died = (await c.request('tools/call', { name: 'a__die', arguments: {} }).catch((e: Error) => e)) as Error;
    expect(died.message).to.match(/a|server/);
    await until(5000, 'the list change', () => changed.includes('notifications/tools/list_changed'), 10);
    // While it is down, its tools are gone and b's calls go on.
    expect(await c.request('tools/call', { name: 'b__echo', arguments: { text: 'meanwhile' } })).to.deep.equal({
      content: [{ type: 'text', text: 'b: meanwhile' }],
    });
    await until(10_000, 'two starts recorded', () => readFileSync(state, 'utf8').split('\n').filter(Boolean).length === 2, 10);
    await until(10_000, 'a second list change', () => changed.filter((m) => m === 'notifications/tools/list_changed').length >= 2, 10);
    expect(await c.request('tools/call', { name: 'a__echo', arguments: { text: 'back' } })).to.deep.equal({
      content: [{ type: 'text', text: 'a: back' }],
    });
    expect(log.some((l) => /server "a" is down: the server is gone/.test(l))).to.equal(true);
    expect(log.filter((l) => /server "a" started \(pid \d+\)/.test(l))).to.have.length(2);
  });

  it('tells a 2026-07-28 client listening for list changes when a server behind it dies', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') });
    const c = await connect({ type: 'http', url: g.url! }, { protocolVersion: '2026-07-28' });
    clients.push(c);
    expect(c.era).to.equal('modern');
    const heard: string[] = [];
    const listen = await c.listen({ toolsListChanged: true }, (msg) => heard.push(msg.method as string));
    try {
      expect(listen.acknowledged.toolsListChanged).to.equal(true);
      await c.request('tools/call', { name: 'a__die', arguments: {} }).catch(() => undefined);
      await until(5000, 'the list change heard', () => heard.includes('notifications/tools/list_changed'), 10);
      expect(await c.request('tools/call', { name: 'b__echo', arguments: { text: 'modern' } })).to.deep.equal({
        content: [{ type: 'text', text: 'b: modern' }],
      });
    } finally {
      await listen.close();
    }
  });

  it('does not wait for a slow server at start: its tools join later, with a list change', async () => {
    const g = await gateway({ quick: PEER('quick'), slow: PEER('slow', { PEER_START_MS: '2500' }) }, { upstreamStartMs: 300 });
    const changed: string[] = [];
    const began = Date.now();
    const c = await client(g.url!);
    expect(Date.now() - began).to.be.lessThan(2000);
    c.on('notification', (msg: Json) => changed.push(msg.method as string));
    const first = names((await allPages((p) => c.request('tools/list', p) as Promise<Json>, 'tools')).items);
    expect(first.some((n) => n.startsWith('slow__'))).to.equal(false);
    const early = (await c.request('tools/call', { name: 'slow__echo', arguments: {} }).catch((e: Error) => e)) as Error;
    expect(early.message).to.equal('server "slow" is not available: it is starting');
    await until(10_000, 'the list change', () => changed.includes('notifications/tools/list_changed'), 10);
    expect(await c.request('tools/call', { name: 'slow__echo', arguments: { text: 'late' } })).to.deep.equal({
      content: [{ type: 'text', text: 'slow: late' }],
    });
  });

  it('serves the gateway over the local socket too, every connection to the same servers, and traces each server’s frames with trace', async () => {
    const socket = join(tempDir('gateway-sock-'), 'g.sock');
    const g = await gateway({ a: PEER('a'), b: PEER('b') }, { socket, http: false, trace: true });
    for (const text of ['by socket', 'by socket again']) {
      const c = await connect({ type: 'socket', path: socket }, { protocolVersion: '2025-11-25' });
      clients.push(c);
      expect(await c.request('tools/call', { name: 'a__echo', arguments: { text } })).to.deep.equal({
        content: [{ type: 'text', text: `a: ${text}` }],
      });
    }
    expect(g.url).to.equal(undefined);
    expect(log.some((l) => /server "a" -> .*tools\/call/.test(l))).to.equal(true);
    expect(log.filter((l) => /server "a" <- .*"result":\{"content"/.test(l))).to.have.length(2);
    expect(
      log.filter((l) => /server "a" started/.test(l)),
      log.join('\n'),
    ).to.have.length(1);
  });

  it('closes every server of every session when it closes', async () => {
    const g = await gateway({ a: PEER('a'), b: PEER('b') });
    const c = await client(g.url!);
    await c.request('tools/list');
    expect(g.sessions).to.equal(1);
    const pids = log
      .map((l) => /server "\w" started \(pid (\d+)\)/.exec(l)?.[1])
      .filter((p) => p !== undefined)
      .map(Number);
    expect(pids).to.have.length(2);
    await g.close();
    for (const pid of pids) expect(await gone(pid), `server pid ${pid}`).to.equal(true);
    handles.splice(handles.indexOf(g), 1);
    const health = await rawRequest(g.url!.replace('/mcp', '/healthz')).catch((err: Error) => err);
    expect(health).to.be.instanceOf(Error);
  });
});

describe('gateway names', () => {
  it('matches globs on whole names only', () => {
    expect(globPattern('github__*').test('github__create_issue')).to.equal(true);
    expect(globPattern('github__*').test('xgithub__a')).to.equal(false);
    expect(globPattern('a?c').test('abc')).to.equal(true);
    expect(globPattern('a.c').test('abc')).to.equal(false);
    expect(globPattern('(x)+').test('(x)+')).to.equal(true);
    const filter = new NameFilter(['a__*'], ['*__die']);
    expect(['a__echo', 'a__die', 'b__echo'].filter((n) => filter.passes(n))).to.deep.equal(['a__echo']);
    expect(new NameFilter().passes('anything')).to.equal(true);
  });

  it('routes URIs by RFC 6570 templates', () => {
    expect(templatePattern('file:///{path}').test('file:///a.txt')).to.equal(true);
    expect(templatePattern('file:///{path}').test('file:///a/b.txt')).to.equal(false);
    expect(templatePattern('file:///{+path}').test('file:///a/b.txt')).to.equal(true);
    expect(templatePattern('repo://{owner}/{name}{?ref}').test('repo://me/x?ref=main')).to.equal(true);
    expect(templatePattern('repo://{owner}/{name}{?ref}').test('repo://me/x')).to.equal(true);
    expect(templatePattern('a.b://{x}').test('aXb://1')).to.equal(false);
  });

  it('makes cursors that carry the upstream and its own cursor, and refuses others', () => {
    const cursor = encodeCursor('tools', { upstream: 2, cursor: 'page-3 ✓' });
    expect(decodeCursor('tools', cursor)).to.deep.equal({ upstream: 2, cursor: 'page-3 ✓' });
    expect(decodeCursor('prompts', cursor)).to.equal(undefined);
    expect(decodeCursor('tools', encodeCursor('tools', { upstream: 0, cursor: undefined }))).to.deep.equal({ upstream: 0, cursor: undefined });
    for (const bad of ['', '2', 'mf1.', 'mf1.!!!', `mf1.${Buffer.from('["tools",-1,null]').toString('base64url')}`]) {
      expect(decodeCursor('tools', bad), bad).to.equal(undefined);
    }
  });
});
