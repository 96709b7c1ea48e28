import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ServeHandle } from '../../lib/serve/index.js';
import { MCP_HEADERS, MODERN_META, modernPost, openStream, rawRequest } from '../helpers/raw-http.js';
import { ROOT } from '../helpers/fixtures.js';
import { FILLED_FORM } from '../helpers/elicitation.js';
import { INIT, rawSession, STEPS, served } from '../helpers/served.js';
import { until } from '../helpers/poll.js';

const SDK2 = (era: 'modern' | 'dual') => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/sdk2.js`, era] });
const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };
const PAGED = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/paged-modern.js`] };
const IGNORES_PROBE = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/ignores-probe.js`] };

const META = MODERN_META;

describe('serve: modern (2026-07-28) requests', function () {
  this.timeout(30_000);
  let bridge: ServeHandle;
  let log: string[];
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    await bridge.close();
  });

  it('lets the MCP SDK 2.x client use a modern stdio server through the bridge', async () => {
    ({ bridge, log } = await served(SDK2('modern')));
    const client = new Client({ name: 'sdk2-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(bridge.url!)));
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).to.deep.equal([
        'deploy',
        'echo',
        'grow',
        'haiku',
        'pester',
        'roots',
        'route',
        'steps',
        'steps-once',
      ]);
      expect(await client.callTool({ name: 'echo', arguments: { text: 'through serve ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'through serve ✓' }],
      });
    } finally {
      await client.close();
    }
    // One shared child, no sessions.
    expect(log.filter((l) => /server pid/.test(l))).to.have.length(1);
    expect(log.some((l) => /^session /.test(l))).to.equal(false);
  });

  it('keeps two clients apart on the shared child: the same ids and progress tokens, each its own answers', async () => {
    ({ bridge, log } = await served(SDK2('dual')));
    const [a, b] = await Promise.all([connect({ type: 'http', url: bridge.url! }), connect({ type: 'http', url: bridge.url! })]);
    open.push(a, b);
    expect([a.era, b.era]).to.deep.equal(['modern', 'modern']);
    const progress = { a: [] as number[], b: [] as number[] };
    a.onNotification('notifications/progress', (p) => progress.a.push((p as { progress: number }).progress));
    b.onNotification('notifications/progress', (p) => progress.b.push((p as { progress: number }).progress));
    // Both use id 2 and progress token "same".
    const [ra, rb] = await Promise.all([
      a.request('tools/call', { name: 'steps', arguments: { n: 3, ms: 10 }, _meta: { progressToken: 'same' } }),
      b.request('tools/call', { name: 'steps', arguments: { n: 5, ms: 10 }, _meta: { progressToken: 'same' } }),
    ]);
    expect(ra).to.deep.include({ content: [{ type: 'text', text: '3 steps' }] });
    expect(rb).to.deep.include({ content: [{ type: 'text', text: '5 steps' }] });
    expect(progress).to.deep.equal({ a: [1, 2, 3], b: [1, 2, 3, 4, 5] });
  });

  it("never gives one client's notifications to another: only a progress token attributes one, the rest are counted", async () => {
    ({ bridge, log } = await served(STEPS));
    const post = (id: number, name: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}) =>
      rawRequest(bridge.url!, {
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { ...META, ...meta } } }),
      });
    // A's tool answers, then logs a message of A's 30 ms later, while B's request is the only one in flight.
    const a = await post(1, 'later', { text: 'private to A' });
    expect(a.status).to.equal(200);
    const b = await post(2, 'steps', { n: 4, ms: 25 }, { progressToken: 'b' });
    expect(b.body).not.to.include('private to A');
    const events = b.body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events.filter((e) => e.method === 'notifications/progress').map((e) => e.params.progress)).to.deep.equal([1, 2, 3, 4]);
    // The server behind is legacy: its result goes out as a 2026-07-28 one, saying it is complete.
    expect(events.at(-1)).to.deep.include({ id: 2, result: { content: [{ type: 'text', text: '4 steps' }], resultType: 'complete' } });
    // A's log message, and each of B's four log messages (they carry no token), were dropped and counted.
    expect(bridge.unattributed).to.equal(5);
  });

  it('answers a request whose headers do not match its body with 400 and HeaderMismatch', async () => {
    ({ bridge, log } = await served(SDK2('modern')));
    const body = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, _meta: META } });
    const headers = { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' };
    const wrong = await rawRequest(bridge.url!, { method: 'POST', headers: { ...headers, 'mcp-name': 'other' }, body });
    expect(wrong.status).to.equal(400);
    expect(JSON.parse(wrong.body)).to.deep.include({ id: 9 });
    expect((JSON.parse(wrong.body) as { error: { code: number } }).error.code).to.equal(-32020);
    const missing = await rawRequest(bridge.url!, { method: 'POST', headers, body });
    expect(missing.status).to.equal(400);
    const right = await rawRequest(bridge.url!, { method: 'POST', headers: { ...headers, 'mcp-name': 'echo' }, body });
    expect(right.status).to.equal(200);
    expect(JSON.parse(right.body)).to.deep.include({ id: 9 });
  });

  it('translates for a modern client when the server behind it is legacy, even one that ignores the probe', async () => {
    ({ bridge, log } = await served(IGNORES_PROBE));
    const c = await connect({ type: 'http', url: bridge.url! });
    open.push(c);
    expect(c.era).to.equal('modern');
    expect(await c.request('tools/call', { name: 'x' })).to.deep.equal({ content: [{ type: 'text', text: 'legacy' }] });
    expect(log.some((l) => l.includes('speaks only the initialize era: translating'))).to.equal(true);
  });

  it("lets a modern client complete an elicitation-driven call on a legacy server: the server's question becomes input_required", async () => {
    ({ bridge, log } = await served(EVERYTHING));
    const asked: string[] = [];
    const c = await connect(
      { type: 'http', url: bridge.url! },
      {
        onSpawn: (conn) =>
          conn.onRequest('elicitation/create', (params) => {
            asked.push((params as { message: string }).message);
            return {
              action: 'accept',
              content: FILLED_FORM,
            };
          }),
      },
    );
    open.push(c);
    expect(c.era).to.equal('modern');
    // The server saw the modern client's capabilities at initialize: its elicitation tool is there.
    const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
    expect(tools.map((t) => t.name)).to.include('trigger-elicitation-request');
    const result = (await c.request('tools/call', { name: 'trigger-elicitation-request', arguments: {} })) as { content: unknown[] };
    expect(JSON.stringify(result.content)).to.include('Ada');
    expect(asked).to.have.length(1);
  });

  it('lets the MCP SDK 2.x client use a legacy stdio server through the bridge, as a modern one, elicitation included', async () => {
    ({ bridge, log } = await served(EVERYTHING));
    const client = new Client({ name: 'sdk2-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push((request.params as { message: string }).message);
      return { action: 'accept', content: FILLED_FORM };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(bridge.url!)));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).to.include('echo');
      expect(await client.callTool({ name: 'echo', arguments: { message: 'modern in front ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'Echo: modern in front ✓' }],
      });
      const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
      expect(JSON.stringify(elicited.content)).to.include('Ada');
      expect(asked).to.have.length(1);
    } finally {
      await client.close();
    }
  });

  it('lets a legacy host (the MCP SDK 1.x client) complete an elicitation-driven call on a modern-only stdio server', async () => {
    ({ bridge, log } = await served(SDK2('modern')));
    const host = new Client1({ name: 'legacy-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    host.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { confirm: true } };
    });
    await host.connect(new StreamableHTTPClientTransport1(new URL(bridge.url!)));
    try {
      expect(host.getServerVersion()?.name).to.equal('sdk2-modern');
      expect(await host.callTool({ name: 'deploy', arguments: { env: 'staging' } })).to.deep.include({
        content: [{ type: 'text', text: 'deployed to staging (state deploy:staging:✓)' }],
      });
      expect(asked).to.deep.equal(['Deploy to staging?']);
    } finally {
      await host.close();
    }
    expect(log.some((l) => /session \w+ the server speaks only 2026-07-28: translating/.test(l))).to.equal(true);
  });

  it('checks the Mcp-Param-* headers of a tool call against its body, for a modern server that reads only the body', async () => {
    ({ bridge, log } = await served(SDK2('modern')));
    const call = (headers: Record<string, string>, args: Record<string, unknown>) =>
      rawRequest(bridge.url!, {
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'route', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'route', arguments: args, _meta: META } }),
      });
    const args = { region: 'zürich', shard: 3, q: 'x' };
    const base64 = `=?base64?${Buffer.from('zürich').toString('base64')}?=`;
    const ok = await call({ 'mcp-param-region': base64, 'mcp-param-shard': '3' }, args);
    expect(ok.status).to.equal(200);
    expect(ok.headers['mcp-session-id']).to.equal(undefined);
    for (const [headers, reason] of [
      [{ 'mcp-param-shard': '3' }, /Mcp-Param-Region header is absent/],
      [{ 'mcp-param-region': 'geneva', 'mcp-param-shard': '3' }, /Mcp-Param-Region header does not match/],
      [{ 'mcp-param-region': base64, 'mcp-param-shard': '4' }, /Mcp-Param-Shard header does not match/],
    ] as const) {
      const refused = await call(headers, args);
      expect(refused.status).to.equal(400);
      expect(JSON.parse(refused.body).error).to.deep.include({ code: -32020 });
      expect(JSON.parse(refused.body).error.message).to.match(reason);
    }
    // And mcp-frame's own client, which mirrors them, gets through.
    const c = await connect({ type: 'http', url: bridge.url! });
    open.push(c);
    expect(await c.request('tools/call', { name: 'route', arguments: { region: 'eu', shard: 1, q: 'y' } })).to.deep.include({
      content: [{ type: 'text', text: 'y in eu/1' }],
    });
  });

  it('checks Mcp-Param-* headers for a tool listed on a later page, and refuses malformed Base64 in them and in Mcp-Name', async () => {
    ({ bridge, log } = await served(PAGED));
    const route = (headers: Record<string, string>) =>
      rawRequest(bridge.url!, modernPost(1, 'tools/call', { name: 'route', arguments: { region: 'zürich', q: 'x' } }, headers));
    const good = `=?base64?${Buffer.from('zürich').toString('base64')}?=`;
    expect((await route({ 'mcp-param-region': good })).status).to.equal(200);
    for (const [headers, reason] of [
      [{ 'mcp-param-region': 'geneva' }, /Mcp-Param-Region header does not match/],
      [{}, /Mcp-Param-Region header is absent/],
      // Unpadded, stray bits, not UTF-8: Node's decoder would take each.
      [{ 'mcp-param-region': `=?base64?${Buffer.from('zürich').toString('base64').replace(/=+$/, '')}?=` }, /Base64 form is malformed/],
      [{ 'mcp-param-region': '=?base64?enVyaWNi?=' }, /does not match|malformed/],
      [{ 'mcp-param-region': '=?base64?emh=?=' }, /Base64 form is malformed/],
      [{ 'mcp-param-region': '=?base64?/w==?=' }, /Base64 form is malformed/],
      [{ 'mcp-param-region': good, 'mcp-name': '=?base64?cm91dGU?=' }, /malformed/],
    ] as const) {
      const refused = await route(headers);
      expect(refused.status, JSON.stringify(headers)).to.equal(400);
      expect(JSON.parse(refused.body).error.code).to.equal(-32020);
      expect(JSON.parse(refused.body).error.message, JSON.stringify(headers)).to.match(reason);
    }
  });

  it("acknowledges a subscriptions/listen through serve and delivers its notifications, with the client's own id put back", async () => {
    ({ bridge, log } = await served(PAGED));
    const listen = await openStream(bridge.url!, modernPost('sub-7', 'subscriptions/listen', { notifications: { toolsListChanged: true } }));
    expect(listen.status).to.equal(200);
    await listen.until(1);
    const ack = JSON.parse(listen.events[0]!.data);
    expect(ack).to.deep.include({ method: 'notifications/subscriptions/acknowledged' });
    expect(ack.params._meta['io.modelcontextprotocol/subscriptionId']).to.equal('sub-7');
    expect(ack.params.notifications).to.deep.equal({ toolsListChanged: true });
    expect((await rawRequest(bridge.url!, modernPost(2, 'tools/call', { name: 'change', arguments: {} }))).status).to.equal(200);
    await listen.until(2);
    const change = JSON.parse(listen.events[1]!.data);
    expect(change).to.deep.include({ method: 'notifications/tools/list_changed' });
    expect(change.params._meta['io.modelcontextprotocol/subscriptionId']).to.equal('sub-7');
    expect(bridge.unattributed).to.equal(0);
    listen.drop();
  });

  it('gives a log message of the shared child to the one request in flight that asked for logs, and drops it when two did', async () => {
    ({ bridge, log } = await served(PAGED));
    const asks = { 'io.modelcontextprotocol/logLevel': 'info' };
    const call = (id: number, who: string, meta: Record<string, unknown>, ms = 30, before = 0) =>
      rawRequest(bridge.url!, modernPost(id, 'tools/call', { name: 'logs', arguments: { who, ms, before }, _meta: meta }));
    const [a, quiet] = await Promise.all([call(1, 'A', asks), call(2, 'B', {})]);
    const events = (body: string) =>
      body
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)));
    expect(events(a.body).map((e) => e.params?.data ?? e.result?.content?.[0]?.text)).to.deep.equal(['log for A', 'logged A']);
    expect(quiet.body).not.to.include('log for');
    expect(bridge.unattributed).to.equal(0);
    // Two requests asked: the log message is nobody's for sure, and is counted, not guessed. Each logs only
    // after 300 ms, so that both are in flight by then, however slowly the second arrives.
    const [first, second] = await Promise.all([call(3, 'C', asks, 100, 300), call(4, 'D', asks, 100, 300)]);
    expect(first.body + second.body).not.to.match(/log for [CD]/);
    expect(bridge.unattributed).to.equal(2);
  });

  it('settles a cancelled request of a translated session: its stream ends, and cancelled requests never use up the limit', async () => {
    ({ bridge, log } = await served(PAGED, { maxPendingPerSession: 2 }));
    const session = await rawSession(bridge.url!);
    const post = (body: unknown) => ({ method: 'POST', headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: JSON.stringify(body) }) as const;
    for (let id = 10; id < 16; id++) {
      const slow = await openStream(bridge.url!, post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow', arguments: {} } }));
      expect(slow.status, `request ${id}`).to.equal(200);
      const cancelled = await rawRequest(bridge.url!, post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }));
      expect(cancelled.status).to.equal(202);
      await slow.ended;
    }
    expect(log.join('\n')).to.match(/translating/);
  });

  it('delivers the list changes a translated session advertises: a listen opened behind it, the change on the GET stream', async () => {
    ({ bridge, log } = await served(PAGED));
    const init = await rawRequest(bridge.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    const result = JSON.parse(
      init.body
        .split('\n')
        .find((l) => l.startsWith('data: '))
        ?.slice(6) ?? init.body,
    ).result;
    expect(result.capabilities.tools).to.deep.equal({ listChanged: true });
    const session = init.headers['mcp-session-id'] as string;
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session };
    await rawRequest(bridge.url!, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const get = await openStream(bridge.url!, { headers: { accept: 'text/event-stream', 'mcp-session-id': session } });
    const changed = await rawRequest(bridge.url!, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'change', arguments: {} } }),
    });
    expect(changed.status).to.equal(200);
    await until(5000, 'the list change on the GET stream', () => get.events.some((e) => e.data.includes('list_changed')), 20);
    const event = get.events
      .map((e) => (e.data === '' ? undefined : JSON.parse(e.data)))
      .find((m) => m?.method === 'notifications/tools/list_changed');
    expect(event).to.deep.equal({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} });
    get.drop();
  });
});
