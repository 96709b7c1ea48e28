import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { StreamChannel } from '../../lib/client/channel.js';
import { type Connection, connectOver, type FrameTrace, type RpcError } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { cutProxy } from '../helpers/cut-proxy.js';
import { startEverything } from '../helpers/everything-http.js';
import { ROOT } from '../helpers/fixtures.js';
import { rejection } from '../helpers/rejection.js';
import { sdk2Http } from '../helpers/sdk2.js';
import { sdkServer } from '../helpers/sdk-http-server.js';
import { teardown } from '../helpers/teardown.js';
import { until } from '../helpers/poll.js';

const server = (name: string, ...args: string[]) => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/${name}.js`, ...args] });
// Its own env entry makes it a server of its own for the era cache, whatever other test files connected to.
const EVERYTHING = {
  command: process.execPath,
  args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'],
  env: { MCP_FRAME_ERA_TEST: '1' },
};

/** connect() with every frame's direction and preview kept. */
async function traced(
  entry: Parameters<typeof connect>[0],
  options: Parameters<typeof connect>[1] = {},
): Promise<{ c: Connection; frames: FrameTrace[] }> {
  const frames: FrameTrace[] = [];
  const c = await connect(entry, { ...options, onSpawn: (conn) => conn.on('frame', (f: FrameTrace) => frames.push(f)) });
  return { c, frames };
}

const methods = (frames: FrameTrace[]): string[] =>
  frames.filter((f) => f.direction === 'send').map((f) => /"method":"([^"]+)"/.exec(f.preview)?.[1] ?? '(answer)');

describe('protocol eras over stdio', function () {
  this.timeout(30_000);
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  for (const era of ['modern', 'dual'] as const) {
    it(`speaks 2026-07-28 to a ${era === 'modern' ? 'modern-only' : 'dual-era'} SDK 2.x server, after one probe round trip`, async () => {
      const { c, frames } = await traced(server('sdk2', era), { name: `sdk2-${era}` });
      open.push(c);
      expect(c.era).to.equal('modern');
      expect(c.protocolVersion).to.equal('2026-07-28');
      expect(c.initializeResult).to.deep.include({ supportedVersions: ['2026-07-28'] });
      expect(frames.map((f) => f.direction)).to.deep.equal(['send', 'receive']);
      expect(methods(frames)).to.deep.equal(['server/discover']);
      // The server checks each request's _meta; a progress token of the caller's own is kept beside it.
      const progress: number[] = [];
      c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
      const result = await c.request('tools/call', { name: 'steps', arguments: { n: 3, ms: 5 }, _meta: { progressToken: 'p1' } });
      // `resultType: "complete"` is lifted: a result has the same shape from either era.
      expect(result).to.deep.include({ content: [{ type: 'text', text: '3 steps' }] });
      expect(result).not.to.have.property('resultType');
      expect(progress).to.deep.equal([1, 2, 3]);
      expect(methods(frames).slice(1)).to.deep.equal(['tools/call']);
      expect(frames.find((f) => f.direction === 'send' && f.preview.includes('tools/call'))!.preview).to.not.include('initialize');
    });
  }

  it('falls back to initialize on a legacy server that refuses the probe (server-everything)', async () => {
    const { c, frames } = await traced(EVERYTHING);
    open.push(c);
    expect(c.era).to.equal('legacy');
    expect(c.protocolVersion).to.equal('2025-11-25');
    expect(methods(frames)).to.deep.equal(['server/discover', 'initialize', 'notifications/initialized']);
    expect(await c.request('tools/call', { name: 'echo', arguments: { message: 'legacy ü' } })).to.deep.include({
      content: [{ type: 'text', text: 'Echo: legacy ü' }],
    });
  });

  it('takes a server that never answers the probe as legacy, within the probe timeout plus the handshake', async () => {
    const started = performance.now();
    const c = await connect(server('ignores-probe'), { probeTimeoutMs: 300 });
    open.push(c);
    const took = performance.now() - started;
    expect(c.era).to.equal('legacy');
    expect(took).to.be.at.least(290).and.lessThan(2000);
    expect(await c.request('tools/call', { name: 'x' })).to.deep.equal({ content: [{ type: 'text', text: 'legacy' }] });
  });

  it('asks a dual-era server for a fixed legacy revision with no probe', async () => {
    const { c, frames } = await traced(server('sdk2', 'dual'), { protocolVersion: '2025-06-18' });
    open.push(c);
    expect(c.era).to.equal('legacy');
    expect(c.protocolVersion).to.equal('2025-06-18');
    expect(methods(frames)[0]).to.equal('initialize');
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'old' } })).to.deep.include({ content: [{ type: 'text', text: 'old' }] });
  });

  it('retries once with a version from the server list after UnsupportedProtocolVersion', async () => {
    // A revision from the future: the server names what it speaks, and the client speaks that too.
    const { c, frames } = await traced(server('sdk2', 'modern'), { protocolVersion: '2027-01-01' });
    open.push(c);
    expect(c.era).to.equal('modern');
    expect(c.protocolVersion).to.equal('2026-07-28');
    expect(methods(frames)).to.deep.equal(['server/discover', 'server/discover']);
    expect(frames[1]!.preview).to.include('-32022');
  });

  it('fails with UNSUPPORTED_VERSION, naming both sides, when no version is shared', async () => {
    // A peer that speaks only a revision this client does not.
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    toServer.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const msg = JSON.parse(line) as { id?: number };
        if (msg.id === undefined) continue;
        const error = { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2030-01-01'], requested: '2026-07-28' } };
        toClient.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, error })}\n`);
      }
    });
    const err = await rejection<ConnectionError>(connectOver(new StreamChannel(toClient, toServer, { name: 'future' })));
    expect(err.code).to.equal('UNSUPPORTED_VERSION');
    expect(err.message).to.include('2030-01-01').and.to.include('2026-07-28');
  });

  it('fails a request with UNSUPPORTED_VERSION when the server stops speaking the version in use', async () => {
    // Discover succeeds; the next request is refused with a list this client shares nothing with.
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    toServer.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const msg = JSON.parse(line) as { id?: number; method: string };
        if (msg.id === undefined) continue;
        const answer =
          msg.method === 'server/discover'
            ? { result: { supportedVersions: ['2026-07-28'], capabilities: {} } }
            : { error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2031-01-01'] } } };
        toClient.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...answer })}\n`);
      }
    });
    const c = await connectOver(new StreamChannel(toClient, toServer, { name: 'moving' }));
    open.push(c);
    expect(c.era).to.equal('modern');
    const err = await rejection<ConnectionError>(c.request('tools/list'));
    expect(err.code).to.equal('UNSUPPORTED_VERSION');
    expect(err.message).to.include('2031-01-01').and.to.include('2026-07-28');
  });

  /** A peer that answers -32022 listing 2026-07-28 (the version just tried) to the requests `refuses` picks (by their 1-based number), and every request kept. */
  function refusing(refuses: (n: number, method: string) => boolean): { channel: StreamChannel; seen: Array<{ method: string; version: unknown }> } {
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const seen: Array<{ method: string; version: unknown }> = [];
    toServer.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const msg = JSON.parse(line) as { id?: number; method: string; params?: { _meta?: Record<string, unknown> } };
        if (msg.id === undefined) continue;
        seen.push({ method: msg.method, version: msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'] });
        const answer = refuses(seen.length, msg.method)
          ? { error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2026-07-28' } } }
          : msg.method === 'server/discover'
            ? { result: { supportedVersions: ['2026-07-28'], capabilities: { tools: {} } } }
            : { result: { tools: [] } };
        toClient.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...answer })}\n`);
      }
    });
    return { channel: new StreamChannel(toClient, toServer, { name: 'refusing' }), seen };
  }

  it('retries the probe once with the version the -32022 lists, even the one just tried', async () => {
    const { channel, seen } = refusing((n) => n === 1);
    const c = await connectOver(channel);
    open.push(c);
    expect(c.era).to.equal('modern');
    expect(seen).to.deep.equal([
      { method: 'server/discover', version: '2026-07-28' },
      { method: 'server/discover', version: '2026-07-28' },
    ]);
  });

  it('retries a request once after a -32022 that lists the version in use, and only once', async () => {
    // Request 2 (the first tools/list) is refused once: the retry gets the answer.
    const once = refusing((n) => n === 2);
    const c = await connectOver(once.channel);
    open.push(c);
    expect(await c.request('tools/list')).to.deep.equal({ tools: [] });
    expect(once.seen.map((s) => s.method)).to.deep.equal(['server/discover', 'tools/list', 'tools/list']);
    // Refused every time: one retry, then the error naming both sides.
    const always = refusing((_n, method) => method === 'tools/list');
    const d = await connectOver(always.channel);
    open.push(d);
    const err = await rejection<RpcError>(d.request('tools/list'));
    expect(err.code).to.equal(-32022);
    expect(always.seen.map((s) => s.method)).to.deep.equal(['server/discover', 'tools/list', 'tools/list']);
  });

  it('keeps what it learnt of a server: the second connection sends no probe', async () => {
    const first = await traced(EVERYTHING);
    open.push(first.c);
    const second = await traced(EVERYTHING);
    open.push(second.c);
    expect(methods(second.frames)[0]).to.equal('initialize');
    expect(second.c.era).to.equal('legacy');
  });
});

describe('protocol eras over HTTP', function () {
  this.timeout(30_000);
  const opened = teardown();
  afterEach(() => opened.run());

  for (const era of ['modern', 'dual'] as const) {
    it(`speaks 2026-07-28 to a ${era === 'modern' ? 'modern-only' : 'dual-era'} SDK 2.x server with the request headers, no session and no GET`, async () => {
      const sdk2 = opened.add(await sdk2Http(era));
      const c = opened.add(await connect({ type: 'http', url: sdk2.url }));
      expect(c.era).to.equal('modern');
      expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'ünï 👋' } })).to.deep.include({
        content: [{ type: 'text', text: 'ünï 👋' }],
      });
      const posts = sdk2.seen.filter((s) => s.method === 'POST');
      expect(posts.map((s) => (JSON.parse(s.body) as { method: string }).method)).to.deep.equal(['server/discover', 'tools/call']);
      expect(posts[0]!.headers).to.include({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' });
      expect(posts[1]!.headers).to.include({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' });
      expect(posts.every((s) => s.headers['mcp-session-id'] === undefined)).to.equal(true);
      expect(sdk2.seen.filter((s) => s.method !== 'POST')).to.deep.equal([]);
    });
  }

  it('mirrors names in Mcp-Name byte for byte, in the Base64 form where they are not plain ASCII', async () => {
    const sdk2 = opened.add(await sdk2Http('modern'));
    const c = opened.add(await connect({ type: 'http', url: sdk2.url }));
    for (const name of ['wëather', ' padded ', '=?base64?literal?=']) await c.request('tools/call', { name, arguments: {} }).catch(() => undefined);
    await c.request('resources/read', { uri: 'file:///tmp/a b.txt' }).catch(() => undefined);
    await c.request('prompts/get', { name: 'plain_name' }).catch(() => undefined);
    const names = sdk2.seen.slice(-5).map((s) => [s.headers['mcp-method'], s.headers['mcp-name']]);
    expect(names).to.deep.equal([
      ['tools/call', `=?base64?${Buffer.from('wëather').toString('base64')}?=`],
      ['tools/call', '=?base64?IHBhZGRlZCA=?='],
      ['tools/call', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
      ['resources/read', 'file:///tmp/a b.txt'],
      ['prompts/get', 'plain_name'],
    ]);
  });

  it('falls back to initialize on a legacy Streamable HTTP server (the 1.x SDK)', async () => {
    const legacy = opened.add(await sdkServer());
    const c = opened.add(await connect({ type: 'http', url: legacy.url }));
    expect(c.era).to.equal('legacy');
    expect(c.protocolVersion).to.equal('2025-11-25');
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'x' } })).to.deep.include({ content: [{ type: 'text', text: 'x' }] });
  });

  it('falls back further to the deprecated HTTP+SSE transport when both eras get a 4xx', async () => {
    const everything = await startEverything('sse');
    opened.add({ close: () => everything.stop() });
    const c = opened.add(await connect({ type: 'http', url: everything.url }));
    expect(c.era).to.equal('legacy');
    expect(await c.request('tools/call', { name: 'echo', arguments: { message: 'sse' } })).to.deep.include({
      content: [{ type: 'text', text: 'Echo: sse' }],
    });
  });

  it('cancels a modern request by closing its stream, with no notifications/cancelled', async () => {
    const sdk2 = opened.add(await sdk2Http('modern'));
    const c = opened.add(await connect({ type: 'http', url: sdk2.url }));
    const abort = new AbortController();
    const progress: number[] = [];
    c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
    const call = c.request('tools/call', { name: 'steps', arguments: { n: 20, ms: 30 }, _meta: { progressToken: 'c' } }, { signal: abort.signal });
    await until(1000, 'the first progress', () => progress.length >= 1, 5);
    abort.abort();
    expect((await rejection<ConnectionError>(call)).code).to.equal('ABORTED');
    const seenBefore = progress.length;
    await new Promise((r) => setTimeout(r, 150));
    expect(progress.length).to.equal(seenBefore);
    expect(sdk2.seen.map((s) => s.headers['mcp-method'])).to.deep.equal(['server/discover', 'tools/call']);
  });

  it('sends a request again under a new id when its modern stream breaks, and delivers one answer (a tool annotated idempotent)', async () => {
    const sdk2 = opened.add(await sdk2Http('modern'));
    const proxy = opened.add(await cutProxy(sdk2.port));
    const c = opened.add(
      await connect({ type: 'http', url: `http://127.0.0.1:${proxy.port}/mcp` }, { reconnect: { initialDelayMs: 10, maxAttempts: 3 } }),
    );
    await c.request('tools/list');
    const progress: number[] = [];
    c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
    let answers = 0;
    c.on('unmatched', () => answers++);
    const result = c.request('tools/call', { name: 'steps', arguments: { n: 4, ms: 60 }, _meta: { progressToken: 't' } });
    await until(1000, 'two progress notifications', () => progress.length >= 2, 5);
    proxy.cut();
    expect(await result).to.deep.include({ content: [{ type: 'text', text: '4 steps' }] });
    const calls = sdk2.seen.filter((s) => s.headers['mcp-method'] === 'tools/call').map((s) => (JSON.parse(s.body) as { id: unknown }).id);
    expect(calls).to.have.length(2);
    expect(calls[1]).to.not.equal(calls[0]);
    expect(answers).to.equal(0);
    // The first attempt's progress, then the second's from the start.
    expect(progress.slice(-4)).to.deep.equal([1, 2, 3, 4]);
  });

  it('fails a modern tools/call whose stream breaks with STREAM_LOST, saying it may have run, and never sends it again', async () => {
    const sdk2 = opened.add(await sdk2Http('modern'));
    const proxy = opened.add(await cutProxy(sdk2.port));
    const c = opened.add(
      await connect({ type: 'http', url: `http://127.0.0.1:${proxy.port}/mcp` }, { reconnect: { initialDelayMs: 10, maxAttempts: 8 } }),
    );
    await c.request('tools/list');
    const progress: number[] = [];
    c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
    const result = c.request('tools/call', { name: 'steps-once', arguments: { n: 4, ms: 60 }, _meta: { progressToken: 't' } });
    await until(1000, 'the first progress', () => progress.length >= 1, 5);
    proxy.cut();
    const err = await rejection<ConnectionError>(result);
    expect(err.code).to.equal('STREAM_LOST');
    expect(err.message).to.include('may have run');
    await new Promise((r) => setTimeout(r, 300));
    const calls = sdk2.seen.filter((s) => s.headers['mcp-method'] === 'tools/call');
    expect(calls).to.have.length(1);
    // The connection goes on.
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'after' } })).to.deep.include({
      content: [{ type: 'text', text: 'after' }],
    });
  });

  it("with reconnect.resend: 'all', sends any request again under a new id when its stream breaks, as the revision says", async () => {
    const sdk2 = opened.add(await sdk2Http('modern'));
    const proxy = opened.add(await cutProxy(sdk2.port));
    const c = opened.add(
      await connect(
        { type: 'http', url: `http://127.0.0.1:${proxy.port}/mcp` },
        { reconnect: { initialDelayMs: 10, maxAttempts: 8, resend: 'all' } },
      ),
    );
    await c.request('tools/list');
    const progress: number[] = [];
    c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
    const result = c.request('tools/call', { name: 'steps-once', arguments: { n: 4, ms: 60 }, _meta: { progressToken: 't' } });
    await until(1000, 'the first progress', () => progress.length >= 1, 5);
    proxy.cut();
    expect(await result).to.deep.include({ content: [{ type: 'text', text: '4 steps' }] });
    const calls = sdk2.seen.filter((s) => s.headers['mcp-method'] === 'tools/call').map((s) => (JSON.parse(s.body) as { id: unknown }).id);
    expect(calls).to.have.length(2);
    expect(calls[0]).to.not.equal(calls[1]);
  });
});
