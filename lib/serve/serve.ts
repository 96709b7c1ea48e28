/*
 * `serve`: offers a stdio MCP server over Streamable HTTP (/mcp), the deprecated HTTP+SSE transport (/sse)
 * and a local socket, one child process per session, safe by default. Given several servers (a map of named
 * entries, stdio or remote), it is a gateway: each session gets a Gateway (lib/gateway) where it would get a
 * child, and the Gateway is a client of each server.
 */
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AuthOptions } from '../client/auth/types.js';
import { isStdioServer, type RemoteServerConfig, type ServerConfig, type StdioServerConfig } from '../client/config.js';
import { connect } from '../client/connect.js';
import type { FrameTrace } from '../client/connection.js';
import { Gateway } from '../gateway/gateway.js';
import type { Policy } from '../gateway/policy.js';
import { loadJose, ResourceServer, type ResourceServerOptions } from './resource-server.js';
import { type PrefixMode, prefixClashes } from '../gateway/names.js';
import { UpstreamHealth, type UpstreamOpener } from '../gateway/upstream.js';
import { type FrameError, missingPeer, safeLine, frameProblem } from '../errors.js';

import { createLogger, type Logger, type LogLevel } from '../log.js';
import { MODERN_LABEL, pidNote, type ServeContext, type ServedChild, type ServePaths, watchChild } from './context.js';
import type { MetricsSources } from './metrics.js';
import type { MetricsRegistry, Observer } from './observer.js';
import { isLoopback } from '../protocol/loopback.js';
import { Guard } from './guard.js';
import { HttpFront, type SessionTable } from './http.js';
import { ModernHub } from './modern.js';
import { holdUntilAnswered, StartGate } from './start-gate.js';
import { listenSocket, removeSocket, serveConnection } from './socket.js';
import type { ReplicaStore } from './store.js';
import { loadTraceApi } from '../protocol/trace.js';
import { requestTarget } from '../protocol/target.js';
import { Refusal } from '../protocol/refusal.js';

export interface ServeOptions {
  /** The address HTTP listens on. @defaultValue '127.0.0.1' */
  host?: string;
  /** @defaultValue 0 (a free port) */
  port?: number;
  /** Serve HTTP at all (false: the socket only). @defaultValue true */
  http?: boolean;
  /** A Unix socket path (a named pipe path on Windows) to listen on as well, with NDJSON framing. */
  socket?: string;
  /** The bearer token every HTTP request must carry. Unset: none is asked for. */
  token?: string;
  /** Origins (besides this server's own) whose pages may call it. */
  allowOrigins?: string[];
  /** Host header values (besides the address listened on, and localhost) to admit. */
  allowHosts?: string[];
  /** Sessions open at once, of every transport; past it, 503. @defaultValue 32 */
  maxSessions?: number;
  /** A session with no request and no open stream for this long is closed. @defaultValue 1800000 (30 min) */
  sessionIdleMs?: number;
  /** The largest request body (and socket frame) taken; past it, 413. @defaultValue 4 MiB */
  maxMessageBytes?: number;
  /** Event streams a session may have open at once (each request in flight may hold one); past it, 429. @defaultValue 1024 */
  maxStreamsPerSession?: number;
  /** Requests a session may have in flight at once; past it, 429. @defaultValue 1024 */
  maxPendingPerSession?: number;
  /** Bytes of recent events each stream holds for a client that resumes. @defaultValue 1 MiB */
  replayBytes?: number;
  /** @defaultValue 15000 */
  keepaliveMs?: number;
  /** The `retry:` each stream's priming event gives clients. @defaultValue 1000 */
  retryMs?: number;
  /** Give each child this process's whole environment instead of the safe default set. @defaultValue false */
  inheritEnv?: boolean;
  /** How long closing a child waits after ending its stdin, and again after SIGTERM. @defaultValue 2000 */
  shutdownGraceMs?: number;
  /** The server's name in logs. @defaultValue the command */
  name?: string;
  /** Log every message (redacted). @defaultValue false */
  trace?: boolean;
  /** Where log lines go. @defaultValue a line on stderr */
  log?: (line: string) => void;
  /**
   * The logger every line goes to (levels, events and fields; see createLogger), in place of `log`, `logFormat`,
   * `logLevel` and `logTime`. It should scrub the token as serve's own does (createLogger's `secrets`).
   */
  logger?: Logger;
  /**
   * A Redis URL (`redis://host:port[/db]`, `rediss://` for TLS, `redis+sentinel://host:port[,...]/<master name>[/db]` for the primary Sentinel names,
   * `redis+cluster://host:port[,...]` for a Redis Cluster): every serve given the same store (and prefix)
   * is a replica of one service. A request for a session another replica owns is carried there and answered
   * through this one; `maxSessions` counts across the replicas. The Redis client is loaded only then.
   */
  store?: string;
  /** The prefix of the store's keys and channels: services sharing one Redis each take their own. @defaultValue 'mcp-frame' */
  storePrefix?: string;
  /**
   * With a store: this replica's origin as the other replicas reach it (`http://10.0.0.5:8080`, a pod's DNS name
   * behind a headless service). A request for one of its sessions that reaches another replica is forwarded here
   * over HTTP, instead of through Redis pub/sub (which stays the way to replicas that advertise none, and the
   * fallback when this address cannot be reached).
   */
  advertiseUrl?: string;
  /**
   * On close, how long /healthz answers 503 ("shutting down") while sessions go on being served, so that a
   * balancer stops sending new clients first. @defaultValue 0
   */
  drainMs?: number;
  /**
   * A gateway (several servers): how tool and prompt names are made, `<server><separator><name>` always, only
   * where two servers offer the same name, or never (a name two offer is refused at start). @defaultValue 'always'
   */
  prefix?: PrefixMode;
  /** A gateway: what joins a server's name and its tool's. @defaultValue '__' */
  separator?: string;
  /** A gateway: globs on the exposed tool names to offer (any of them; all when none is given). */
  allowTools?: string[];
  /** A gateway: globs on the exposed tool names to leave out. */
  denyTools?: string[];
  allowPrompts?: string[];
  denyPrompts?: string[];
  /** A gateway: how long a session's start waits for its servers; later ones join with a list change. @defaultValue 10000 */
  upstreamStartMs?: number;
  /**
   * A gateway: how long its own requests to a server (the lists it reads, logging/setLevel) may take; a server
   * past it is left out of that list for 30 s, logged, and said on /healthz. @defaultValue 10000
   */
  upstreamListMs?: number;
  /** A gateway: how long a client's request sent on to a server may take before it is cancelled there. @defaultValue 600000 */
  upstreamCallMs?: number;
  /**
   * A gateway: requests in flight at once to one server, per gateway (a session's, or the one shared by
   * 2026-07-28 requests); past it, an error naming the server. @defaultValue 1024
   */
  maxPendingPerUpstream?: number;
  /**
   * A gateway: the sign-in of a remote server that asks for one (never the calling client's token: the
   * authorization spec forbids passing it on). Unset: remote servers get only their configured headers.
   */
  upstreamAuth?: (name: string, entry: RemoteServerConfig) => AuthOptions | undefined;
  /**
   * Sign-in: serve as an OAuth 2.1 resource server. Every HTTP request needs an access token of `issuer` for
   * `resource` (a JWT checked against the issuer's keys, or an opaque one through `introspection`); a session
   * is bound to the caller that opened it. Not with `token`, nor with `socket` (which has no caller to check).
   * Needs the jose package (loaded only then).
   */
  auth?: ServeAuthOptions;
  /**
   * Who may call which tool and prompt (see Policy): what it does not allow a caller is not listed for them, a
   * call to it is an unknown tool, or a 403 asking for the scopes that would allow it. Replace it with
   * setPolicy(). Serving through a gateway, even for one server.
   */
  policy?: Policy;
  /** Claims of the signed-in caller put in each request's `_meta` under `mcp-frame/caller` (never the token). */
  forwardClaims?: string[];
  /**
   * Prometheus metrics at /metrics (behind the same Host, token and sign-in checks as /mcp), counted with
   * prom-client (an optional peer, loaded only then); or a prom-client Registry to count into, served nowhere.
   * @defaultValue false
   */
  metrics?: boolean | MetricsRegistry;
  /** Serve /metrics on this port of 127.0.0.1 instead (no token asked: loopback only). */
  metricsPort?: number;
  /**
   * A span per request, and per request a gateway sends on, through @opentelemetry/api when it is installed (a
   * no-op until the host registers an SDK); trace context goes on in `_meta` either way. @defaultValue true
   */
  tracing?: boolean;
  /** `json`: one object a line (time, level, event, msg, and what the event has). @defaultValue 'text' */
  logFormat?: 'text' | 'json';
  /** The least level logged; `debug` adds a line per request. @defaultValue 'info' */
  logLevel?: LogLevel;
  /**
   * How long a session whose client sent nothing after its initialize (not even notifications/initialized)
   * lives: a client that gave up on its open does not hold a server for the whole idle time. @defaultValue 60000
   */
  openIdleMs?: number;
  /** Text lines start with the time (ISO 8601, UTC), as `mcp-frame serve` writes them. @defaultValue false */
  logTime?: boolean;
  /**
   * Servers starting at once (a new session's, until it answers its first message): past it a session's start
   * waits its turn. @defaultValue 4
   */
  maxStarting?: number;
  /** How long a session's start waits for its turn before it is refused (503 with Retry-After). @defaultValue 10000 */
  startWaitMs?: number;
  /** The HTTP paths of the endpoints (each `/...`, distinct, none of `/healthz` and `/metrics`). @defaultValue /mcp, /sse, /messages */
  paths?: Partial<ServePaths>;
}

export interface ServeAuthOptions {
  /** The authorization server's issuer identifier (its tokens' `iss`, exactly). */
  issuer: string;
  /** This server's public MCP URL, the tokens' audience. @defaultValue the URL serve listens on */
  resource?: string;
  /** Scopes every token must have. */
  requiredScopes?: string[];
  /** For opaque tokens (RFC 7662), with serve's own client credentials. */
  introspection?: { endpoint: string; clientId: string; clientSecret: string };
}

/** The servers serve() is given: one stdio entry, or named entries (stdio or remote) for a gateway. */
export type ServeTarget = StdioServerConfig | Record<string, ServerConfig>;

export interface ServeHandle {
  /** The Streamable HTTP endpoint (`http://host:port/mcp`, or its `paths.mcp`), when serving HTTP. */
  readonly url: string | undefined;
  /** The port HTTP listens on (the real one when 0 was asked for). */
  readonly port: number | undefined;
  readonly socketPath: string | undefined;
  /** Sessions open now, of every transport. */
  readonly sessions: number;
  /**
   * Messages of the child shared by modern requests that named no request in flight (a notification without a
   * progress token), dropped rather than sent to a client they may not belong to.
   */
  readonly unattributed: number;
  /** With metrics: the registry counted into (a prom-client Registry). */
  readonly metrics: MetricsRegistry | undefined;
  /** The /metrics URL, with metricsPort. */
  readonly metricsUrl: string | undefined;
  /** Replaces the policy (sessions open now included); undefined: none. */
  setPolicy(policy: Policy | undefined): void;
  /** Stops accepting, closes every session's child, removes the socket file. */
  close(): Promise<void>;
}

/** Tokens shorter than this get a warning at start. */
const SHORT_TOKEN = 16;

/**
 * serve's logger: the one given, or lines on stderr (`mcp-frame serve: ...`) as the options say. Either way the
 * token serve checks never reaches a line (see createLogger: whole session ids do not either).
 */
function loggerOf(options: ServeOptions): Logger {
  if (options.logger !== undefined) return options.logger;
  return createLogger({
    write: options.log ?? ((line) => void process.stderr.write(`mcp-frame serve: ${line}\n`)),
    format: options.logFormat ?? 'text',
    level: options.logLevel ?? 'info',
    time: options.logTime === true,
    secrets: options.token === undefined ? [] : [options.token],
    debugName: 'serve',
  });
}

function contextOf(entry: StdioServerConfig | undefined, options: ServeOptions): ServeContext {
  return {
    paths: { mcp: '/mcp', sse: '/sse', messages: '/messages', ...options.paths },
    entry,
    name: options.name ?? entry?.command ?? 'mcp-frame',
    inheritEnv: options.inheritEnv ?? false,
    shutdownGraceMs: options.shutdownGraceMs ?? 2000,
    maxMessageBytes: options.maxMessageBytes ?? 4 * 1024 * 1024,
    maxStreamsPerSession: options.maxStreamsPerSession ?? 1024,
    maxPendingPerSession: options.maxPendingPerSession ?? 1024,
    stream: { replayBytes: options.replayBytes ?? 1024 * 1024, retryMs: options.retryMs ?? 1000, keepaliveMs: options.keepaliveMs ?? 15_000 },
    trace: options.trace ?? false,
    log: loggerOf(options),
  };
}

function sessionTable(
  ctx: ServeContext,
  maxSessions: number,
  socketChildren: Set<ServedChild>,
  store: ReplicaStore | undefined,
  gate: StartGate,
): SessionTable {
  let admitting = 0;
  const table: SessionTable = {
    streamable: new Map(),
    legacy: new Map(),
    maxSessions,
    store,
    count: () => table.streamable.size + table.legacy.size + socketChildren.size,
    ended(kind, id, log, why) {
      void store?.release(id);
      if (table[kind].delete(id) && ctx.shuttingDown !== true) log.info('session.ended', `ended: ${why}`, { why });
    },
    async admit() {
      const id = randomUUID();
      // Sessions admitted and not yet in the table (waiting for their turn to start) count too.
      if (store === undefined && table.count() + admitting >= maxSessions) return new Refusal(503, `${maxSessions} sessions are open already`);
      if (store !== undefined) {
        const open = await store.admit(id, maxSessions).catch((err: Error) => err.message);
        if (typeof open === 'string') return new Refusal(503, open);
        if (open !== undefined) return new Refusal(503, `${maxSessions} sessions are open already across the replicas`);
      }
      // Room for it: now its server's turn to start (a burst of opens starts a few servers at a time).
      admitting++;
      const leave = await gate.enter().catch((err: Refusal) => err);
      admitting--;
      if (leave instanceof Refusal) {
        void store?.release(id);
        ctx.log.warn('session.refused', `refused a session: ${leave.reason}`, { why: leave.reason });
        return leave;
      }
      return {
        id,
        starting: (child: ServedChild) => holdUntilAnswered(child, leave),
        abandon: () => {
          leave();
          void store?.release(id);
        },
      };
    },
  };
  return table;
}

/**
 * The replicas' store, its client loaded only now (a plain serve never loads it): @redis/client is an optional
 * peer, so that a user of the framing layer does not install it; missing, a clear error naming it.
 */
async function openStore(url: string, ctx: ServeContext, options: ServeOptions): Promise<ReplicaStore> {
  const { redisStore } = await import('./redis-store.js').catch((err: unknown) => {
    throw missingPeer("serve --store keeps its replicas' state in Redis", '@redis/client', err);
  });
  const address = options.advertiseUrl === undefined ? undefined : new URL(options.advertiseUrl).origin;
  return redisStore(url, options.storePrefix ?? 'mcp-frame', ctx.log, address);
}

/** Closes sessions that have had no request and no open stream for `idleMs`; checked a few times per period. */
function sweepIdle(table: SessionTable, idleMs: number, openIdleMs: number): NodeJS.Timeout {
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const session of table.streamable.values()) {
        if (session.attachedStreams > 0) continue;
        const idle = now - session.lastActive;
        // An initialize whose client gave up (a timeout, a crash) holds a server and a place under --max-sessions:
        // reaped soon, not after the idle time of a session in use.
        if (session.abandoned && idle > openIdleMs) void session.close(`its client sent nothing after initialize for ${openIdleMs} ms`);
        else if (idle > idleMs) void session.close(`idle for ${idleMs} ms`);
      }
    },
    Math.max(20, Math.min(Math.min(idleMs, openIdleMs) / 4, 30_000)),
  );
  timer.unref();
  return timer;
}

async function listenHttp(server: http.Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as net.AddressInfo).port;
}

/** The named entries of a target, in order; one stdio entry given alone is named by its command. */
function serversOf(target: ServeTarget): Array<[string, ServerConfig]> {
  if (typeof (target as StdioServerConfig).command === 'string') return [[(target as StdioServerConfig).command, target as StdioServerConfig]];
  const servers = Object.entries(target as Record<string, ServerConfig>);
  if (servers.length === 0) throw new TypeError('serve: no server to serve (an empty map of entries)');
  for (const [name, entry] of servers) {
    if (typeof entry !== 'object' || entry === null) throw new TypeError(`serve: server "${name}" is not a config entry`);
  }
  return servers;
}

/** How a gateway reaches its servers: connect(), each child's stderr and bad frames logged under its name. */
function opener(ctx: ServeContext, options: ServeOptions, label: string): UpstreamOpener {
  return (name, entry, { capabilities, onSpawn }) => {
    const auth = isStdioServer(entry) || entry.type === 'socket' ? undefined : options.upstreamAuth?.(name, entry);
    return connect(entry, {
      name,
      capabilities,
      elicitationDefaults: false,
      inheritEnv: ctx.inheritEnv,
      shutdownGraceMs: ctx.shutdownGraceMs,
      timeoutMs: Math.max(options.upstreamStartMs ?? 10_000, 30_000),
      ...(auth === undefined ? {} : { auth }),
      onSpawn: (connection) => {
        const log = ctx.log.child({ label, upstream: name }, `${label} server "${name}"`);
        connection.on('stderr', (line: string) => log.info('server.stderr', `stderr: ${safeLine(line)}`, { line: safeLine(line) }));
        if (ctx.trace) {
          connection.on('frame', (f: FrameTrace) =>
            log.info('server.frame', `${f.direction === 'send' ? '->' : '<-'} ${f.preview}`, { direction: f.direction }),
          );
        }
        if (isStdioServer(entry)) watchChild(connection, Promise.resolve(), ctx.observer, 'exit');
        connection.on('invalid', (err: FrameError) => {
          ctx.observer?.badFrame?.('server');
          log.warn('server.bad_frame', `sent a bad frame, skipped: ${frameProblem(err)}`, { code: err.code });
        });
        onSpawn(connection);
      },
    });
  };
}

/**
 * Makes `ctx` a gateway's: each session's child is a Gateway in front of `servers`. With prefix `never`, the
 * servers are started once now and a name two of them offer is refused (an Error of code NAME_CLASH), both
 * servers named.
 */
async function gatewayOf(ctx: ServeContext, servers: Array<[string, ServerConfig]>, options: ServeOptions): Promise<void> {
  const separator = options.separator ?? '__';
  const [clash] =
    options.prefix === 'never'
      ? []
      : prefixClashes(
          servers.map(([name]) => name),
          separator,
        );
  if (clash !== undefined) {
    const [a, b] = clash;
    const example = `${b}${separator}x`.startsWith(`${a}${separator}`) ? [a, b] : [b, a];
    const rest = `${example[1]}${separator}x`.slice(example[0]!.length + separator.length);
    throw Object.assign(
      new Error(
        `separator ${JSON.stringify(separator)}: servers "${a}" and "${b}" can expose one name (${example[1]}${separator}x is "${example[0]}"'s ${rest} and "${example[1]}"'s x): rename one, or choose another --separator`,
      ),
      { code: 'NAME_CLASH' },
    );
  }
  const health = new UpstreamHealth(servers.map(([name]) => name));
  ctx.upstreams = health;
  const policy = ctx.policy;
  ctx.gateway = (label, caller) =>
    new Gateway({
      ...(caller === undefined ? {} : { caller }),
      // The gateway for modern requests serves every modern caller: it attributes, or refuses, never guesses.
      shared: label === MODERN_LABEL,
      ...(ctx.observer === undefined ? {} : { observer: ctx.observer }),
      tracing: ctx.tracing === true,
      ...(policy === undefined ? {} : { policy: () => policy.current }),
      ...(options.forwardClaims === undefined ? {} : { forwardClaims: options.forwardClaims }),
      upstreams: servers,
      open: opener(ctx, options, label),
      name: ctx.name,
      ...(options.separator === undefined ? {} : { separator: options.separator }),
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      ...(options.allowTools === undefined ? {} : { allowTools: options.allowTools }),
      ...(options.denyTools === undefined ? {} : { denyTools: options.denyTools }),
      ...(options.allowPrompts === undefined ? {} : { allowPrompts: options.allowPrompts }),
      ...(options.denyPrompts === undefined ? {} : { denyPrompts: options.denyPrompts }),
      ...(options.upstreamStartMs === undefined ? {} : { startTimeoutMs: options.upstreamStartMs }),
      ...(options.upstreamListMs === undefined ? {} : { listTimeoutMs: options.upstreamListMs }),
      ...(options.upstreamCallMs === undefined ? {} : { callTimeoutMs: options.upstreamCallMs }),
      ...(options.maxPendingPerUpstream === undefined ? {} : { maxPendingPerUpstream: options.maxPendingPerUpstream }),
      health,
      logger: ctx.log.child({ label }, `${label}:`),
    });
  if (options.prefix !== 'never' || servers.length < 2) return;
  const probe = ctx.gateway('start-up check', undefined);
  try {
    await probe.start();
    const clashes = await probe.clashes();
    if (clashes.length > 0)
      throw Object.assign(new Error(`prefix never: names offered by two servers: ${clashes.join('; ')}`), { code: 'NAME_CLASH' });
  } finally {
    await probe.close();
  }
}

/**
 * What serve reports to: Prometheus metrics (with `metrics`, served at /metrics or on `metricsPort`), spans (with
 * @opentelemetry/api installed, unless `tracing` is false), and a log line per request at level debug.
 */
async function observing(
  ctx: ServeContext,
  options: ServeOptions,
  table: SessionTable,
  store: ReplicaStore | undefined,
): Promise<{ registry: MetricsRegistry | undefined; url: string | undefined; close(): Promise<void> }> {
  ctx.tracing = options.tracing !== false && (await loadTraceApi()) !== undefined;
  const observers: Observer[] = [];
  if (options.logLevel === 'debug') observers.push(requestLog(ctx));
  let registry: MetricsRegistry | undefined;
  if (options.metrics !== undefined && options.metrics !== false) {
    const { prometheusObserver } = await import('./metrics.js');
    const upstreams = ctx.upstreams;
    const sources: MetricsSources = {
      sessions: () => ({
        streamable: table.streamable.size,
        legacy: table.legacy.size,
        socket: table.count() - table.streamable.size - table.legacy.size,
      }),
      ...(upstreams === undefined ? {} : { upstreams: () => Object.fromEntries(Object.entries(upstreams.report()).map(([n, s]) => [n, s.state])) }),
      ...(store === undefined ? {} : { storeUp: async () => (await store.problem()) === undefined }),
    };
    const made = await prometheusObserver(sources, options.metrics === true ? undefined : options.metrics);
    observers.push(made.observer);
    registry = made.registry;
    ctx.metrics = registry;
  }
  if (observers.length > 0) ctx.observer = combined(observers);
  if (registry === undefined || options.metricsPort === undefined) return { registry, url: undefined, close: async () => undefined };
  // Its own port, on loopback only: a scraper on this machine (or a sidecar) needs no token. The Host rule is
  // /mcp's: a page that a DNS-rebound name made same-origin with it reads nothing.
  let guard: Guard | undefined;
  const server = http.createServer((req, res) => {
    const refusal = guard?.check(req);
    if (refusal !== undefined) return void res.writeHead(refusal.status, { 'Content-Type': 'text/plain' }).end(`${refusal.reason}\n`);
    if (requestTarget(req.url)?.path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return void res.writeHead(404).end();
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: Error) => res.writeHead(500).end(safeLine(err.message)),
    );
  });
  const port = await listenHttp(server, '127.0.0.1', options.metricsPort);
  guard = new Guard({ host: '127.0.0.1', port, allowHosts: options.allowHosts ?? [], allowOrigins: [], token: undefined });
  return {
    registry,
    url: `http://127.0.0.1:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Observers as one: each told everything. */
function combined(observers: Observer[]): Observer {
  if (observers.length === 1) return observers[0]!;
  const all: Observer = {};
  const keys = new Set(observers.flatMap((o) => Object.keys(o))) as Set<keyof Observer>;
  for (const key of keys) {
    (all as Record<string, unknown>)[key] = (...args: unknown[]) => {
      for (const o of observers) (o[key] as ((...a: unknown[]) => void) | undefined)?.(...args);
    };
  }
  return all;
}

/** A debug line per request: method, tool, outcome and time (and the caller, when signed in). */
function requestLog(ctx: ServeContext): Observer {
  return {
    request(r, label) {
      const ms = Math.round(r.seconds * 1e4) / 10;
      const session = /^session ([0-9a-f]{8})$/.exec(label)?.[1];
      ctx.log.debug(
        'request',
        `${label} ${r.method}${r.tool === '' ? '' : ` ${safeLine(r.tool)}`}: ${r.outcome}${r.code === undefined ? '' : ` ${r.code}`} in ${ms} ms`,
        {
          ...(session === undefined ? { label } : { session }),
          method: r.method,
          ...(r.tool === '' ? {} : { tool: r.tool }),
          era: r.era,
          outcome: r.outcome,
          ...(r.code === undefined ? {} : { code: r.code }),
          duration_ms: ms,
          ...(r.caller === undefined ? {} : { caller: r.caller }),
        },
      );
    },
    upstreamRequest(r) {
      const ms = Math.round(r.seconds * 1e4) / 10;
      ctx.log.debug('upstream.request', `server "${r.upstream}" ${r.method}: ${r.outcome} in ${ms} ms`, {
        upstream: r.upstream,
        method: r.method,
        outcome: r.outcome,
        duration_ms: ms,
      });
    },
  };
}

/** Options that do not go together: a TypeError saying why. */
/** What is wrong with endpoint paths, or undefined: each a path (no query), all three apart, none of serve's own. */
export function pathsProblem(paths: Partial<ServePaths>): string | undefined {
  for (const path of Object.values(paths)) {
    if (typeof path !== 'string' || !/^\/[^?#\s]*$/.test(path) || path === '/healthz' || path === '/metrics' || path.startsWith('/.well-known/'))
      return `an endpoint path is a path such as /mcp (no query; not /healthz, /metrics or /.well-known/), got ${JSON.stringify(String(path).slice(0, 60))}`;
  }
  const all = { mcp: '/mcp', sse: '/sse', messages: '/messages', ...paths };
  if (new Set(Object.values(all)).size !== 3) return `the endpoint paths must differ, got ${Object.values(all).join(', ')}`;
  return undefined;
}

function checkOptions(options: ServeOptions): void {
  const problem = pathsProblem(options.paths ?? {});
  if (problem !== undefined) throw new TypeError(`serve: ${problem}`);
  if (options.store !== undefined && options.http === false) throw new TypeError('serve: a store shares HTTP sessions, and http is false');
  if (options.auth !== undefined && options.token !== undefined)
    throw new TypeError('serve: auth (sign-in) and a static token do not go together: give one');
  if (options.advertiseUrl !== undefined) {
    if (options.store === undefined) throw new TypeError('serve: advertiseUrl is where other replicas reach this one: it needs a store');
    const problem = advertiseProblem(options.advertiseUrl);
    if (problem !== undefined) throw new TypeError(`serve: advertiseUrl ${problem}`);
  }
  for (const key of ['maxStarting', 'startWaitMs'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isInteger(value) && value >= 1))
      throw new TypeError(`serve: ${key} takes a whole number of at least 1, got ${String(value)}`);
  }
  if (options.auth !== undefined && options.socket !== undefined)
    throw new TypeError('serve: auth (sign-in) checks HTTP callers, and a socket has none to check: serve the socket from another serve');
}

/** Why `url` cannot be a replica's advertised origin, or undefined: an http(s) origin with no path, query or credentials. */
export function advertiseProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `is not a URL: ${JSON.stringify(url.slice(0, 80))}`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `must be http:// or https://, got ${JSON.stringify(parsed.protocol)}`;
  if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials (the replicas prove themselves with a key of the store’s)';
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '')
    return `is an origin (scheme, host and port), without a path: the endpoints' paths are added to it (got ${JSON.stringify(parsed.pathname + parsed.search)})`;
  return undefined;
}

/** The resource server for `auth`, its metadata naming the scopes the policy asks for too. */
function resourceServer(ctx: ServeContext, auth: ServeAuthOptions, resource: string): ResourceServer {
  const settings: ResourceServerOptions = {
    issuer: auth.issuer,
    resource,
    ...(auth.requiredScopes === undefined ? {} : { requiredScopes: auth.requiredScopes }),
    ...(auth.introspection === undefined ? {} : { introspection: auth.introspection }),
    otherScopes: () => ctx.policy?.current?.scopes ?? [],
    log: ctx.log,
  };
  return new ResourceServer(settings);
}

/** The context of a serve of one stdio server (named by its command, or its key), or of a gateway in front of several. */
async function targetContext(target: ServeTarget, options: ServeOptions): Promise<ServeContext> {
  const servers = serversOf(target);
  // A policy and forwarded claims are the gateway's: one server gets one too (its names as they are).
  const plain = servers.length === 1 && isStdioServer(servers[0]![1]) && options.policy === undefined && options.forwardClaims === undefined;
  if (plain) return contextOf(servers[0]![1] as StdioServerConfig, { ...options, name: options.name ?? servers[0]![0] });
  const ctx = contextOf(undefined, options);
  ctx.policy = { current: options.policy };
  await gatewayOf(ctx, servers, options);
  return ctx;
}

/** Listens on HTTP and takes requests: the guard, the sign-in when asked, the store's carried requests. */
async function startHttp(httpServer: http.Server, ctx: ServeContext, options: ServeOptions, table: SessionTable, modern: ModernHub): Promise<number> {
  const host = options.host ?? '127.0.0.1';
  const store = table.store;
  // jose before listening: a serve that cannot check tokens must not start taking requests.
  if (options.auth !== undefined)
    await loadJose().catch(async (err: unknown) => {
      await store?.close();
      throw err;
    });
  const port = await listenHttp(httpServer, host, options.port ?? 0).catch(async (err: unknown) => {
    await store?.close();
    throw err;
  });
  const resource = options.auth?.resource ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}${ctx.paths.mcp}`;
  // The public URL's name is one clients use.
  const allowHosts = [...(options.allowHosts ?? []), ...(options.auth === undefined ? [] : [new URL(resource).host])];
  const guard = new Guard({ host, port, allowHosts, allowOrigins: options.allowOrigins ?? [], token: options.token });
  if (options.auth !== undefined) ctx.resourceServer = resourceServer(ctx, options.auth, resource);
  const front = new HttpFront(ctx, guard, table, modern);
  httpServer.on('request', (req, res) => front.handle(req, res));
  store?.onForwarded((request, res) => front.forwarded(request, res));
  if (options.token !== undefined && options.token.length < SHORT_TOKEN)
    ctx.log.warn(
      'config.warning',
      `warning: the token is ${options.token.length} characters: one that short is easy to guess (use ${SHORT_TOKEN * 2} or more random ones)`,
    );
  if (!isLoopback(host) && options.token === undefined && options.auth === undefined)
    ctx.log.warn('config.warning', `warning: listening on ${host}, reachable from other machines, with no token (set one with --token-env)`, {
      host,
    });
  // On every interface, the names clients may use are this machine's addresses: anything else (a DNS name, a
  // balancer's) is refused 403 until --allow-host admits it.
  if (host === '0.0.0.0' || host === '::')
    ctx.log.info('hosts.admitted', `admitting Host ${guard.hosts.join(', ')} (others are refused 403: add the names clients use with --allow-host)`, {
      hosts: guard.hosts,
    });
  return port;
}

/** Each socket connection a session of its own, admitted as HTTP sessions are (counted together). */
function takeConnections(socketServer: net.Server, ctx: ServeContext, table: SessionTable, socketChildren: Set<ServedChild>): void {
  const store = table.store;
  let connections = 0;
  socketServer.on('connection', (socket) => {
    // A peer that resets while its admission is decided must not end the process.
    socket.on('error', () => undefined);
    // Nothing starts until the peer sends its first bytes: a connection that sends none (a second serve
    // checking that the socket is live, a health probe) is no session and starts no server.
    socket.once('readable', () => {
      if (socket.readableLength === 0) return void socket.destroy();
      admitConnection(socket);
    });
  });
  const admitConnection = (socket: net.Socket): void => {
    const n = ++connections;
    const label = `socket connection ${n}`;
    void table.admit().then((room) => {
      if (room instanceof Refusal || socket.destroyed) {
        if (room instanceof Refusal)
          ctx.log.warn('session.refused', `refused a socket connection: ${room.reason}`, { why: room.reason, transport: 'socket' });
        else room.abandon();
        socket.destroy();
        return;
      }
      const log = ctx.log.child({ connection: n, transport: 'socket' }, label);
      const child = serveConnection(socket, ctx, label, log);
      room.starting(child);
      ctx.observer?.sessionOpened?.('socket');
      socketChildren.add(child);
      log.info('session.started', `started${pidNote(child)}`, child.pid === undefined ? {} : { pid: child.pid });
      child.on('close', () => {
        socketChildren.delete(child);
        void store?.release(room.id);
        log.info('session.ended', 'ended');
      });
    });
  };
}

/**
 * Serves the stdio server `target` over HTTP (Streamable HTTP at /mcp, legacy SSE at /sse) and, with
 * `socket`, a local socket. Resolves once listening. Given named entries instead (stdio or remote, in config
 * order), serves them all as one server: a gateway (see ServeOptions.prefix and docs/serve-and-bridge.md).
 *
 * @example
 * ```ts
 * const served = await serve({ command: 'node', args: ['server.js'] }, { port: 0 });
 * console.log(served.url); // http://127.0.0.1:<port>/mcp
 * await served.close();
 *
 * const gateway = await serve({ files: { command: 'node', args: ['files.js'] }, docs: { type: 'http', url: 'https://docs.example/mcp' } });
 * ```
 */
export async function serve(target: ServeTarget, options: ServeOptions = {}): Promise<ServeHandle> {
  checkOptions(options);
  const ctx = await targetContext(target, options);
  const host = options.host ?? '127.0.0.1';
  const socketChildren = new Set<ServedChild>();
  const store = options.store === undefined ? undefined : await openStore(options.store, ctx, options);
  if (store !== undefined) ctx.replica = store.replica;
  const gate = new StartGate(options.maxStarting ?? 4, options.startWaitMs ?? 10_000);
  const table = sessionTable(ctx, options.maxSessions ?? 32, socketChildren, store, gate);
  const httpServer = options.http === false ? undefined : http.createServer();
  const socketServer = options.socket === undefined ? undefined : net.createServer();
  const modern = new ModernHub(ctx);
  const watching = await observing(ctx, options, table, store);
  let port: number | undefined;
  if (httpServer !== undefined) port = await startHttp(httpServer, ctx, options, table, modern);
  if (socketServer !== undefined) {
    takeConnections(socketServer, ctx, table, socketChildren);
    await listenSocket(options.socket!, socketServer).catch(async (err: unknown) => {
      await new Promise((resolve) => httpServer?.close(resolve) ?? resolve(undefined));
      throw err;
    });
  }
  const idleMs = options.sessionIdleMs ?? 1_800_000;
  const sweeper = sweepIdle(table, idleMs, Math.min(idleMs, options.openIdleMs ?? 60_000));
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    ctx.shuttingDown = true;
    const drainMs = options.drainMs ?? 0;
    if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
    clearInterval(sweeper);
    gate.close();
    const stopped = Promise.all([httpServer, socketServer].map((s) => s && new Promise((resolve) => s.close(resolve))));
    await Promise.all([
      ...[...table.streamable.values(), ...table.legacy.values()].map((s) => s.close('the server is shutting down')),
      ...[...socketChildren].map((c) => c.close()),
      modern.close(),
    ]);
    await store?.close();
    await watching.close();
    httpServer?.closeAllConnections();
    await stopped;
    if (options.socket !== undefined) removeSocket(options.socket);
  };
  return {
    url: port === undefined ? undefined : `http://${host.includes(':') ? `[${host}]` : host}:${port}${ctx.paths.mcp}`,
    port,
    socketPath: options.socket,
    get sessions() {
      return table.count();
    },
    metrics: watching.registry,
    metricsUrl: watching.url,
    setPolicy(policy) {
      if (ctx.policy === undefined)
        throw new TypeError('setPolicy: serve was started without a policy (give one, even an empty one, to replace it later)');
      ctx.policy.current = policy;
    },
    get unattributed() {
      return modern.dropped;
    },
    close: () => {
      closing ??= close();
      return closing;
    },
  };
}
