import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import type { ServerConfig, StdioServerConfig } from '../../lib/client/config.js';
import { serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { until, within } from '../helpers/poll.js';
import { gone } from '../helpers/processes.js';
import { rawRequest } from '../helpers/raw-http.js';
import { serveProcess } from '../helpers/served.js';
import { tempDir } from '../helpers/temp.js';

type Json = Record<string, unknown>;
const PEER = (name: string, env: Record<string, string> = {}): ServerConfig => ({
  command: process.execPath,
  args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name],
  env,
});

/** The pid each server's last start logged (`server "<name>" started (pid N)`), by name. */
function startedPids(stderr: string): Map<string, number> {
  const pids = new Map<string, number>();
  for (const m of stderr.matchAll(/server "([^"]+)" started \(pid (\d+)\)/g)) pids.set(m[1]!, Number(m[2]));
  return pids;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('serve reloads its servers without a restart', function () {
  this.timeout(60_000);

  it('SIGHUP: an added server is offered (list_changed to an SDK 1.x client), a removed one closed once its call ends, a changed one restarted, the same one untouched; a bad file refused', async () => {
    const dir = tempDir('serve-reload-');
    const file = join(dir, 'serve.jsonc');
    const write = (servers: Record<string, ServerConfig>, extra = ''): void =>
      writeFileSync(file, `{ ${extra} "gateway": { "all": true }, "mcpServers": ${JSON.stringify(servers)} }`);
    write({ keep: PEER('keep'), drop: PEER('drop'), change: PEER('change') });
    const { proc, stderr, exited, url } = await serveProcess(['--config', file]);
    const client = new Client1({ name: 'reload-test', version: '1.0.0' });
    const changes: string[] = [];
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.push('tools'));
    try {
      await client.connect(new StreamableHTTPClientTransport1(new URL(url!)));
      const names = async (): Promise<string[]> => (await client.listTools()).tools.map((t) => t.name).filter((n) => n.endsWith('__echo'));
      expect(await names()).to.deep.equal(['keep__echo', 'drop__echo', 'change__echo']);
      const before = startedPids(stderr());
      expect([...before.keys()].sort()).to.deep.equal(['change', 'drop', 'keep']);

      // A call of the server to be removed is running when the reload comes: it holds that server's process.
      const abort = new AbortController();
      const hanging = client.callTool({ name: 'drop__hang', arguments: {} }, undefined, { signal: abort.signal }).catch((err: Error) => err);
      await until(5000, 'the call at drop', () => stderr().includes('drop hangs now'), 20);

      write({ keep: PEER('keep'), change: PEER('change', { PEER_EXTRA: '1' }), added: PEER('added') });
      proc.kill('SIGHUP');
      await until(
        10_000,
        'the reload logged',
        () => stderr().includes('SIGHUP: reloaded the servers: added added; removed drop; changed change'),
        20,
      );
      await until(10_000, 'a list change heard', () => changes.length > 0, 20);
      await until(
        10_000,
        'added and change started anew',
        () => startedPids(stderr()).has('added') && startedPids(stderr()).get('change') !== before.get('change'),
        20,
      );
      expect(await names()).to.deep.equal(['keep__echo', 'change__echo', 'added__echo']);
      expect((await client.listTools()).tools.map((t) => t.name)).to.include('change__t1');
      expect(await client.callTool({ name: 'added__echo', arguments: { text: 'new' } })).to.deep.include({
        content: [{ type: 'text', text: 'added: new' }],
      });

      const after = startedPids(stderr());
      expect(after.get('keep'), 'the same server is not restarted').to.equal(before.get('keep'));
      expect(alive(before.get('keep')!)).to.equal(true);
      expect(await gone(before.get('change')!, 5000), 'the changed server’s old process').to.equal(true);
      expect(alive(before.get('drop')!), 'the removed server waits for its call').to.equal(true);
      abort.abort();
      await hanging;
      expect(await gone(before.get('drop')!, 10_000), 'the removed server, its call ended').to.equal(true);

      // A file that does not validate changes nothing.
      writeFileSync(file, '{ "gateway": { "all": true, "allTools": true }, "mcpServers": {} }');
      proc.kill('SIGHUP');
      await until(10_000, 'the reload refused', () => /SIGHUP: kept the configuration in force: .*gateway\.allTools: unknown key/.test(stderr()), 20);
      expect(await names()).to.deep.equal(['keep__echo', 'change__echo', 'added__echo']);
      // A flag only a start reads is named, and kept.
      write({ keep: PEER('keep'), change: PEER('change', { PEER_EXTRA: '1' }), added: PEER('added') }, '"limits": { "maxSessions": 3 },');
      proc.kill('SIGHUP');
      await until(10_000, 'the flag named', () => stderr().includes('SIGHUP: --max-sessions changed: read at start only'), 20);
      await until(10_000, 'the servers unchanged', () => stderr().includes('reloaded the servers: none changed'), 20);
      expect(startedPids(stderr()).get('keep')).to.equal(before.get('keep'));
    } finally {
      await client.close();
      proc.kill('SIGTERM');
      expect(await exited).to.equal(0);
    }
  });

  it('setServers(): a session of the initialize era and the modern requests both see the new servers; none at all, or names that can clash, refused and the servers kept', async () => {
    const bridge = await serve({ a: PEER('a') }, { port: 0, gateway: true, log: () => undefined });
    const c = await connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2025-11-25' });
    const heard: string[] = [];
    c.on('notification', (msg: Json) => heard.push(msg.method as string));
    try {
      const tools = async (): Promise<string[]> =>
        ((await c.request('tools/list', {})) as { tools: Array<{ name: string }> }).tools.map((t) => t.name).filter((n) => n.endsWith('__echo'));
      expect(await tools()).to.deep.equal(['a__echo']);
      expect(await bridge.setServers({ a: PEER('a'), b: PEER('b') })).to.deep.equal({ added: ['b'], removed: [], changed: [] });
      await until(10_000, 'the list change', () => heard.includes('notifications/tools/list_changed'), 20);
      await within(10_000, 'b listed', async () => ((await tools()).includes('b__echo') ? true : undefined), 50);
      expect(await tools()).to.deep.equal(['a__echo', 'b__echo']);
      // /healthz names the servers in force: one gone is forgotten, one added that cannot start is down, with why.
      await bridge.setServers({ b: PEER('b'), gone: { command: '/nonexistent/mcp-server' } });
      const health = JSON.parse((await rawRequest(bridge.url!.replace('/mcp', '/healthz'))).body) as {
        servers: Record<string, { state: string; reason?: string }>;
      };
      expect(Object.keys(health.servers)).to.deep.equal(['b', 'gone']);
      expect(health.servers.b).to.deep.equal({ state: 'up' });
      expect(health.servers.gone!.state).to.equal('down');
      expect(health.servers.gone!.reason).to.match(/cannot start .*"\/nonexistent\/mcp-server"/);
      await bridge.setServers({ a: PEER('a'), b: PEER('b') });
      await within(10_000, 'a listed again', async () => ((await tools()).includes('a__echo') ? true : undefined), 50);
      const modern = await connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2026-07-28' });
      try {
        expect(await modern.request('tools/call', { name: 'b__echo', arguments: { text: 'modern' } })).to.deep.equal({
          content: [{ type: 'text', text: 'b: modern' }],
        });
      } finally {
        await modern.close();
      }
      const none = (await bridge.setServers({}).catch((err: Error) => err)) as Error;
      expect(none.message).to.match(/a gateway needs a server/);
      const clash = (await bridge.setServers({ a: PEER('a'), a__x: PEER('x') }).catch((err: Error) => err)) as Error;
      expect(clash.message).to.match(/servers "a" and "a__x" can expose one name/);
      expect(await tools()).to.deep.equal(['a__echo', 'b__echo']);
    } finally {
      await c.close();
      await bridge.close();
    }
  });

  it('setServers() of one stdio server served as it is: a changed entry is the next sessions’, other servers refused', async () => {
    const bridge = await serve(PEER('one', { PEER_PAGE: '100' }) as StdioServerConfig, { port: 0, log: () => undefined });
    try {
      const call = async (): Promise<unknown> => {
        const c = await connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2025-11-25' });
        try {
          return ((await c.request('tools/list', {})) as { tools: unknown[] }).tools.length;
        } finally {
          await c.close();
        }
      };
      const first = await call();
      const refused = (await bridge.setServers({ one: PEER('one'), two: PEER('two') }).catch((err: Error) => err)) as Error;
      expect(refused.message).to.match(/without a gateway: restart it/);
      expect(await bridge.setServers({ one: PEER('one', { PEER_PAGE: '100', PEER_EXTRA: '3' }) })).to.deep.equal({
        added: [],
        removed: [],
        changed: ['one'],
      });
      expect(await call()).to.equal((first as number) + 3);
    } finally {
      await bridge.close();
    }
  });
});

describe('serve --share: one stdio server, one child for every session', function () {
  this.timeout(30_000);

  it('runs the server once for three sessions, its names as they are; without it, a child each', async () => {
    const DEMO_SERVER = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
    for (const share of [true, false]) {
      const log: string[] = [];
      const bridge = await serve(DEMO_SERVER, { port: 0, share, log: (line) => log.push(line) });
      const clients = await Promise.all([1, 2, 3].map(() => connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2025-11-25' })));
      try {
        for (const [i, c] of clients.entries())
          expect(await c.request('tools/call', { name: 'echo', arguments: { text: `session ${i}` } })).to.deep.equal({
            content: [{ type: 'text', text: `session ${i}` }],
          });
        const pids = new Set(log.flatMap((l) => [...l.matchAll(/(?:server pid|started \(pid) (\d+)/g)].map((m) => m[1])));
        expect(pids.size, share ? 'shared' : 'a child each').to.equal(share ? 1 : 3);
      } finally {
        await Promise.all(clients.map((c) => c.close()));
        await bridge.close();
      }
    }
  });
});
