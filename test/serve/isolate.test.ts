// --isolate <server>: that server runs once per session of the initialize era (it keeps state per client), and
// every other server behind the gateway still runs once for every session of both eras. Real children: steps.ts
// (its `pid` tool says which process answered) and bank.ts (it lists tools, asks questions, logs, reports progress).
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import type { ServerConfig, StdioServerConfig } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import type { Connection } from '../../lib/client/connection.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { within } from '../helpers/poll.js';
import { STEPS } from '../helpers/served.js';

type Json = Record<string, unknown>;

const BANK = (name: string): StdioServerConfig => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/bank.js`, name] });

/** The text of a tool's result. */
const textOf = (result: unknown): string => (((result as Json).content as Json[])[0]!.text as string) ?? '';

/** How many times each server started, by the gateway's log. */
function starts(log: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of log) for (const m of line.matchAll(/server "([^"]+)" started \(pid \d+\)/g)) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  return counts;
}

describe('serve: --isolate gives one server a child per session, and the others run once', function () {
  this.timeout(60_000);
  let g: ServeHandle | undefined;
  let log: string[] = [];
  const clients: Connection[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await g?.close();
    g = undefined;
  });

  async function start(servers: Record<string, ServerConfig>, options: ServeOptions): Promise<string> {
    log = [];
    g = await serve(servers, { log: (line) => log.push(line), ...options });
    return g.url!;
  }

  async function session(url: string, options: Parameters<typeof connect>[1] = {}): Promise<Connection> {
    const c = await connect({ type: 'http', url }, { protocolVersion: '2025-11-25', ...options });
    clients.push(c);
    return c;
  }

  it('runs the isolated server once per session, and each other server once for every session of both eras', async () => {
    const url = await start({ a: STEPS, b: STEPS, c: STEPS }, { isolate: ['a'] });
    const sessions = [await session(url), await session(url), await session(url)];
    const modern = await connect({ type: 'http', url }, { protocolVersion: '2026-07-28' });
    clients.push(modern);
    const pids = async (c: Connection): Promise<string[]> =>
      Promise.all(['a', 'b', 'c'].map(async (s) => textOf(await c.request('tools/call', { name: `${s}__pid`, arguments: {} }))));
    const seen = await Promise.all([...sessions, modern].map(pids));
    const [aPids, bPids, cPids] = [0, 1, 2].map((i) => seen.map((row) => row[i]!)) as [string[], string[], string[]];
    expect(new Set(aPids).size, `a's pids ${aPids}`).to.equal(4);
    expect(new Set(bPids).size, `b's pids ${bPids}`).to.equal(1);
    expect(new Set(cPids).size, `c's pids ${cPids}`).to.equal(1);
    expect(aPids).to.not.include(bPids[0]);
    expect(Object.fromEntries(starts(log))).to.deep.equal({ a: 4, b: 1, c: 1 });
    // A session that ends takes its own "a" with it; the shared servers go on for the others.
    await sessions[0]!.close();
    expect(textOf(await sessions[1]!.request('tools/call', { name: 'b__pid', arguments: {} }))).to.equal(bPids[0]);
  });

  it('lists the same names as without isolation, and keeps each session’s questions, logs and progress its own', async () => {
    const url = await start({ mine: BANK('mine'), bank: BANK('bank'), vault: BANK('vault') }, { isolate: ['mine'] });
    const asked: string[][] = [[], []];
    const heard: Json[][] = [[], []];
    const made = await Promise.all(
      [0, 1].map((i) =>
        session(url, {
          onSpawn: (conn) =>
            conn.onRequest('elicitation/create', (p) => {
              asked[i]!.push(String((p as Json).message));
              return { action: 'accept', content: { who: i } };
            }),
        }),
      ),
    );
    for (const [i, c] of made.entries()) c.on('notification', (msg: Json) => heard[i]!.push(msg));
    const [one, two] = made as [Connection, Connection];
    const names = ((await one.request('tools/list', {})) as { tools: Json[] }).tools.map((t) => String(t.name));
    expect(names).to.include.members(['mine__ask', 'mine__steps', 'bank__ask', 'bank__chatty', 'vault__ask', 'vault__steps']);
    expect(
      names.every((n) => /^(mine|bank|vault)__/.test(n)),
      String(names),
    ).to.equal(true);
    // Both sessions ask shared servers at once: each question reaches the session whose call asked it.
    const [a1, a2] = await Promise.all([
      one.request('tools/call', { name: 'bank__ask', arguments: {} }),
      two.request('tools/call', { name: 'vault__ask', arguments: {} }),
    ]);
    expect(textOf(a1)).to.equal('bank was told {"action":"accept","content":{"who":0}}');
    expect(textOf(a2)).to.equal('vault was told {"action":"accept","content":{"who":1}}');
    expect(textOf(await two.request('tools/call', { name: 'bank__ask', arguments: {} }))).to.equal(
      'bank was told {"action":"accept","content":{"who":1}}',
    );
    // And its own server's.
    expect(textOf(await two.request('tools/call', { name: 'mine__ask', arguments: {} }))).to.equal(
      'mine was told {"action":"accept","content":{"who":1}}',
    );
    expect(asked).to.deep.equal([['bank asks'], ['vault asks', 'bank asks', 'mine asks']]);
    // A shared server's log and progress during one session's call reach that session only.
    const progress: unknown[] = [];
    await Promise.all([
      one.request('tools/call', { name: 'bank__chatty', arguments: { secret: 'one-only' } }),
      two.request('tools/call', { name: 'vault__steps', arguments: {} }, { onProgress: (p) => progress.push(p.progress) }),
    ]);
    expect(progress).to.deep.equal([1, 2, 3]);
    const logs = (i: number): unknown[] => heard[i]!.filter((m) => m.method === 'notifications/message').map((m) => (m.params as Json).data);
    expect(logs(0)).to.deep.equal(['one-only']);
    expect(logs(1)).to.deep.equal([]);
    expect(Object.fromEntries(starts(log))).to.deep.equal({ mine: 2, bank: 1, vault: 1 });
  });

  it('serves an MCP SDK 1.x host an isolated session whose calls reach both kinds of server', async () => {
    const url = await start({ a: STEPS, b: STEPS }, { isolate: ['b'] });
    const hosts = [new Client1({ name: 'host-1', version: '1.0.0' }), new Client1({ name: 'host-2', version: '1.0.0' })];
    try {
      for (const host of hosts) await host.connect(new StreamableHTTPClientTransport1(new URL(url)));
      const pids = await Promise.all(
        hosts.map(async (host) => [
          textOf(await host.callTool({ name: 'a__pid', arguments: {} })),
          textOf(await host.callTool({ name: 'b__pid', arguments: {} })),
        ]),
      );
      expect(pids[0]![0]).to.equal(pids[1]![0]);
      expect(pids[0]![1]).to.not.equal(pids[1]![1]);
      expect(textOf(await hosts[1]!.callTool({ name: 'a__echo', arguments: { text: 'shared ✓' } }))).to.equal('shared ✓');
    } finally {
      await Promise.all(hosts.map((h) => h.close()));
    }
  });

  it('applies a reload to the shared servers behind an isolated session that is open', async () => {
    const url = await start({ a: STEPS, b: STEPS }, { isolate: ['a'] });
    const c = await session(url);
    const changed: string[] = [];
    c.on('notification', (msg: Json) => changed.push(String(msg.method)));
    const before = textOf(await c.request('tools/call', { name: 'b__pid', arguments: {} }));
    await g!.setServers({ a: STEPS, b: STEPS, c: STEPS });
    await within(5000, 'a list change', () => changed.includes('notifications/tools/list_changed') || undefined);
    const echoed = await within(5000, 'server c up', () =>
      c.request('tools/call', { name: 'c__echo', arguments: { text: 'new' } }).then(textOf, () => undefined),
    );
    expect(echoed).to.equal('new');
    expect(textOf(await c.request('tools/call', { name: 'b__pid', arguments: {} }))).to.equal(before);
  });
});
