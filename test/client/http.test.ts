import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Connection, FrameTrace } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import type { FrameError } from '../../lib/errors.js';
import { ROOT } from '../helpers/fixtures.js';
import { cli } from '../helpers/run.js';
import { type Faults, FaultServer } from '../helpers/http-server.js';
import { rejection } from '../helpers/rejection.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../helpers/poll.js';

const SECRET = 'Bearer sk-test-secret-0123456789';
const fast = { initialDelayMs: 20, maxDelayMs: 200, factor: 2, maxAttempts: 4 };

describe('connect over Streamable HTTP (a fault-injection server on 127.0.0.1)', () => {
  let server: FaultServer;
  let url: string;
  const open: Connection[] = [];
  const outputs: string[] = [];

  async function start(faults: Faults = {}): Promise<void> {
    server = new FaultServer(faults);
    url = await server.listen();
  }

  async function client(options: Parameters<typeof connect>[1] = {}): Promise<Connection> {
    const c = await connect({ type: 'http', url, headers: { Authorization: SECRET } }, { name: 'faulty', reconnect: fast, ...options });
    open.push(c);
    // Everything a host might print: traces, bad frames, reconnections. None of it may hold the secret.
    c.on('frame', (f: FrameTrace) => outputs.push(f.preview));
    c.on('invalid', (e: FrameError) => outputs.push(e.message, e.preview));
    return c;
  }

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    await server.close();
    expect(outputs.join('\n')).to.not.include('sk-test-secret');
    outputs.length = 0;
  });

  /** A rejection, with its message and stack kept among the outputs checked for the secret. */
  const failed = async (promise: Promise<unknown>): Promise<Error> => {
    const err = await rejection(promise);
    outputs.push(err.message, String(err.stack), JSON.stringify(err));
    return err;
  };

  const echo = (c: Connection, text: string, steps = 0) => c.request('tools/call', { name: 'echo', arguments: { text, steps } });

  it('performs the handshake, sends the headers the spec asks for, and opens the GET stream', async () => {
    await start({ priming: true });
    const c = await client();
    expect(c.initializeResult).to.deep.include({ protocolVersion: '2025-11-25' });
    expect(await echo(c, 'ünï 👋')).to.deep.equal({ content: [{ type: 'text', text: 'ünï 👋' }] });
    await until(500, 'the GET stream opened', () => server.seen.some((s) => s.method === 'GET'), 10);
    const posts = server.seen.filter((s) => s.method === 'POST');
    // First the era probe, sent the modern way; the server refuses it (-32601), so the handshake follows.
    expect(posts.map((s) => s.body?.method)).to.deep.equal(['server/discover', 'initialize', 'notifications/initialized', 'tools/call']);
    for (const s of server.seen) expect(s.headers.authorization).to.equal(SECRET);
    for (const s of posts) {
      expect(s.headers.accept).to.equal('application/json, text/event-stream');
      expect(s.headers['content-type']).to.equal('application/json');
    }
    expect(posts[0]!.headers).to.include({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' });
    expect(posts[1]!.headers['mcp-protocol-version']).to.equal(undefined);
    expect(posts[1]!.headers['mcp-method']).to.equal(undefined);
    expect(posts[2]!.headers['mcp-protocol-version']).to.equal('2025-11-25');
    expect(posts[3]!.headers['mcp-session-id']).to.be.a('string').and.to.equal(posts[2]!.headers['mcp-session-id']);
    const get = server.seen.find((s) => s.method === 'GET');
    expect(get?.headers.accept).to.equal('text/event-stream');
    server.notify('notifications/tools/list_changed', {});
    const note = await new Promise((resolve) => c.once('notification', resolve));
    expect(note).to.deep.include({ method: 'notifications/tools/list_changed' });
  });

  it('ends the handshake once the GET stream is answered: no request after connect() races it', async () => {
    await start({ priming: true, delayGetMs: 300 });
    const c = await client();
    await echo(c, 'after the GET');
    const call = server.seen.find((s) => s.body?.method === 'tools/call')!;
    expect(server.getAnsweredAt).to.have.length(1);
    expect(call.at).to.be.at.least(server.getAnsweredAt[0]!);
  });

  for (const [label, body, code] of [
    ['not JSON', '{"jsonrpc":"2.0", oops', 'INVALID_JSON'],
    ['nested too deep', `{"jsonrpc":"2.0","id":2,"result":${'['.repeat(2000)}${']'.repeat(2000)}}`, 'INVALID_MESSAGE'],
  ] as const) {
    it(`fails a request at once when its JSON answer is ${label}, and reports it`, async () => {
      await start({ json: true, rawJsonBody: body });
      const c = await client();
      const invalid: FrameError[] = [];
      c.on('invalid', (e: FrameError) => invalid.push(e));
      const err = (await failed(c.request('ping', {}, { timeoutMs: 20_000 }))) as ConnectionError;
      expect(err.code).to.equal('INVALID_RESPONSE');
      expect(invalid.map((e) => e.code)).to.deep.equal([code]);
    });
  }

  it('takes a large answer from its event stream, traced or not (a trace has the frame whole)', async () => {
    await start();
    const text = `${'ü 東京 '.repeat(100_000)}${'QUJD'.repeat(300_000)}`;
    const traced = await client();
    const frames: FrameTrace[] = [];
    traced.on('frame', (f: FrameTrace) => frames.push(f));
    expect(await echo(traced, text)).to.deep.equal({ content: [{ type: 'text', text }] });
    const received = frames.filter((f) => f.direction === 'receive').map((f) => f.bytes);
    expect(Math.max(...received)).to.be.above(Buffer.byteLength(text));
    // No trace: the frame is parsed from its bytes, never made into text.
    const plain = await connect({ type: 'http', url }, { name: 'plain', reconnect: fast });
    open.push(plain);
    expect(await echo(plain, text)).to.deep.equal({ content: [{ type: 'text', text }] });
  });

  it('takes answers as one JSON body too', async () => {
    await start({ json: true });
    const c = await client();
    expect(await echo(c, 'json')).to.deep.equal({ content: [{ type: 'text', text: 'json' }] });
  });

  for (const faults of [
    { dropAfterEvents: 3, priming: true },
    { dropAfterEvents: 2, priming: true, replayDuplicate: true },
    { dropAfterEvents: 4, priming: true, splitBytes: true, retryMs: 30 },
  ] as Faults[]) {
    it(`delivers every message exactly once, in order, across a dropped stream (${JSON.stringify(faults)})`, async () => {
      await start(faults);
      const c = await client();
      const progress: number[] = [];
      c.onNotification('notifications/progress', (p) => progress.push((p as { progress: number }).progress));
      const reconnects: unknown[] = [];
      c.on('reconnecting', (r) => reconnects.push(r));
      expect(await echo(c, 'after the drop', 6)).to.deep.equal({ content: [{ type: 'text', text: 'after the drop' }] });
      expect(progress).to.deep.equal([1, 2, 3, 4, 5, 6]);
      expect(reconnects.length).to.be.greaterThan(0);
      const resume = server.seen.find((s) => s.method === 'GET' && s.headers['last-event-id'] !== undefined);
      expect(resume?.headers['last-event-id']).to.match(/^s\d+\/\d+$/);
    });
  }

  it("waits the server's retry: before resuming", async () => {
    await start({ dropAfterEvents: 2, priming: true, retryMs: 300 });
    const c = await client();
    const waits: number[] = [];
    c.on('reconnecting', (r: { waitMs: number }) => waits.push(r.waitMs));
    await echo(c, 'x', 3);
    const post = server.seen.find((s) => s.body?.method === 'tools/call')!;
    const resume = server.seen.find((s) => s.headers['last-event-id'] !== undefined)!;
    expect(waits[0]).to.be.within(300, 360);
    expect(resume.at - post.at).to.be.at.least(290);
  });

  it('backs off by the factor up to the cap, then gives up after maxAttempts and closes', async () => {
    await start({ getUnavailable: true });
    const waits: number[] = [];
    // From the start: the first GET is refused before connect() resolves (the handshake waits for its answer).
    const c = await client({ onSpawn: (conn) => conn.on('reconnecting', (r: { waitMs: number }) => waits.push(r.waitMs)) });
    const exited = new Promise((resolve) => c.once('exit', resolve));
    await exited;
    expect(waits).to.have.length(4);
    const [a, b, d, e] = waits as [number, number, number, number];
    expect(a).to.be.within(20, 24);
    expect(b).to.be.within(40, 48);
    expect(d).to.be.within(80, 96);
    expect(e).to.be.within(160, 200);
    const err = (await failed(c.request('ping'))) as ConnectionError;
    expect(err.code).to.be.oneOf(['GAVE_UP', 'CLOSED']);
  });

  it('rejects a request at once with STREAM_LOST when its stream breaks before any event id', async () => {
    await start({ dropAfterEvents: 1, noIds: true });
    const c = await client();
    const started = Date.now();
    const err = (await failed(
      c.request('tools/call', { name: 'echo', arguments: { text: 'x', steps: 3 } }, { timeoutMs: 30_000 }),
    )) as ConnectionError;
    expect(err.code).to.equal('STREAM_LOST');
    expect(Date.now() - started).to.be.lessThan(1000);
  });

  it('starts a new session after a 404: the request in flight fails with SESSION_EXPIRED, the next one works', async () => {
    await start({ json: true });
    const c = await client();
    const first = server.seen.find((s) => s.body?.method === 'tools/call' || s.body?.method === 'notifications/initialized')!.headers[
      'mcp-session-id'
    ];
    server.expireSessions();
    const err = (await failed(c.request('ping'))) as ConnectionError;
    expect(err.code).to.equal('SESSION_EXPIRED');
    expect(await c.request('ping')).to.deep.equal({});
    const last = server.seen.filter((s) => s.body?.method === 'ping').at(-1)!;
    expect(last.headers['mcp-session-id']).to.be.a('string').and.to.not.equal(first);
    expect(server.seen.filter((s) => s.body?.method === 'ping')).to.have.length(2);
  });

  it('drops the resumption a stream of the old session had scheduled when the session is renewed', async () => {
    // The GET stream's first attempt gets 503; its resumption waits 300 ms. Meanwhile the session expires and
    // a new one opens its own GET stream: the old timer must not open a second one in the new session.
    await start({ json: true, getStatuses: [503] });
    const c = await client({ reconnect: { ...fast, initialDelayMs: 300, maxDelayMs: 300 } });
    await until(500, 'the GET stream opened', () => server.seen.some((s) => s.method === 'GET'), 5);
    server.expireSessions();
    expect(((await failed(c.request('ping'))) as ConnectionError).code).to.equal('SESSION_EXPIRED');
    await new Promise((r) => setTimeout(r, 600));
    const renewed = server.seen.filter((s) => s.body?.method === 'initialize').at(-1)!;
    const session = server.seen.find((s) => s.at >= renewed.at && typeof s.headers['mcp-session-id'] === 'string')!.headers['mcp-session-id'];
    const gets = server.seen.filter((s) => s.method === 'GET' && s.headers['mcp-session-id'] === session);
    expect(gets).to.have.length(1);
    expect(await c.request('ping')).to.deep.equal({});
  });

  it('takes a 409 on the GET stream as transient, and opens it after backing off', async () => {
    await start({ getStatuses: [409, 409] });
    const c = await client();
    await until(1000, 'three GETs', () => server.seen.filter((s) => s.method === 'GET').length >= 3, 10);
    await new Promise((r) => setTimeout(r, 30));
    server.notify('notifications/message', { level: 'info', data: 'hello' });
    const note = await new Promise((resolve) => c.once('notification', resolve));
    expect(note).to.deep.include({ method: 'notifications/message' });
  });

  it('treats a silent stream as broken and resumes it, failing nothing', async () => {
    await start({ stallGet: true });
    const c = await client({ idleTimeoutMs: 150 });
    const reason = await new Promise<string>((resolve) => c.once('reconnecting', (r: { reason: string }) => resolve(r.reason)));
    expect(reason).to.match(/no bytes for 150 ms|no answer for 150 ms|closed|aborted/);
    expect(await c.request('ping')).to.deep.equal({});
  });

  it('reports an HTTP failure with its status and a redacted preview of the body, and no header value', async () => {
    await start();
    const other = new FaultServer();
    const badUrl = (await other.listen()).replace('/mcp', '/nope');
    await other.close();
    const err = (await failed(connect({ type: 'http', url: badUrl, headers: { Authorization: SECRET } }, { reconnect: false }))) as ConnectionError;
    expect(err.code).to.equal('HTTP_STATUS');
    expect(`${err.message} ${String(err.stack)}`).to.not.include('sk-test-secret');
  });

  it('mcp-frame call --trace prints the reconnections, and never the configured headers', async () => {
    await start({ dropAfterEvents: 2, priming: true });
    const dir = tempDir('http');
    const config = join(dir, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { faulty: { url, headers: { Authorization: SECRET } } } }));
    const r = await cli(['call', 'faulty', 'tools/call', '{"name":"echo","arguments":{"text":"hi","steps":3}}', '--config', config, '--trace']);
    expect(r.code, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout)).to.deep.equal({ content: [{ type: 'text', text: 'hi' }] });
    expect(r.stderr).to.match(/reconnecting to faulty \(attempt 1, in \d+ ms\)/);
    expect(r.stderr).to.match(/reconnected to faulty/);
    expect(r.stderr).to.not.include('sk-test-secret');
  });

  it('leaves no handle open after close: a script that connects, calls and closes exits by itself', async function () {
    this.timeout(15_000);
    await start({ priming: true, keepAliveMs: 50 });
    const script = `
      const { connect } = await import(${JSON.stringify(`${ROOT}dist/lib/client/index.js`)});
      const c = await connect({ type: 'http', url: ${JSON.stringify(url)} });
      await c.request('tools/call', { name: 'echo', arguments: { text: 'bye' } });
      await c.close();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const started = Date.now();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).to.equal(0);
    expect(Date.now() - started).to.be.lessThan(5000);
    expect(server.seen.some((s) => s.method === 'DELETE')).to.equal(true);
  });
});
