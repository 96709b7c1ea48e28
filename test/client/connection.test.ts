import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Connection, RpcError } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { FrameError } from '../../lib/errors.js';
import { ConnectionError } from '../../lib/client/errors.js';
import { ROOT } from '../helpers/fixtures.js';
import { rejection as rejectionOf } from '../helpers/rejection.js';
import { unprintable } from '../helpers/unprintable.js';
import { tempDir } from '../helpers/temp.js';
import { procStat } from '../helpers/processes.js';
import { until } from '../helpers/poll.js';

const rejection = (promise: Promise<unknown>): Promise<ConnectionError> => rejectionOf<ConnectionError>(promise);

const server = (name: string, ...args: string[]) => ({
  command: process.execPath,
  args: [fileURLToPath(new URL(`../helpers/servers/${name}.js`, import.meta.url)), ...args],
});
const demo = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };

/** Alive and not a zombie waiting to be reaped. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== 'Z';
}

function waitFor<T>(emitter: Connection, event: string, test: (value: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const on = (value: T): void => {
      if (!test(value)) return;
      emitter.off(event, on);
      resolve(value);
    };
    emitter.on(event, on);
  });
}

describe('connect and Connection', () => {
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });
  const track = (c: Connection): Connection => {
    open.push(c);
    return c;
  };

  describe('with the example server', () => {
    it('performs the handshake and keeps the initialize result', async () => {
      const c = track(await connect(demo));
      expect(c.initializeResult).to.deep.include({ protocolVersion: '2025-06-18', serverInfo: { name: 'mcp-frame-demo', version: '0.1.0' } });
      expect(c.pid).to.be.a('number');
    });

    it('calls tools and gets text back exactly', async () => {
      const c = track(await connect(demo));
      const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
      expect(tools.map((t) => t.name)).to.deep.equal(['echo', 'add', 'blob']);
      const text = 'line\nbreak \u2028 separator, emoji 👩‍👩‍👧 and "quotes" \\ backslash';
      expect(await c.request('tools/call', { name: 'echo', arguments: { text } })).to.deep.equal({ content: [{ type: 'text', text }] });
      const sum = (await c.request('tools/call', { name: 'add', arguments: { a: 2, b: 40 } })) as { structuredContent: unknown };
      expect(sum.structuredContent).to.deep.equal({ sum: 42 });
    });

    it('receives a 20 MiB tool result intact', async () => {
      const c = track(await connect(demo));
      const size = 20 * 1024 * 1024;
      const result = (await c.request('tools/call', { name: 'blob', arguments: { bytes: size } })) as {
        content: [unknown, { resource: { blob: string } }];
        structuredContent: { sha256: string };
      };
      const bytes = Buffer.from(result.content[1].resource.blob, 'base64');
      expect(bytes.length).to.equal(size);
      expect(createHash('sha256').update(bytes).digest('hex')).to.equal(result.structuredContent.sha256);
    });

    it('rejects an error response with its code and message', async () => {
      const c = track(await connect(demo));
      const err = (await rejection(c.request('no/such/method'))) as unknown as RpcError;
      expect(err).to.be.instanceOf(RpcError);
      expect(err.code).to.equal(-32601);
      expect(err.message).to.match(/no\/such\/method/);
    });
  });

  describe('with misbehaving servers', () => {
    it('reports banner and log lines on stdout as invalid, and goes on', async () => {
      const invalid: FrameError[] = [];
      // A fixed revision: no era probe, so the line numbers do not depend on what an earlier test left cached.
      const c = track(
        await connect(server('banner'), { protocolVersion: '2025-11-25', onSpawn: (conn) => conn.on('invalid', (e: FrameError) => invalid.push(e)) }),
      );
      const notes: unknown[] = [];
      c.onNotification('notifications/message', (params) => notes.push(params));
      const { tools } = (await c.request('tools/list')) as { tools: unknown[] };
      expect(tools).to.have.length(1);
      await c.request('tools/call', { name: 'hello' });
      expect(notes).to.deep.equal([{ level: 'info', data: 'calling hello' }]);
      // Line 1 the banner, 2 the answer to initialize, 3 the server's note that it got initialized, 4 the log line.
      expect(invalid.map((e) => [e.code, e.line])).to.deep.equal([
        ['INVALID_JSON', 1],
        ['INVALID_JSON', 4],
      ]);
      expect(invalid[0]!.preview).to.match(/^Booting banner-server/);
    });

    it('survives an onNotification handler that throws, and reports the exception', async () => {
      const c = track(await connect(server('banner')));
      const errors: unknown[] = [];
      c.on('error', (err) => errors.push(err));
      c.onNotification('notifications/message', () => {
        throw new Error('handler bug');
      });
      await c.request('tools/call', { name: 'hello' });
      expect(errors.map((e) => (e as Error).message)).to.deep.equal(['handler bug']);
      expect(await c.request('ping')).to.deep.equal({});
    });

    it("answers the server's ping, its requests with a handler, and others with -32601", async () => {
      const c = track(await connect(server('banner')));
      c.onRequest('roots/list', () => ({ roots: [{ uri: 'file:///tmp', name: 'tmp' }] }));
      const replies: Array<Record<string, unknown>> = [];
      c.on('notification', (n: { method: string; params: Record<string, unknown> }) => {
        if (n.method === 'test/received' && typeof n.params.id === 'string') replies.push(n.params);
      });
      const all = waitFor(c, 'notification', () => replies.length === 3);
      await c.request('ask-client');
      await all;
      const byId = Object.fromEntries(replies.map((r) => [r.id, r]));
      expect(byId['srv-1']).to.deep.include({ error: { code: -32601, message: 'Method not found: sampling/createMessage' } });
      expect(byId['srv-2']).to.deep.include({ result: {} });
      expect(byId['srv-3']).to.deep.include({ result: { roots: [{ uri: 'file:///tmp', name: 'tmp' }] } });
    });

    it('rejects when the server exits before answering, with its exit code and last stderr lines', async () => {
      const err = await rejection(connect(server('crash')));
      expect(err).to.be.instanceOf(ConnectionError);
      expect(err.code).to.equal('EXITED');
      expect(err.exitCode).to.equal(3);
      expect(err.stderr).to.deep.equal(['starting crash-server', 'fatal: DEMO_API_KEY is not set']);
      expect(err.message).to.include('exited with code 3').and.to.include('DEMO_API_KEY is not set');
    });

    it('rejects a command that does not exist, naming it, and runs nothing through a shell', async () => {
      const marker = `${ROOT}dist/.shell-ran`;
      const err = await rejection(connect({ command: `no-such-mcp-server-xyz; touch ${marker}` }));
      expect(err.code).to.equal('SPAWN_FAILED');
      expect(err.message).to.include('no-such-mcp-server-xyz');
      expect(existsSync(marker)).to.equal(false);
    });

    it('rejects on a handshake timeout and ends the server', async () => {
      let pid: number | undefined;
      const started = Date.now();
      const err = await rejection(connect(server('silent'), { timeoutMs: 300, shutdownGraceMs: 200, onSpawn: (c) => (pid = c.pid) }));
      expect(err.code).to.equal('TIMEOUT');
      expect(Date.now() - started).to.be.lessThan(2000);
      expect(pid).to.be.a('number');
      await until(2500, 'the child gone', () => !isAlive(pid!), 50);
      expect(isAlive(pid!)).to.equal(false);
    });

    it('keeps what came before a message cut off by the server dying, reports it TRUNCATED, and rejects', async () => {
      const invalid: FrameError[] = [];
      const c = track(await connect(server('dies-mid-message'), { onSpawn: (conn) => conn.on('invalid', (e: FrameError) => invalid.push(e)) }));
      const progress: unknown[] = [];
      c.onNotification('notifications/progress', (p) => progress.push(p));
      const err = await rejection(c.request('tools/call', { name: 'x' }));
      expect(err.code).to.equal('EXITED');
      expect(err.exitCode).to.equal(1);
      expect(progress).to.deep.equal([{ progressToken: 1, progress: 50, total: 100 }]);
      expect(invalid.map((e) => e.code)).to.deep.equal(['TRUNCATED']);
      // Writing to a server that has died rejects; nothing is thrown out of a stream.
      const late = await rejection(c.request('ping'));
      expect(late.code).to.equal('EXITED');
      await rejection(c.notify('notifications/anything'));
    });

    it('times out a request, and tells the server with notifications/cancelled', async () => {
      const c = track(await connect(server('banner')));
      const cancelled = waitFor<{ method: string; params: { method?: string } }>(
        c,
        'notification',
        (n) => n.params.method === 'notifications/cancelled',
      );
      const err = await rejection(c.request('slow', {}, { timeoutMs: 200 }));
      expect(err.code).to.equal('TIMEOUT');
      const seen = (await cancelled).params as { params: { requestId: number; reason: string } };
      expect(seen.params.requestId).to.be.a('number');
      expect(seen.params.reason).to.match(/timed out/);
    });

    it('aborts a request through its signal, and tells the server', async () => {
      const c = track(await connect(server('banner')));
      const cancelled = waitFor<{ params: { method?: string } }>(c, 'notification', (n) => n.params.method === 'notifications/cancelled');
      const controller = new AbortController();
      const pending = c.request('slow', {}, { signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      expect((await rejection(pending)).code).to.equal('ABORTED');
      await cancelled;
      expect((await rejection(c.request('slow', {}, { signal: AbortSignal.abort() }))).code).to.equal('ABORTED');
    });

    it('rejects pending requests when closed', async () => {
      const c = await connect(server('banner'));
      const pending = c.request('slow');
      const closing = c.close();
      expect((await rejection(pending)).code).to.equal('CLOSED');
      expect((await closing).code).to.equal(0);
    });

    it('gives the server a safe default environment plus its own, or everything on request', async () => {
      process.env.MCP_FRAME_TEST_SECRET = 'do-not-pass';
      try {
        const c = track(await connect({ ...server('banner'), env: { FROM_CONFIG: 'yes' } }));
        const { env } = (await c.request('env')) as { env: Record<string, string> };
        expect(env.FROM_CONFIG).to.equal('yes');
        expect(env.PATH).to.equal(process.env.PATH);
        expect(env).not.to.have.property('MCP_FRAME_TEST_SECRET');
        const all = track(await connect(server('banner'), { inheritEnv: true }));
        expect(((await all.request('env')) as { env: Record<string, string> }).env.MCP_FRAME_TEST_SECRET).to.equal('do-not-pass');
      } finally {
        delete process.env.MCP_FRAME_TEST_SECRET;
      }
    });

    it('holds sends back while the server does not read, and lets them go when it does', async () => {
      const flag = join(tempDir('deaf'), 'read-again');
      const c = track(await connect(server('deaf', flag)));
      await c.request('stop-reading');
      let sent = 0;
      const big = { data: 'z'.repeat(1024 * 1024) };
      const sends = Array.from({ length: 8 }, () => c.notify('notifications/message', big).then(() => sent++));
      await new Promise((r) => setTimeout(r, 300));
      // 8 MiB cannot fit in the pipe and the streams' buffers while nobody reads.
      expect(sent).to.be.lessThan(8);
      writeFileSync(flag, '');
      await Promise.all(sends);
      expect(sent).to.equal(8);
      expect(await c.request('ping')).to.deep.equal({});
    });

    it('says an http or sse server cannot be reached, naming it', async () => {
      for (const type of ['http', 'sse'] as const) {
        const err = await rejection(connect({ type, url: 'http://127.0.0.1:1/mcp' }, { name: 'nowhere' }));
        expect(err.code, type).to.equal('HTTP_STATUS');
        expect(err.message).to.include('cannot reach "nowhere"');
      }
    });
  });

  describe('with a hostile server (test/helpers/servers/hostile.ts)', () => {
    const hostile = (mode: string) => server('hostile', mode);

    it('reports messages nested past maxDepth as INVALID_MESSAGE and goes on, with or without a trace', async () => {
      for (const trace of [false, true]) {
        const invalid: FrameError[] = [];
        const c = track(
          await connect(hostile('deep'), {
            protocolVersion: '2025-11-25',
            onSpawn: (conn) => {
              conn.on('invalid', (e: FrameError) => invalid.push(e));
              if (trace) conn.on('frame', () => undefined);
            },
          }),
        );
        const err = await rejection(c.request('deep', {}, { timeoutMs: 300 }));
        expect(err.code).to.equal('TIMEOUT');
        // Line 1 answers initialize (a fixed revision: no era probe); the deep ones follow.
        expect(invalid.map((e) => [e.code, e.line])).to.deep.equal([
          ['INVALID_MESSAGE', 2],
          ['INVALID_MESSAGE', 3],
        ]);
        expect(await c.request('ping')).to.deep.equal({});
      }
    });

    it('rejects a response that is not JSON-RPC, reports it, and goes on', async () => {
      const invalid: FrameError[] = [];
      const c = track(await connect(hostile('malformed'), { onSpawn: (conn) => conn.on('invalid', (e: FrameError) => invalid.push(e)) }));
      for (const method of ['bad-error', 'no-result']) {
        const err = await rejection(c.request(method));
        expect(err.code, method).to.equal('INVALID_RESPONSE');
        expect(err.message).to.include('not JSON-RPC 2.0');
      }
      expect(invalid.map((e) => e.code)).to.deep.equal(['INVALID_MESSAGE', 'INVALID_MESSAGE']);
      expect(await c.request('ping')).to.deep.equal({});
    });

    it('rejects pending requests at once when the server closes its stdout but keeps running, and ends it', async () => {
      const c = track(await connect(hostile('close-stdout'), { shutdownGraceMs: 200 }));
      const exited = waitFor(c, 'exit');
      await c.request('close');
      const started = Date.now();
      const err = await rejection(c.request('ping', {}, { timeoutMs: 20_000 }));
      expect(err.code).to.be.oneOf(['ENDED', 'EXITED', 'CLOSED']);
      expect(Date.now() - started).to.be.lessThan(2000);
      await exited;
      expect(isAlive(c.pid!)).to.equal(false);
    });

    it("keeps the key in a remote entry's URL out of its errors", async () => {
      for (const type of ['http', 'sse'] as const) {
        const err = await rejection(connect({ type, url: 'http://127.0.0.1:1/mcp?api_key=sk-secret-value' }));
        expect(err.code).to.equal('HTTP_STATUS');
        expect(`${err.message} ${String(err.stack)}`).to.not.include('sk-secret-value');
      }
    });

    it('keeps secrets and escape codes from its stderr out of the error message', async () => {
      const err = await rejection(connect(hostile('secrets')));
      expect(err.code).to.equal('EXITED');
      const text = `${err.message}\n${err.stderr.join('\n')}`;
      for (const secret of ['sk-live-0123456789abcdef', 'hunter2', 'eyJhbGciOiJIUzI1NiJ9']) expect(text).to.not.include(secret);
      expect(text).to.include('[REDACTED]');
      expect(unprintable(text, '\n')).to.deep.equal([]);
      expect(text).to.include('\\u001b]0;owned title');
    });

    it('stops reading a server that floods pings without reading the answers', async () => {
      const c = track(await connect(hostile('ping-flood'), { shutdownGraceMs: 200 }));
      let received = 0;
      c.on('frame', (f: { direction: string }) => {
        if (f.direction === 'receive') received++;
      });
      await c.notify('notifications/x');
      void c.request('flood', {}, { timeoutMs: 5000 }).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // Without backpressure both ways, every ping is read and answered into a queue that only grows.
      expect(received).to.be.greaterThan(100);
      expect(received).to.be.lessThan(20_000);
    });
  });

  describe('close', () => {
    it('ends a well-behaved server by closing its stdin', async () => {
      const c = await connect(demo);
      const started = Date.now();
      const status = await c.close();
      expect(status).to.deep.equal({ code: 0, signal: null });
      expect(Date.now() - started).to.be.lessThan(1500);
      expect(isAlive(c.pid!)).to.equal(false);
    });

    it('escalates to SIGTERM, then SIGKILL, 2 s apart, for a server that ignores both', async function () {
      this.timeout(15_000);
      const c = await connect(server('stubborn'));
      const started = Date.now();
      const status = await c.close();
      const took = Date.now() - started;
      expect(status.signal).to.equal('SIGKILL');
      expect(took).to.be.within(3800, 6000);
      expect(isAlive(c.pid!)).to.equal(false);
    });

    it("ends the server's whole process group, grandchildren included", async () => {
      const lines: string[] = [];
      const c = await connect(server('stubborn', 'spawn-child'), {
        shutdownGraceMs: 200,
        onSpawn: (conn) => conn.on('stderr', (l: string) => lines.push(l)),
      });
      await until(1000, "the grandchild's pid", () => lines.some((l) => l.startsWith('grandchild pid')), 20);
      const grandchild = Number(/grandchild pid (\d+)/.exec(lines.join('\n'))?.[1]);
      expect(isAlive(grandchild)).to.equal(true);
      await c.close();
      await until(1000, 'the grandchild gone', () => !isAlive(grandchild), 20);
      expect(isAlive(grandchild)).to.equal(false);
    });
  });
});
