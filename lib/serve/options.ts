/*
 * What serve() is given: its options (one key per `mcp-frame serve` flag), the servers it serves, and the handle it
 * gives back; the checks of options that do not go together, made before anything starts.
 */
import type { AuthOptions } from '../client/auth/types.js';
import type { RemoteServerConfig, ServerConfig, StdioServerConfig } from '../client/config.js';
import type { PrefixMode } from '../gateway/names.js';
import type { Policy } from '../gateway/policy.js';
import type { ServerChanges } from '../gateway/upstream.js';
import { parseRate } from '../gateway/rate.js';
import type { Logger, LogLevel } from '../log.js';
import type { MetricsRegistry } from './observe/index.js';
import type { ServePaths } from './sessions/index.js';

export interface ServeOptions {
  /** The address HTTP listens on. @defaultValue '127.0.0.1' */
  host?: string;
  /** @defaultValue 0 (a free port) */
  port?: number;
  /** Serve HTTP at all (false: the socket only). @defaultValue true */
  http?: boolean;
  /**
   * Serve HTTPS on the same port: a certificate and its key (PEM). The endpoint's URL is then https, and a
   * certificate renewed is put in place with setTls() (the command line re-reads its files on SIGHUP).
   */
  tls?: ServeTls;
  /** A Unix socket path (a named pipe path on Windows) to listen on as well, with NDJSON framing. */
  socket?: string;
  /**
   * A Unix socket path (a named pipe path on Windows) to offer the same HTTP endpoints on (/mcp, /sse, /healthz),
   * created with mode 0600: beside TCP, or with `http: false` instead of it. Its clients send `Host: localhost`.
   */
  httpSocket?: string;
  /** The bearer token every HTTP request must carry. Unset: none is asked for. */
  token?: string;
  /** Origins (besides this server's own) whose pages may call it. */
  allowOrigins?: string[];
  /** Host header values (besides the address listened on, and localhost) to admit. */
  allowHosts?: string[];
  /**
   * Tool search: tools/list gives two tools of the gateway's own, search_tools and call_tool, and the tools
   * `pinTools` names, in place of every tool; a call of any tool by its name still works. Serves through a
   * gateway, even one server. @defaultValue false
   */
  toolSearch?: boolean;
  /** With toolSearch: globs of exposed tool names listed beside the two. */
  pinTools?: string[];
  /**
   * One stdio server: every session shares one child (through a gateway that keeps each session's requests,
   * progress, questions, log level and subscriptions its own), its names as they are, in place of a child per
   * session. For a server that keeps no state per client. @defaultValue false
   */
  share?: boolean;
  /** Sessions open at once, of every transport; past it, 503. @defaultValue 32 */
  maxSessions?: number;
  /**
   * tools/call a caller may make, `<n>/<s|m|h>` (by issuer and subject when signed in, else by address; across
   * replicas with a store); past it, 429 with Retry-After (see also a policy rule's `rate`). Unset: no limit.
   */
  rateLimit?: string;
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
  /**
   * Serve the servers as a gateway even when there is one: its tools and prompts named `<server>__<name>` as they
   * would be beside others (`serve --all` does), so that a policy or a filter written for the gateway holds when a
   * second server is added. @defaultValue false: one stdio server is served as it is
   */
  gateway?: boolean;
  /** A gateway: what joins a server's name and its tool's. @defaultValue '__' */
  separator?: string;
  /**
   * A gateway: the servers that keep state per client (roots, a login, a working directory). Every server runs once
   * for all sessions of both eras unless it is named here; then every session of the initialize era gets a child of
   * it of its own (2026-07-28 requests share one), and the other servers still run once for everyone.
   */
  isolate?: string[];
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
   * A gateway: requests in flight at once to one server, for every session together (each session's own, with
   * `isolate`); past it, an error naming the server. @defaultValue 1024
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
  /**
   * A file to append the audit trail to, one JSON object a line (made readable by its owner only): a record per
   * tools/call, prompts/get and resources/read a gateway sends on or refuses. The records go to the log anyway.
   */
  auditLog?: string;
  /** Serve /metrics on this port instead, of `metricsHost` (no token asked; the Host check of /mcp). */
  metricsPort?: number;
  /**
   * The address the `metricsPort` listener binds: `0.0.0.0` (or a pod's address) lets a Prometheus on another
   * machine scrape. Its Host check admits that address, localhost and `allowHosts`. @defaultValue '127.0.0.1'
   */
  metricsHost?: string;
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
  /**
   * DPoP (RFC 9449): a token bound to a key is taken only with a proof of each request (always); `require` also
   * refuses tokens that are not bound. @defaultValue 'allow'
   */
  dpop?: 'allow' | 'require';
}

/**
 * serve()'s options grouped as `mcp-frame serve --config` groups its flags: each group holds the ServeOptions of
 * its flags (the gateway's `all` is ServeOptions' `gateway`: a gateway even for one server).
 */
const SERVE_GROUPS = {
  listen: ['host', 'port', 'http', 'tls', 'socket', 'httpSocket', 'paths'],
  access: ['token', 'allowOrigins', 'allowHosts'],
  limits: [
    'maxSessions',
    'rateLimit',
    'maxStarting',
    'startWaitMs',
    'sessionIdleMs',
    'openIdleMs',
    'maxMessageBytes',
    'maxStreamsPerSession',
    'maxPendingPerSession',
    'replayBytes',
    'drainMs',
    'keepaliveMs',
    'retryMs',
    'shutdownGraceMs',
  ],
  gateway: [
    'name',
    'share',
    'toolSearch',
    'pinTools',
    'prefix',
    'separator',
    'isolate',
    'allowTools',
    'denyTools',
    'allowPrompts',
    'denyPrompts',
    'upstreamStartMs',
    'upstreamListMs',
    'upstreamCallMs',
    'maxPendingPerUpstream',
    'upstreamAuth',
    'inheritEnv',
  ],
  identity: ['auth', 'policy', 'forwardClaims'],
  replicas: ['store', 'storePrefix', 'advertiseUrl'],
  observe: ['trace', 'log', 'logger', 'logFormat', 'logLevel', 'logTime', 'metrics', 'metricsPort', 'metricsHost', 'tracing', 'auditLog'],
} as const satisfies Record<string, ReadonlyArray<keyof ServeOptions>>;

type Groups = typeof SERVE_GROUPS;

/** serve()'s options, grouped (see SERVE_GROUPS): `serve(servers, { listen: { port: 0 }, limits: { maxSessions: 64 } })`. */
export type ServeConfig = { [G in Exclude<keyof Groups, 'gateway'>]?: Pick<ServeOptions, Groups[G][number]> } & {
  gateway?: Pick<ServeOptions, Groups['gateway'][number]> & { all?: boolean };
};

/**
 * Options given grouped (any group key, or `gateway` an object), made flat; flat ones as they are. A key outside
 * the groups, a group that is not an object, or a key its group does not hold is a TypeError naming its path.
 */
function flatOptions(options: ServeOptions | ServeConfig): ServeOptions {
  const entries = Object.entries(options);
  const grouped = entries.some(([key, value]) => key in SERVE_GROUPS && (key !== 'gateway' || (typeof value === 'object' && value !== null)));
  if (!grouped) return options as ServeOptions;
  const flat: Record<string, unknown> = {};
  for (const [group, body] of entries) {
    const keys: readonly string[] | undefined = (SERVE_GROUPS as Record<string, readonly string[]>)[group];
    if (keys === undefined)
      throw new TypeError(`serve: options are flat or grouped, not both: ${group} is not a group (${Object.keys(SERVE_GROUPS).join(', ')})`);
    if (body === undefined) continue;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new TypeError(`serve: ${group} must be an object`);
    for (const [key, value] of Object.entries(body)) {
      const all = group === 'gateway' && key === 'all';
      if (!all && !keys.includes(key)) throw new TypeError(`serve: ${group}.${key}: not an option of ${group} (${keys.join(', ')})`);
      const own = all ? 'gateway' : key;
      flat[own] = value;
    }
  }
  return flat as ServeOptions;
}

/** The servers serve() is given: one stdio entry, or named entries (stdio or remote) for a gateway. */
export type ServeTarget = StdioServerConfig | Record<string, ServerConfig>;

/** A certificate (its chain, PEM) and its private key (PEM), to serve HTTPS with. */
export interface ServeTls {
  cert: string | Buffer;
  key: string | Buffer;
}

export interface ServeHandle {
  /** The Streamable HTTP endpoint (`http://host:port/mcp`, https with `tls`, or its `paths.mcp`), when serving HTTP. */
  readonly url: string | undefined;
  /** The port HTTP listens on (the real one when 0 was asked for). */
  readonly port: number | undefined;
  readonly socketPath: string | undefined;
  /** The local socket serving HTTP (httpSocket), when there is one. */
  readonly httpSocketPath: string | undefined;
  /** Sessions open now, of every transport. */
  readonly sessions: number;
  /**
   * Messages of the child shared by modern requests (and of the servers shared by every session behind isolated
   * ones) that could be attributed to no request in flight, dropped (a request: refused) rather than sent to a
   * client they may not belong to.
   */
  readonly unattributed: number;
  /** With metrics: the registry counted into (a prom-client Registry). */
  readonly metrics: MetricsRegistry | undefined;
  /** The /metrics URL, with metricsPort. */
  readonly metricsUrl: string | undefined;
  /** Replaces the policy (sessions open now included); undefined: none. */
  setPolicy(policy: Policy | undefined): void;
  /**
   * Replaces the servers (a reload): one added is offered to the sessions, and they are told their lists changed;
   * one removed leaves their lists at once and its processes are closed when their calls end; one whose entry
   * changed is started anew; one whose entry is the same is not touched (its processes and sessions go on).
   * Rejects, the servers in force kept, on servers a gateway cannot take (none; names that can clash). One stdio
   * server served without a gateway takes only a changed entry of its own, used by the sessions to come.
   */
  setServers(servers: Record<string, ServerConfig>): Promise<ServerChanges>;
  /** With `tls`: replaces the certificate and key for the connections to come (those open keep theirs). */
  setTls(tls: ServeTls): void;
  /** Stops accepting, closes every session's child, removes the socket file. */
  close(): Promise<void>;
}

/** Tokens shorter than this get a warning at start. */

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

/** Options that do not go together: a TypeError saying why. */
/** The options made flat (see flatOptions) and checked: what does not go together is a TypeError naming it. */
export function checkOptions(given: ServeOptions | ServeConfig): ServeOptions {
  const options = flatOptions(given);
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
  if (options.pinTools !== undefined && options.toolSearch !== true) throw new TypeError('serve: pinTools is for toolSearch: give toolSearch: true');
  if (options.rateLimit !== undefined) {
    try {
      parseRate(options.rateLimit, 'serve: rateLimit');
    } catch (err) {
      throw new TypeError((err as Error).message);
    }
  }
  if (options.httpSocket !== undefined && options.httpSocket === options.socket)
    throw new TypeError('serve: httpSocket and socket are two sockets: give them two paths');
  if (options.tls !== undefined && options.http === false) throw new TypeError('serve: tls is for HTTP, and http is false');
  if (options.metricsHost !== undefined && options.metricsPort === undefined)
    throw new TypeError('serve: metricsHost is the address of the metricsPort listener: give metricsPort too');
  if (options.auth !== undefined && options.socket !== undefined)
    throw new TypeError('serve: auth (sign-in) checks HTTP callers, and a socket has none to check: serve the socket from another serve');
  return options;
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

/** The named entries of a target, in order; one stdio entry given alone is named by its command. */
export function serversOf(target: ServeTarget): Array<[string, ServerConfig]> {
  if (typeof (target as StdioServerConfig).command === 'string') return [[(target as StdioServerConfig).command, target as StdioServerConfig]];
  const servers = Object.entries(target as Record<string, ServerConfig>);
  if (servers.length === 0) throw new TypeError('serve: no server to serve (an empty map of entries)');
  for (const [name, entry] of servers) {
    if (typeof entry !== 'object' || entry === null) throw new TypeError(`serve: server "${name}" is not a config entry`);
  }
  return servers;
}
