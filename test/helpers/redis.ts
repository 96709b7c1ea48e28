// A Redis server of the test's own (Debian's redis-server), on a free 127.0.0.1 port, without persistence.
// Where redis-server is not installed the tests that need it are skipped with a line saying so, except under CI
// (.ci/run installs it), where its absence fails the run.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { freePort } from './ports.js';
import { tempDir } from './temp.js';

export interface RedisServer {
  port: number;
  url: string;
  /** Stops the server (its data is gone: nothing is persisted). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** True when redis-server can be run here. */
export function haveRedis(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * For a `before` hook: skips the suite when redis-server is missing (saying so on stdout), or fails it under CI.
 * Returns true when the suite runs.
 */
export function requireRedis(ctx: Mocha.Context): boolean {
  if (haveRedis()) return true;
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') {
    throw new Error('redis-server is not on PATH, and CI needs it (.ci/run installs it with apt-get install -y redis-server)');
  }
  process.stdout.write(`      (skipped: redis-server is not on PATH; install it with apt-get install -y redis-server)\n`);
  ctx.skip();
  return false;
}

/** Resolves once the server answers PING on `port`. */
async function answering(port: number, child: ChildProcess): Promise<void> {
  for (const end = Date.now() + 10_000; Date.now() < end; ) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('error', () => resolve(false));
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (d) => {
        socket.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server did not answer on port ${port}`);
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const dir = tempDir('redis-');
  let child: ChildProcess | undefined;
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      // Nothing on disk, even for a replica's full sync (diskless, and a folder of the test's own for any file).
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'];
      args.push('--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0', '--repl-diskless-load', 'swapdb', '--dir', dir);
      child = spawn('redis-server', args, { stdio: 'ignore' });
      await answering(port, child);
    },
    async stop() {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    },
    close: () => server.stop(),
  };
  await server.start();
  return server;
}

/** Sends one command to the Redis on `port` (RESP, over a socket of its own); resolves with its first reply line. */
export function redisCommand(port: number, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
      const end = text.indexOf('\r\n');
      if (end < 0) return;
      socket.destroy();
      resolve(text.slice(0, end));
    });
    socket.on('error', reject);
  });
}
