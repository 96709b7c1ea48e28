// A Redis server of the test's own (Debian's redis-server, or Valkey's valkey-server from bookworm-backports), on
// a free 127.0.0.1 port, without persistence.
// Where redis-server is not installed the tests that need it are skipped with a line saying so, except under CI
// (.ci/run installs it), where its absence fails the run.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { haveCommand, requireCommand } from './commands.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import tls from 'node:tls';
import { freePort } from './ports.js';
import { tempDir } from './temp.js';

export interface RedisServer {
  port: number;
  url: string;
  /** With TLS: the certificate's file, for clients to trust (NODE_EXTRA_CA_CERTS). */
  caFile?: string;
  /** Stops the server (its data is gone: nothing is persisted). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** Stops it answering without closing a connection (SIGSTOP, as a stall would), and lets it go on (SIGCONT). */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** Which server a test runs: Redis, or Valkey (the same commands and protocol, its own binaries). */
export type RedisKind = 'redis' | 'valkey';

/** True when redis-server can be run here. */
export function haveRedis(): boolean {
  return haveCommand('redis-server', ['--version']);
}

/**
 * For a `before` hook: skips the suite when redis-server is missing (saying so on stdout), or fails it under CI.
 * Returns true when the suite runs.
 */
export function requireRedis(ctx: Mocha.Context, kind: RedisKind = 'redis'): boolean {
  return requireCommand(ctx, `${kind}-server`, ['--version'], kind === 'valkey' ? '-t bookworm-backports valkey-server' : 'redis-server');
}

/** A server of `kind` started with `args`, its output kept (the last 4 KiB) to say why it stopped, if it does. */
function launch(args: string[], kind: RedisKind): { child: ChildProcess; output: () => string; kind: RedisKind } {
  const child = spawn(`${kind}-server`, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-4096);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, output: () => output, kind };
}

/** Thrown when a redis-server stops before it answers; `inUse` when its port was taken after the test chose it. */
class RedisExited extends Error {
  readonly inUse: boolean;
  constructor(kind: RedisKind, code: number | null, output: string) {
    super(`${kind}-server exited with ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`);
    this.inUse = /Address already in use/i.test(output);
  }
}

/**
 * Runs `start` with `count` free ports, again with new ones (at most 5 tries) when a port was taken between
 * choosing it and redis-server binding it: another test's connection can take an ephemeral port in between.
 */
async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    while (ports.length < count) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    try {
      return await start(ports);
    } catch (err) {
      if (!(err instanceof RedisExited && err.inUse) || attempt === 5) throw err;
    }
  }
}

/** Resolves once the server answers PING on `port` (over TLS trusting `ca`, when given; NOAUTH is an answer too). */
async function answering(port: number, started: ReturnType<typeof launch>, ca?: string): Promise<void> {
  const { child } = started;
  for (const end = Date.now() + 10_000; Date.now() < end; ) {
    if (child.exitCode !== null) {
      // The output's last lines may still be on their way.
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new RedisExited(started.kind, child.exitCode, started.output());
    }
    const ok = await new Promise<boolean>((resolve) => {
      const socket = ca === undefined ? net.connect(port, '127.0.0.1') : tls.connect({ port, host: '127.0.0.1', ca, servername: 'localhost' });
      socket.once('error', () => resolve(false));
      socket.once(ca === undefined ? 'connect' : 'secureConnect', () => socket.write('PING\r\n'));
      socket.once('data', (d) => {
        socket.destroy();
        resolve(/^(\+PONG|-NOAUTH)/.test(d.toString()));
      });
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${started.kind}-server did not answer on port ${port}`);
}

/** How a test's Redis is reached: a password (`requirepass`), and TLS only with a certificate made for the test. */
export interface RedisOptions {
  password?: string;
  /** TLS only (no plain port), with a certificate made for the test (its file: `caFile`). */
  tls?: boolean;
  /** Redis (the default) or Valkey. */
  server?: RedisKind;
}

/** A self-signed certificate for localhost and 127.0.0.1, made by openssl in `dir`: its files. */
function testCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', ...subject], {
    stdio: 'ignore',
  });
  return { cert, key };
}

export function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  return onFreePorts(1, ([port]) => startRedisOn(port as number, options));
}

async function startRedisOn(port: number, options: RedisOptions): Promise<RedisServer> {
  const dir = tempDir('redis-');
  const certificate = options.tls === true ? testCertificate(dir) : undefined;
  const auth = options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`;
  let child: ChildProcess | undefined;
  const server: RedisServer = {
    port,
    url: `${certificate === undefined ? 'redis' : 'rediss'}://${auth}${certificate === undefined ? '127.0.0.1' : 'localhost'}:${port}`,
    ...(certificate === undefined ? {} : { caFile: certificate.cert }),
    async start() {
      // Nothing on disk, even for a replica's full sync (diskless, and a folder of the test's own for any file).
      const args = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'];
      args.push('--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0', '--repl-diskless-load', 'swapdb', '--dir', dir);
      if (options.password !== undefined) args.push('--requirepass', options.password);
      if (certificate === undefined) args.push('--port', String(port));
      else args.push('--port', '0', '--tls-port', String(port), '--tls-cert-file', certificate.cert, '--tls-key-file', certificate.key);
      if (certificate !== undefined) args.push('--tls-ca-cert-file', certificate.cert, '--tls-auth-clients', 'no');
      const started = launch(args, options.server ?? 'redis');
      child = started.child;
      await answering(port, started, certificate === undefined ? undefined : readFileSync(certificate.cert, 'utf8'));
    },
    async stop() {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    },
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
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
export async function startSentinelSet(server: RedisKind = 'redis', name = 'mcp'): Promise<SentinelSet> {
  const primary = await startRedis({ server });
  const replica = await startRedis({ server });
  await redisCommand(replica.port, ['REPLICAOF', '127.0.0.1', String(primary.port)]);
  for (const end = Date.now() + 10_000; ; ) {
    // The replication section, read whole (a bulk reply: redisCommand gives its first line only).
    const whole = await bulk(primary.port, 'INFO replication', 'master_repl_offset');
    if (/slave0:.*state=online/.test(whole)) break;
    if (Date.now() > end) throw new Error('the replica did not come online within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const dir = tempDir('sentinel-');
  const conf = join(dir, 'sentinel.conf');
  const sentinel = (port: number): Promise<{ port: number; child: ChildProcess }> => {
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
    const started = launch([conf, '--sentinel'], server);
    return answering(port, started).then(() => ({ port, child: started.child }));
  };
  const { port, child } = await onFreePorts(1, ([port]) => sentinel(port as number));
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

export interface RedisCluster {
  /** The nodes' client ports. */
  ports: number[];
  /** `redis+cluster://127.0.0.1:<first port>`: one node given, the client finds the others. */
  url: string;
  close(): Promise<void>;
}

/**
 * A Redis Cluster of `n` primaries (no replicas) on free 127.0.0.1 ports, the slots spread over them by
^ * `redis-cli --cluster create` (or `valkey-cli`: `server`), each node's bus on a free port of its own, nothing on disk but each node's
 * cluster file in a folder of the test's own. Resolves once every node says cluster_state:ok.
 */
export async function startCluster(n = 3, server: RedisKind = 'redis'): Promise<RedisCluster> {
  const dir = tempDir('cluster-');
  const nodes: Array<{ port: number; child: ChildProcess }> = [];
  const close = async (): Promise<void> => {
    await Promise.all(
      nodes.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }),
    );
  };
  try {
    for (let i = 0; i < n; i++) {
      await onFreePorts(2, async ([port, bus]) => {
        const args = ['--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
        args.push(
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
        );
        const started = launch(args, server);
        const node = { port: port as number, child: started.child };
        nodes.push(node);
        // A node that did not start leaves the list (it is gone: answering stops one that does not answer).
        await answering(node.port, started).catch((err: unknown) => {
          nodes.splice(nodes.indexOf(node), 1);
          throw err;
        });
      });
    }
    const ports = nodes.map((node) => node.port);
    const create = spawnSync(
      `${server}-cli`,
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    if (create.status !== 0) throw new Error(`${server}-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    for (const end = Date.now() + 20_000; ; ) {
      const states = await Promise.all(ports.map((port) => bulk(port, 'CLUSTER INFO', 'cluster_slots_assigned')));
      if (states.every((info) => info.includes('cluster_state:ok'))) break;
      if (Date.now() > end) throw new Error('the cluster did not reach cluster_state:ok within 20 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { ports, url: `redis+cluster://127.0.0.1:${ports[0]}`, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** An inline command's bulk reply on `port`, read until it holds `until` (or '' when the server does not answer). */
function bulk(port: number, command: string, until: string): Promise<string> {
  return new Promise<string>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`${command}\r\n`));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(text);
    }, 2000);
    socket.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      if (text.includes(until)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', () => {
      clearTimeout(timer);
      resolve('');
    });
  });
}
