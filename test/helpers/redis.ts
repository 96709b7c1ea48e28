// A Redis server of the test's own (Debian's redis-server), on a free 127.0.0.1 port, without persistence.
// Where redis-server is not installed the tests that need it are skipped with a line saying so, except under CI
// (.ci/run installs it), where its absence fails the run.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

export interface SentinelSet {
  primary: RedisServer;
  replica: RedisServer;
  /** `redis+sentinel://127.0.0.1:<port>/<name>`. */
  url: string;
  /** Asks the Sentinel to promote the replica now (SENTINEL FAILOVER). */
  failover(): Promise<string>;
  close(): Promise<void>;
}

/** A primary, a replica of it and one Sentinel that monitors them (quorum 1), all on free 127.0.0.1 ports, nothing on disk. */
export async function startSentinelSet(name = 'mcp'): Promise<SentinelSet> {
  const primary = await startRedis();
  const replica = await startRedis();
  await redisCommand(replica.port, ['REPLICAOF', '127.0.0.1', String(primary.port)]);
  for (const end = Date.now() + 10_000; ; ) {
    // The replication section, read whole (a bulk reply: redisCommand gives its first line only).
    const whole = await new Promise<string>((resolve) => {
      const socket = net.connect(primary.port, '127.0.0.1', () => socket.write('INFO replication\r\n'));
      let text = '';
      socket.setEncoding('utf8').on('data', (d: string) => {
        text += d;
        if (text.includes('master_repl_offset')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('error', () => resolve(''));
    });
    if (/slave0:.*state=online/.test(whole)) break;
    if (Date.now() > end) throw new Error('the replica did not come online within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const dir = tempDir('sentinel-');
  const port = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${primary.port} 1`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 5000`,
      '',
    ].join('\n'),
  );
  const child = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  await answering(port, child);
  return {
    primary,
    replica,
    url: `redis+sentinel://127.0.0.1:${port}/${name}`,
    failover: () => redisCommand(port, ['SENTINEL', 'FAILOVER', name]),
    close: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      await Promise.all([primary.close(), replica.close()]);
    },
  };
}

/** The role of the Redis on `port` (ROLE): `master` or `slave`. */
export function roleOf(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('ROLE\r\n'));
    let text = '';
    socket.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      const role = /\b(master|slave)\b/.exec(text)?.[1];
      if (role === undefined) return;
      socket.destroy();
      resolve(role);
    });
    socket.on('error', reject);
  });
}
