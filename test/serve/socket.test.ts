import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { connect } from '../../lib/client/connect.js';
import { ConnectionError } from '../../lib/client/errors.js';
import { serve, type ServeHandle } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { gone } from '../helpers/processes.js';
import { rejection } from '../helpers/rejection.js';
import { pidsOf, STEPS, served, serveProcess } from '../helpers/served.js';
import { until } from '../helpers/poll.js';

describe('serve: a local socket', () => {
  if (process.platform === 'win32') return;
  let dir: string;
  let path: string;
  let bridge: ServeHandle | undefined;
  let log: string[];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-frame-socket-'));
    path = join(dir, 'mcp.sock');
  });
  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves two hosts at once, each with its own child, on a socket only its owner can use', async () => {
    let log: string[];
    ({ bridge, log } = await served(STEPS, { http: false, socket: path }));
    expect(bridge.url).to.equal(undefined);
    expect(statSync(path).mode & 0o777).to.equal(0o600);
    const [a, b] = await Promise.all([connect({ type: 'socket', path }), connect({ type: 'socket', path })]);
    const [ra, rb] = await Promise.all([
      a.request('tools/call', { name: 'echo', arguments: { text: 'from a ü' } }),
      b.request('tools/call', { name: 'echo', arguments: { text: 'from b 👋' } }),
    ]);
    expect(ra).to.deep.equal({ content: [{ type: 'text', text: 'from a ü' }] });
    expect(rb).to.deep.equal({ content: [{ type: 'text', text: 'from b 👋' }] });
    const pids = pidsOf(log);
    expect(new Set(pids).size).to.equal(2);
    expect(bridge.sessions).to.equal(2);
    await a.close();
    expect(await gone(pids[0]!)).to.equal(true);
    expect(await b.request('tools/call', { name: 'echo', arguments: { text: 'b goes on' } })).to.deep.include({
      content: [{ type: 'text', text: 'b goes on' }],
    });
    await b.close();
    await bridge.close();
    expect(existsSync(path)).to.equal(false);
    expect(await gone(pids[1]!)).to.equal(true);
  });

  it('replaces a stale socket file nothing answers on, and refuses one a live server holds', async () => {
    // A process that listens and is killed leaves its socket file behind.
    const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`]);
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    expect((await rejection(serve(STEPS, { http: false, socket: path, log: () => undefined }))).message).to.match(
      /another server is listening there/,
    );
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(existsSync(path)).to.equal(true);
    bridge = await serve(STEPS, { http: false, socket: path, log: () => undefined });
    const c = await connect({ type: 'socket', path });
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'fresh' } })).to.deep.include({
      content: [{ type: 'text', text: 'fresh' }],
    });
    await c.close();
  });

  it('starts no server for a connection that sends nothing: a second serve checking the socket is live starts none', async () => {
    let log: string[];
    ({ bridge, log } = await served(STEPS, { http: false, socket: path }));
    // A bare probe: connects and leaves.
    await new Promise<void>((resolve, reject) => {
      const probe = net.connect(path, () => {
        probe.end();
        resolve();
      });
      probe.on('error', reject);
    });
    expect((await rejection(serve(STEPS, { http: false, socket: path, log: () => undefined }))).message).to.match(
      /another server is listening there/,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(log.filter((l) => / started/.test(l))).to.deep.equal([]);
    expect(bridge.sessions).to.equal(0);
    // A real client still gets its own.
    const c = await connect({ type: 'socket', path });
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'after the probes' } })).to.deep.include({
      content: [{ type: 'text', text: 'after the probes' }],
    });
    await c.close();
    expect(pidsOf(log)).to.have.length(1);
  });

  it('fails to connect with CONNECT_FAILED when nothing listens', async () => {
    const err = await rejection<ConnectionError>(connect({ type: 'socket', path }));
    expect(err).to.be.instanceOf(ConnectionError);
    expect(err.code).to.equal('CONNECT_FAILED');
    expect(err.message).to.include('no such socket');
  });

  it('mcp-frame serve --socket: prints where it listens, and SIGTERM removes the file and leaves no process', async function () {
    this.timeout(20_000);
    const { proc, stderr, exited } = await serveProcess(['--socket', path, '--', process.execPath, `${ROOT}dist/examples/server.js`]);
    expect(stderr()).to.match(/^mcp-frame serve: \d{4}-\d\d-\d\dT[\d:.]+Z listening on http:\/\/127\.0\.0\.1:\d+\/mcp and unix:.*mcp\.sock$/m);
    const c = await connect({ type: 'socket', path });
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'via the CLI' } })).to.deep.include({
      content: [{ type: 'text', text: 'via the CLI' }],
    });
    const child = Number(/server pid (\d+)/.exec(stderr())![1]);
    proc.kill('SIGTERM');
    expect(await exited).to.equal(0);
    await c.close();
    expect(existsSync(path)).to.equal(false);
    expect(await gone(child)).to.equal(true);
  });

  it('slows the child for a client that reads slowly, and loses no message past the send queue', async function () {
    this.timeout(60_000);
    ({ bridge, log } = await served(STEPS, { http: false, socket: path }));
    const count = 1500;
    const socket = net.connect(path);
    socket.pause();
    const line = (msg: unknown): string => `${JSON.stringify(msg)}\n`;
    socket.write(
      line({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 's', version: '1' } },
      }) +
        line({ jsonrpc: '2.0', method: 'notifications/initialized' }) +
        line({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'flood', arguments: { count, size: 64 * 1024 } } }),
    );
    // 94 MiB, more than the 64 MiB a channel lets wait, while the client reads nothing.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    let received = 0;
    let answered = false;
    let carry = '';
    socket.setEncoding('utf8').on('data', (d: string) => {
      const lines = (carry + d).split('\n');
      carry = lines.pop()!;
      for (const l of lines) {
        if (l.includes('notifications/message')) received++;
        else if (l.includes(`${count} sent`)) answered = true;
      }
    });
    socket.resume();
    await until(30000, 'the answer', () => answered, 10);
    socket.destroy();
    expect(received).to.equal(count);
    expect(answered).to.equal(true);
    expect(log.filter((l) => l.includes('could not pass'))).to.deep.equal([]);
  });
});
