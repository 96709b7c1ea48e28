/*
 * `serve`: offers a stdio MCP server over Streamable HTTP (/mcp), the deprecated HTTP+SSE transport (/sse)
 * and a local socket, one child process per session, safe by default. Given several servers (a map of named
 * entries, stdio or remote), it is a gateway: each session gets a Gateway (lib/gateway) where it would get a
 * child, and the Gateway is a client of each server.
 *
 * This file is the composition root: it reads the options and makes each room's parts, each given what it uses,
 * in an order where nothing is used before it is made (observe, then the children, the store and the context, then
 * the sessions, then the HTTP front). The rooms: observe/ (events and their subscribers), identity/ (the resource
 * server), replicas/ (the store shared by replicas), sessions/ (sessions, children, the table), http/ (the front).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { isStdioServer, type StdioServerConfig } from '../client/config.js';
import { missingPeer, safeLine } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { isLoopback } from '../protocol/loopback.js';
import { requestTarget } from '../protocol/target.js';
import { loadTraceApi } from '../protocol/trace.js';
import { CallLimits, countingResponse, Guard, HttpFront, listenHttp } from './http/index.js';
import { parseRate } from '../gateway/rate.js';
import { TokenExchange } from '../gateway/exchange.js';
import { loadJose, ResourceServer } from './identity/index.js';
import { auditTrail, logRequests, type MetricsRegistry, prometheusMetrics, RequestTap, Telemetry, traceRequests } from './observe/index.js';
import { checkOptions, type ServeConfig, type ServeHandle, type ServeOptions, type ServeTarget, serversOf } from './options.js';
import type { ReplicaStore } from './replicas/index.js';
import {
  type Children,
  gatewayChildren,
  listenSocket,
  ModernHub,
  removeSocket,
  type ServeContext,
  type ServedChild,
  type SessionTable,
  StartGate,
  sessionTable,
  stdioChildren,
  sweepIdle,
  takeConnections,
  type Watchers,
} from './sessions/index.js';

export type { ServeAuthOptions, ServeConfig, ServeHandle, ServeOptions, ServeTarget, ServeTls } from './options.js';
export type { ServerChanges } from '../gateway/upstream.js';

/** Tokens shorter than this get a warning at start. */
const SHORT_TOKEN = 16;

/**
 * serve's logger: the one given, or lines on stderr (`mcp-frame serve: ...`) as the options say. Either way the
 * token serve checks never reaches a line (see createLogger: whole session ids do not either).
 */
export function loggerOf(options: ServeOptions): Logger {
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

/**
 * The children of sessions, for `target`: one stdio server's processes, or gateways in front of several servers
 * (and a policy holder for them, which setPolicy replaces in place). A policy and forwarded claims are the
 * gateway's: one server gets one too (its names as they are).
 */
async function childrenOf(
  target: ServeTarget,
  options: ServeOptions,
  watchers: Watchers,
  log: Logger,
  tracing: boolean,
  replica: string | undefined,
): Promise<{ children: Children; policy: { current: ServeOptions['policy'] } | undefined }> {
  const servers = serversOf(target);
  const settings = { inheritEnv: options.inheritEnv ?? false, shutdownGraceMs: options.shutdownGraceMs ?? 2000 };
  const only = servers.length === 1 ? servers[0]! : undefined;
  const plain =
    options.gateway !== true &&
    options.share !== true &&
    options.policy === undefined &&
    options.forwardClaims === undefined &&
    options.toolSearch !== true;
  if (only !== undefined && isStdioServer(only[1]) && plain) {
    const name = options.name ?? only[0];
    return { children: stdioChildren(only[1] as StdioServerConfig, { name, ...settings }, watchers), policy: undefined };
  }
  const unknown = (options.isolate ?? []).filter((name) => !servers.some(([server]) => server === name));
  if (unknown.length > 0)
    throw new TypeError(
      `serve: isolate names ${unknown.map((n) => JSON.stringify(n)).join(', ')}, not a server here (${servers.map(([n]) => n).join(', ')})`,
    );
  const policy = { current: options.policy };
  const children = await gatewayChildren(
    servers,
    {
      ...settings,
      name: options.name ?? 'mcp-frame',
      tracing,
      policy,
      upstreamAuth: options.upstreamAuth,
      startTimeoutMs: options.upstreamStartMs,
      separator: options.separator,
      prefix: options.prefix,
      allowTools: options.allowTools,
      denyTools: options.denyTools,
      allowPrompts: options.allowPrompts,
      denyPrompts: options.denyPrompts,
      listTimeoutMs: options.upstreamListMs,
      callTimeoutMs: options.upstreamCallMs,
      maxPendingPerUpstream: options.maxPendingPerUpstream,
      forwardClaims: options.forwardClaims,
      prefixOne: options.gateway === true,
      // A retry of an input_required another replica made is carried to the replica that holds its call.
      statePrefix: replica,
      isolate: options.isolate,
      toolSearch: options.toolSearch === true ? { pin: options.pinTools ?? [] } : undefined,
      exchange: tokenExchange(options),
    },
    watchers,
    log,
  );
  return { children, policy };
}

/**
 * The token exchange for servers reached with each caller's own token (gateway/exchange.ts): with sign-in, and the
 * gateway's client at the authorization server named by MCP_FRAME_EXCHANGE_CLIENT_ID and _SECRET; none otherwise
 * (a server that needs it is then refused at start, by the gateway's children).
 */
function tokenExchange(options: ServeOptions): TokenExchange | undefined {
  const clientId = process.env.MCP_FRAME_EXCHANGE_CLIENT_ID;
  const clientSecret = process.env.MCP_FRAME_EXCHANGE_CLIENT_SECRET;
  if (options.auth === undefined || !clientId || !clientSecret) return undefined;
  return new TokenExchange({ issuer: options.auth.issuer, clientId, clientSecret });
}

/**
 * The replicas' store, its client loaded only now (a plain serve never loads it): @redis/client is an optional
 * peer, so that a user of the framing layer does not install it; missing, a clear error naming it.
 */
async function openStore(url: string, log: Logger, options: ServeOptions): Promise<ReplicaStore> {
  const { redisStore } = await import('./replicas/redis-store.js').catch((err: unknown) => {
    throw missingPeer("serve --store keeps its replicas' state in Redis", '@redis/client', err);
  });
  const address = options.advertiseUrl === undefined ? undefined : new URL(options.advertiseUrl).origin;
  return redisStore(url, options.storePrefix ?? 'mcp-frame', log, address);
}

/**
 * What serve reports to, subscribed to its events before any session: Prometheus metrics (with `metrics`), spans
 * (with @opentelemetry/api installed, unless `tracing` is false), and a log line per request at level debug.
 */
async function subscribe(ctx: ServeContext, options: ServeOptions, tracing: boolean, table: SessionTable, store: ReplicaStore | undefined) {
  const { telemetry, log, children } = ctx;
  if (tracing) traceRequests(telemetry);
  if (options.logLevel === 'debug') logRequests(telemetry, log);
  if (options.metrics === undefined || options.metrics === false) return undefined;
  const health = children.health;
  return prometheusMetrics(
    telemetry,
    {
      sessions: () => ({
        streamable: table.streamable.size,
        legacy: table.legacy.size,
        socket: table.count() - table.streamable.size - table.legacy.size,
      }),
      ...(health === undefined ? {} : { upstreams: () => Object.fromEntries(Object.entries(health.report()).map(([n, s]) => [n, s.state])) }),
      ...(store === undefined ? {} : { storeUp: async () => (await store.problem()) === undefined }),
    },
    options.metrics === true ? undefined : options.metrics,
  );
}

/**
 * /metrics on a port of its own (loopback unless `host` says another address, for a scraper in another pod): no
 * token is asked. The Host rule is /mcp's: a page that a DNS-rebound name made same-origin with it reads nothing.
 */
async function metricsPort(
  registry: MetricsRegistry,
  host: string,
  port: number,
  allowHosts: string[],
): Promise<{ url: string; close(): Promise<void> }> {
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
  const listening = await listenHttp(server, host, port);
  guard = new Guard({ host, port: listening, allowHosts, allowOrigins: [], token: undefined });
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${listening}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The parts of a serve that the HTTP front needs besides the context. */
interface HttpParts {
  table: SessionTable;
  modern: ModernHub;
  policy: { current: ServeOptions['policy'] } | undefined;
  metrics: MetricsRegistry | undefined;
}

/** The endpoint's scheme: https with `tls`. */
const schemeOf = (options: ServeOptions): string => (options.tls === undefined ? 'http' : 'https');

/**
 * The HTTP server, or with `tls` the HTTPS one (the same request API: everything after takes it as an
 * http.Server); its responses count their bytes when `telemetry` is given (metrics).
 */
function httpServerOf(options: ServeOptions, telemetry: Telemetry | undefined): http.Server {
  const counting = telemetry === undefined ? {} : { ServerResponse: countingResponse(telemetry) };
  if (options.tls === undefined) return http.createServer(counting);
  return https.createServer({ ...counting, cert: options.tls.cert, key: options.tls.key }) as unknown as http.Server;
}

/**
 * Listens on HTTP (TCP, and with httpSocket a local socket too, or the socket alone) and takes requests: the
 * guard, the sign-in when asked, the store's carried requests. The TCP port, when there is one.
 */
async function startHttp(
  servers: { tcp: http.Server | undefined; local: http.Server | undefined },
  ctx: ServeContext,
  options: ServeOptions,
  parts: HttpParts,
): Promise<number | undefined> {
  const host = options.host ?? '127.0.0.1';
  const store = parts.table.store;
  // jose before listening: a serve that cannot check tokens must not start taking requests.
  const port = await (options.auth === undefined ? Promise.resolve() : loadJose())
    .then(() => (servers.tcp === undefined ? undefined : listenHttp(servers.tcp, host, options.port ?? 0)))
    .then(async (port) => {
      if (servers.local !== undefined) await listenSocket(options.httpSocket!, servers.local);
      return port;
    })
    .catch(async (err: unknown) => {
      await new Promise((resolve) => (servers.tcp?.listening === true ? servers.tcp.close(resolve) : resolve(undefined)));
      await store?.close();
      throw err;
    });
  const auth = options.auth;
  const resource =
    auth?.resource ??
    (port === undefined
      ? `http://localhost${ctx.paths.mcp}`
      : `${schemeOf(options)}://${host.includes(':') ? `[${host}]` : host}:${port}${ctx.paths.mcp}`);
  // The public URL's name is one clients use; `localhost` is what a client of the local socket sends.
  const allowHosts = [
    ...(options.allowHosts ?? []),
    ...(auth === undefined ? [] : [new URL(resource).host]),
    ...(servers.local === undefined ? [] : ['localhost']),
  ];
  const guard = new Guard({ host, port: port ?? 80, allowHosts, allowOrigins: options.allowOrigins ?? [], token: options.token });
  const policy = parts.policy;
  const identity =
    auth === undefined
      ? undefined
      : new ResourceServer({
          issuer: auth.issuer,
          resource,
          ...(auth.requiredScopes === undefined ? {} : { requiredScopes: auth.requiredScopes }),
          ...(auth.introspection === undefined ? {} : { introspection: auth.introspection }),
          ...(auth.dpop === undefined ? {} : { dpop: auth.dpop }),
          localPath: ctx.paths.mcp,
          ...(store === undefined ? {} : { claimOnce: (jti: string, ttlMs: number) => store.claimOnce('dpop', jti, ttlMs) }),
          otherScopes: () => policy?.current?.scopes ?? [],
          log: ctx.log,
        });
  const limits = new CallLimits(
    options.rateLimit === undefined ? undefined : parseRate(options.rateLimit, 'rateLimit'),
    policy,
    store === undefined ? undefined : (key, rate) => store.rate(key, rate.count, rate.periodMs),
    options.toolSearch === true,
  );
  const front = new HttpFront(ctx, { guard, sessions: parts.table, modern: parts.modern, identity, policy, metrics: parts.metrics, limits });
  for (const server of [servers.tcp, servers.local]) server?.on('request', (req, res) => front.handle(req, res));
  store?.onForwarded((request, res) => front.forwarded(request, res));
  warnAtStart(ctx.log, options, host, guard);
  return port;
}

/** What an operator should hear of at start: a short token, no token where others can reach, the Host names taken. */
function warnAtStart(log: Logger, options: ServeOptions, host: string, guard: Guard): void {
  if (options.token !== undefined && options.token.length < SHORT_TOKEN)
    log.warn(
      'config.warning',
      `warning: the token is ${options.token.length} characters: one that short is easy to guess (use ${SHORT_TOKEN * 2} or more random ones)`,
    );
  if (!isLoopback(host) && options.token === undefined && options.auth === undefined)
    log.warn('config.warning', `warning: listening on ${host}, reachable from other machines, with no token (set one with --token-env)`, { host });
  // On every interface, the names clients may use are this machine's addresses: anything else (a DNS name, a
  // balancer's) is refused 403 until --allow-host admits it.
  if (host === '0.0.0.0' || host === '::')
    log.info('hosts.admitted', `admitting Host ${guard.hosts.join(', ')} (others are refused 403: add the names clients use with --allow-host)`, {
      hosts: guard.hosts,
    });
}

/** The context every session is given, whole. */
function contextOf(options: ServeOptions, log: Logger, children: Children, watchers: Watchers, store: ReplicaStore | undefined): ServeContext {
  return {
    paths: { mcp: '/mcp', sse: '/sse', messages: '/messages', ...options.paths },
    children,
    maxMessageBytes: options.maxMessageBytes ?? 4 * 1024 * 1024,
    maxStreamsPerSession: options.maxStreamsPerSession ?? 1024,
    maxPendingPerSession: options.maxPendingPerSession ?? 1024,
    stream: { replayBytes: options.replayBytes ?? 1024 * 1024, retryMs: options.retryMs ?? 1000, keepaliveMs: options.keepaliveMs ?? 15_000 },
    trace: watchers.trace,
    log,
    telemetry: watchers.telemetry,
    requests: watchers.requests,
    lifecycle: { closing: false, startFailure: undefined },
    replica: store?.replica,
  };
}

/** Everything a running serve holds, to close it. */
interface Running {
  ctx: ServeContext;
  options: ServeOptions;
  table: SessionTable;
  gate: StartGate;
  modern: ModernHub;
  socketChildren: Set<ServedChild>;
  servers: Array<http.Server | net.Server | undefined>;
  sweeper: NodeJS.Timeout;
  metricsServer: { close(): Promise<void> } | undefined;
  audit: { close(): void };
}

/** Stops accepting, drains (drainMs), closes every session and child, the store, and the listeners. */
async function closeAll(r: Running): Promise<void> {
  r.ctx.lifecycle.closing = true;
  const drainMs = r.options.drainMs ?? 0;
  if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
  clearInterval(r.sweeper);
  r.gate.close();
  const stopped = Promise.all(r.servers.map((s) => s && new Promise((resolve) => s.close(resolve))));
  await Promise.all([
    ...[...r.table.streamable.values(), ...r.table.legacy.values()].map((s) => s.close('the server is shutting down')),
    ...[...r.socketChildren].map((c) => c.close()),
    r.modern.close(),
  ]);
  await r.ctx.children.close();
  await r.table.store?.close();
  await r.metricsServer?.close();
  r.audit.close();
  r.ctx.telemetry.close();
  for (const server of [r.servers[0], r.servers[2]]) (server as http.Server | undefined)?.closeAllConnections();
  await stopped;
  if (r.options.socket !== undefined) removeSocket(r.options.socket);
  if (r.options.httpSocket !== undefined) removeSocket(r.options.httpSocket);
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
export async function serve(target: ServeTarget, given: ServeOptions | ServeConfig = {}): Promise<ServeHandle> {
  const options = checkOptions(given);
  const log = loggerOf(options);
  const telemetry = new Telemetry();
  const watchers: Watchers = { telemetry, requests: new RequestTap(telemetry), trace: options.trace ?? false };
  // First of what serve opens: a file it cannot open is refused before anything else is started.
  const audit = auditTrail(telemetry, log, options.auditLog);
  const tracing = options.tracing !== false && (await loadTraceApi()) !== undefined;
  const store = options.store === undefined ? undefined : await openStore(options.store, log, options);
  const { children, policy } = await childrenOf(target, options, watchers, log, tracing, store?.replica).catch(async (err: unknown) => {
    await store?.close();
    throw err;
  });
  const ctx = contextOf(options, log, children, watchers, store);
  const gate = new StartGate(options.maxStarting ?? 4, options.startWaitMs ?? 10_000);
  const socketChildren = new Set<ServedChild>();
  const table = sessionTable(ctx, options.maxSessions ?? 32, socketChildren, store, gate);
  const metrics = await subscribe(ctx, options, tracing, table, store);
  const modern = new ModernHub(ctx);
  const counted = metrics === undefined ? undefined : telemetry;
  const httpServer = options.http === false ? undefined : httpServerOf(options, counted);
  const localHttp = options.httpSocket === undefined ? undefined : httpServerOf({}, counted);
  const socketServer = options.socket === undefined ? undefined : net.createServer();
  const port =
    httpServer === undefined && localHttp === undefined
      ? undefined
      : await startHttp({ tcp: httpServer, local: localHttp }, ctx, options, { table, modern, policy, metrics });
  if (socketServer !== undefined) {
    takeConnections(socketServer, ctx, table, socketChildren);
    await listenSocket(options.socket!, socketServer).catch(async (err: unknown) => {
      for (const server of [httpServer, localHttp]) await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
      throw err;
    });
  }
  const metricsServer =
    metrics === undefined || options.metricsPort === undefined
      ? undefined
      : await metricsPort(metrics, options.metricsHost ?? '127.0.0.1', options.metricsPort, options.allowHosts ?? []);
  const idleMs = options.sessionIdleMs ?? 1_800_000;
  const sweeper = sweepIdle(table, idleMs, Math.min(idleMs, options.openIdleMs ?? 60_000));
  const running: Running = {
    ctx,
    options,
    table,
    gate,
    modern,
    socketChildren,
    servers: [httpServer, socketServer, localHttp],
    sweeper,
    metricsServer,
    audit,
  };
  let closing: Promise<void> | undefined;
  const host = options.host ?? '127.0.0.1';
  return {
    url: port === undefined ? undefined : `${schemeOf(options)}://${host.includes(':') ? `[${host}]` : host}:${port}${ctx.paths.mcp}`,
    port,
    socketPath: options.socket,
    httpSocketPath: options.httpSocket,
    get sessions() {
      return table.count();
    },
    metrics,
    metricsUrl: metricsServer?.url,
    setTls(tls) {
      if (options.tls === undefined || httpServer === undefined) throw new TypeError('setTls: serve was started without tls');
      (httpServer as unknown as https.Server).setSecureContext({ cert: tls.cert, key: tls.key });
    },
    setPolicy(next) {
      if (policy === undefined)
        throw new TypeError('setPolicy: serve was started without a policy (give one, even an empty one, to replace it later)');
      policy.current = next;
      ctx.children.policyChanged();
    },
    setServers: (servers) => ctx.children.reconfigure(Object.entries(servers)),
    get unattributed() {
      return modern.dropped + (ctx.children.dropped ?? 0);
    },
    close: () => {
      closing ??= closeAll(running);
      return closing;
    },
  };
}
