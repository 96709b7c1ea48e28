import { constants } from 'node:os';
import { isStdioServer, type ServerConfig, type StdioServerConfig } from '../client/config.js';
import { killServerGroups } from '../client/stdio.js';
import { safeLine } from '../errors.js';
import type { Logger } from '../log.js';
import { advertiseProblem, pathsProblem, type ServeHandle, type ServeOptions, type ServeTarget, type ServeTls } from '../serve/options.js';
import { parseClusterUrl, parseSentinelUrl } from '../serve/replicas/index.js';
import { loggerOf, serve } from '../serve/serve.js';
import { commandProblem } from '../serve/sessions/index.js';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Policy, PolicyError } from '../gateway/policy.js';
import { parseRate } from '../gateway/rate.js';
import { AUTH_FLAGS, authFlags, cliAuth } from './auth.js';
import { givenFlags, printedConfig, readServeConfig } from './serve-config.js';
import { serverEntries, serverEntry } from './entry.js';
import { CliError, envValues, EXIT, keyValues, parseOptions, positiveInteger } from './io.js';

export const USAGE = `usage: mcp-frame serve [options] -- <command> [args...]
       mcp-frame serve [options] <server> [--config path] [--input id=value]...
       mcp-frame serve [options] --all | <server> <server>...   (a gateway: every server, or those named)
options:
  --config <file>          the servers file (.mcp.json), or a serve configuration: these flags grouped, one key
                           each (listen, access, limits, gateway, identity, replicas, observe), beside
                           mcpServers; flags given here override it. SIGHUP reloads it, the policy, the
                           certificate and the servers (added, removed, changed ones; the same ones untouched)
  --print-config           print the configuration in force (the file's and the flags') as JSON, and exit
  --host <address>         listen on this address (default 127.0.0.1)
  --port <n>               listen on this port (default 0: a free one, printed)
  --socket <path>          listen on a local socket too (NDJSON, one server per connection)
  --http-socket <path>     offer the HTTP endpoints (/mcp, /sse, /healthz) on a local socket too (mode 0600;
                           clients send Host: localhost; an entry's "socketPath" reaches it)
  --no-http                serve the sockets only (no TCP)
  --token-env <VAR>        require "Authorization: Bearer <value of VAR>" on every request
  --allow-origin <origin>  let pages from this origin call the server (repeatable)
  --allow-host <host>      admit this Host header too (repeatable)
  --max-sessions <n>       sessions open at once (default 32)
  --rate-limit <n>/<s|m|h>  tools/call a caller may make (by issuer and subject when signed in, else by
                           address), across replicas with --store; past it 429 with Retry-After
  --max-starting <n>       servers starting at once; other new sessions wait their turn (default 4)
  --start-wait-ms <n>      how long a new session waits for that turn before 503 with Retry-After (default 10000)
  --session-idle-ms <n>    close a session idle this long (default 1800000)
  --open-idle-ms <n>       close a session whose client sent nothing after initialize this long (default 60000)
  --max-message-bytes <n>  the largest request body (default 4194304)
  --replay-bytes <n>       bytes each stream holds for clients that resume (default 1048576)
  --store <redis-url>      share sessions with every serve given the same store: replicas behind a
                           balancer without affinity (redis://host:port[/db], rediss:// for TLS, or
                           redis+sentinel://host:port[,host:port...]/<master name> to follow a failover,
                           redis+cluster://host:port[,host:port...] for a Redis Cluster)
  --store-env <VAR>        --store's URL from this variable (a password stays off the command line)
  --store-prefix <name>    the prefix of the store's keys, one per service sharing a Redis (default mcp-frame)
  --advertise-url <url>    with --store: this replica's origin as the others reach it (http://10.0.0.5:8080);
                           they forward its sessions' requests there over HTTP, not through Redis
  --tls-cert <pem>  --tls-key <pem>   serve HTTPS on the port, with this certificate (chain) and key; SIGHUP
                           reads both files again (a renewed certificate, for the connections to come)
  --drain-ms <n>           on SIGTERM or SIGINT, answer /healthz with 503 this long before closing
  --path <p>               the Streamable HTTP endpoint's path (default /mcp)
  --sse-path <p>  --messages-path <p>   the legacy HTTP+SSE transport's paths (default /sse and /messages)
  -e KEY=VALUE             environment for a server given with -- <command> (repeatable)
  --trace                  log every message, redacted
  --log-format <f>         text (default) or json (one object a line)
  --log-level <l>          debug (a line per request too), info (default), warn or error
  --audit-log <file>       append the audit trail (a record per tool call, prompt and resource read, or refusal)
                           to this file as JSON lines, mode 0600; the records are in the log anyway
  --metrics                Prometheus metrics at /metrics (needs prom-client: npm install prom-client)
  --metrics-port <n>       serve /metrics on this port instead, without a token (127.0.0.1 unless --metrics-host)
  --metrics-host <addr>    the address of the --metrics-port listener (0.0.0.0: scraped from other machines)
gateway (several servers behind one endpoint):
  --all                    every server of the config
  --name <name>            the gateway's name in its serverInfo (default mcp-frame)
  --prefix <mode>          tool and prompt names: always <server>__<name> (default), conflicts (only where two
                           servers offer one name), never (a name two offer is refused at start)
  --separator <text>       what joins server and tool names (default __)
  --isolate <server>       a server that keeps state per client (roots, a login): each session of the initialize
                           era then gets a child of it of its own (repeatable; by default every server runs once
                           for all, and the servers not named still do)
  --share                  one server: every session shares one child of it (by default each has its own);
                           for a server that keeps no state per client
  --tool-search            list two tools, search_tools and call_tool, in place of every tool (a host with
                           hundreds of tools offers its model two); a call by a tool's name still works
  --pin-tools <glob>       with --tool-search: list the tools whose exposed names match too (repeatable)
  --allow-tools <glob>     offer only the tools whose exposed names match (repeatable; * and ?)
  --deny-tools <glob>      leave out the tools whose exposed names match (repeatable)
  --allow-prompts <glob>   the same, for prompts
  --deny-prompts <glob>
  --upstream-start-ms <n>  how long a session waits for its servers to start (default 10000)
  --upstream-list-ms <n>   how long a server may take over a list the gateway reads (default 10000); past it,
                           the server is left out of that list for 30 s and /healthz says so
  --upstream-call-ms <n>   how long a call sent on to a server may take before it is cancelled (default 600000)
  --max-server-requests <n>  requests in flight to one server, every session together (default 1024)
  --no-browser  --callback-port n  --auth-timeout ms   sign-in to a remote server that asks for it
  --authorize-param k=v  --client-id id  --no-resource  --device-code  (see mcp-frame call --help)
callers signed in (serve as an OAuth 2.1 resource server; not with --token-env or --socket):
  --auth-issuer <url>      take access tokens of this authorization server only (JWTs checked with its keys)
  --public-url <url>       this server's MCP URL as clients reach it, the tokens' audience (default: where it listens)
  --required-scope <s>     a scope every token must have (repeatable)
  --introspection-endpoint <url>  check opaque tokens there (RFC 7662), as the client named by
                           MCP_FRAME_INTROSPECTION_CLIENT_ID and MCP_FRAME_INTROSPECTION_CLIENT_SECRET
  --dpop <allow|require>   a token bound to a key (DPoP, RFC 9449) is taken only with a proof of each request
                           (always); require: refuse tokens that are not bound too (default allow)
  --policy <file>          who may call which tool and prompt (JSON rules; SIGHUP reloads it)
  --forward-claims <a,b>   the caller's claims to put in each request's _meta (mcp-frame/caller), never the token`;

const OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  socket: { type: 'string' },
  'http-socket': { type: 'string' },
  'no-http': { type: 'boolean', default: false },
  'token-env': { type: 'string' },
  'allow-origin': { type: 'string', multiple: true },
  'allow-host': { type: 'string', multiple: true },
  'max-sessions': { type: 'string' },
  'max-starting': { type: 'string' },
  'start-wait-ms': { type: 'string' },
  'session-idle-ms': { type: 'string' },
  'open-idle-ms': { type: 'string' },
  'max-message-bytes': { type: 'string' },
  'replay-bytes': { type: 'string' },
  store: { type: 'string' },
  'store-prefix': { type: 'string' },
  'store-env': { type: 'string' },
  'advertise-url': { type: 'string' },
  'drain-ms': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  path: { type: 'string' },
  'sse-path': { type: 'string' },
  'messages-path': { type: 'string' },
  env: { type: 'string', short: 'e', multiple: true },
  config: { type: 'string' },
  input: { type: 'string', multiple: true },
  trace: { type: 'boolean', default: false },
  'log-format': { type: 'string' },
  'log-level': { type: 'string' },
  'audit-log': { type: 'string' },
  metrics: { type: 'boolean', default: false },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string' },
  all: { type: 'boolean', default: false },
  name: { type: 'string' },
  prefix: { type: 'string' },
  separator: { type: 'string' },
  isolate: { type: 'string', multiple: true },
  'allow-tools': { type: 'string', multiple: true },
  'tool-search': { type: 'boolean', default: false },
  share: { type: 'boolean', default: false },
  'pin-tools': { type: 'string', multiple: true },
  'deny-tools': { type: 'string', multiple: true },
  'allow-prompts': { type: 'string', multiple: true },
  'deny-prompts': { type: 'string', multiple: true },
  'upstream-start-ms': { type: 'string' },
  'upstream-list-ms': { type: 'string' },
  'upstream-call-ms': { type: 'string' },
  'max-server-requests': { type: 'string' },
  'rate-limit': { type: 'string' },
  'auth-issuer': { type: 'string' },
  'public-url': { type: 'string' },
  'required-scope': { type: 'string', multiple: true },
  'introspection-endpoint': { type: 'string' },
  dpop: { type: 'string' },
  policy: { type: 'string' },
  'forward-claims': { type: 'string' },
  'print-config': { type: 'boolean', default: false },
  ...AUTH_FLAGS,
} as const;

type Values = Record<string, string | boolean | string[] | undefined>;

/**
 * The value of the variable a `--<flag> VAR` names (--token-env's token, --store-env's URL): read from the
 * environment, never from the command line, never printed; undefined without the flag.
 */
function fromEnv(flag: string, variable: string | undefined): string | undefined {
  if (variable === undefined) return undefined;
  const value = process.env[variable];
  if (value === undefined || value === '') throw new CliError(`--${flag} ${variable}: the variable ${variable} is not set`, EXIT.usage);
  return value;
}

function origins(list: string[] | undefined): string[] {
  for (const origin of list ?? []) {
    if (!URL.canParse(origin))
      throw new CliError(`--allow-origin takes an origin such as https://app.example, got ${JSON.stringify(origin.slice(0, 60))}`, EXIT.usage);
    if (new URL(origin).origin === 'null')
      throw new CliError(
        `--allow-origin ${JSON.stringify(origin.slice(0, 60))}: a ${new URL(origin).protocol} URL has an opaque origin ("null"), which any page can send; name an http(s) origin`,
        EXIT.usage,
      );
  }
  return list ?? [];
}

/** --store, or --store-env's variable (a URL with a password, kept off argv); not both. */
function storeFlag(values: Values): string | undefined {
  const variable = values['store-env'] as string | undefined;
  if (variable !== undefined && values.store !== undefined)
    throw new CliError(`--store and --store-env name two stores: give one\n${USAGE}`, EXIT.usage);
  return (values.store as string | undefined) ?? fromEnv('store-env', variable);
}

/** The --store URL, checked: a Redis URL (its password, if any, never printed). */
function storeUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  if (url.startsWith('redis+sentinel://')) {
    const sentinel = parseSentinelUrl(url);
    if (typeof sentinel === 'string') throw new CliError(`--store: ${sentinel}`, EXIT.usage);
    return url;
  }
  if (/^rediss?\+cluster:\/\//.test(url)) {
    const cluster = parseClusterUrl(url);
    if (typeof cluster === 'string') throw new CliError(`--store: ${cluster}`, EXIT.usage);
    return url;
  }
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
    throw new CliError(
      `--store takes a Redis URL such as redis://127.0.0.1:6379, got ${JSON.stringify(url.replace(/\/\/[^@/]*@/, '//…@').slice(0, 60))}`,
      EXIT.usage,
    );
  }
  return url;
}

function serveOptions(values: Values): ServeOptions {
  const number = (name: string): number | undefined => positiveInteger(values[name] as string | undefined, `--${name}`, USAGE);
  const port = values.port === '0' ? 0 : number('port');
  if (port !== undefined && port > 65535) throw new CliError(`--port takes a port number, got ${String(values.port)}\n${USAGE}`, EXIT.usage);
  const options: ServeOptions = {
    http: values['no-http'] !== true,
    allowOrigins: origins(values['allow-origin'] as string[] | undefined),
    allowHosts: (values['allow-host'] as string[] | undefined) ?? [],
    trace: values.trace === true,
  };
  const set = {
    host: values.host,
    port,
    socket: values.socket,
    httpSocket: values['http-socket'],
    token: fromEnv('token-env', values['token-env'] as string | undefined),
    store: storeUrl(storeFlag(values)),
    storePrefix: values['store-prefix'],
    advertiseUrl: values['advertise-url'],
    rateLimit: values['rate-limit'],
  };
  if (values['rate-limit'] !== undefined) {
    try {
      parseRate(values['rate-limit'], '--rate-limit');
    } catch (err) {
      throw new CliError((err as Error).message, EXIT.usage);
    }
  }
  const numbers = {
    maxSessions: 'max-sessions',
    maxStarting: 'max-starting',
    startWaitMs: 'start-wait-ms',
    sessionIdleMs: 'session-idle-ms',
    openIdleMs: 'open-idle-ms',
    maxMessageBytes: 'max-message-bytes',
    replayBytes: 'replay-bytes',
    drainMs: 'drain-ms',
    upstreamStartMs: 'upstream-start-ms',
    upstreamListMs: 'upstream-list-ms',
    upstreamCallMs: 'upstream-call-ms',
    maxPendingPerUpstream: 'max-server-requests',
  };
  Object.assign(options, gatewayOptions(values), logOptions(values), pathOptions(values));
  for (const [key, value] of Object.entries(set)) if (value !== undefined) Object.assign(options, { [key]: value });
  for (const [key, flag] of Object.entries(numbers)) {
    const value = number(flag);
    if (value !== undefined) Object.assign(options, { [key]: value });
  }
  if (options.http === false && options.socket === undefined && options.httpSocket === undefined)
    throw new CliError(`--no-http needs --socket or --http-socket\n${USAGE}`, EXIT.usage);
  if (options.httpSocket !== undefined && options.httpSocket === options.socket)
    throw new CliError('--http-socket and --socket are two sockets: give them two paths', EXIT.usage);
  if (options.http === false && options.store !== undefined)
    throw new CliError(`--store shares HTTP sessions: it does not go with --no-http\n${USAGE}`, EXIT.usage);
  if (options.advertiseUrl !== undefined) {
    if (options.store === undefined)
      throw new CliError(`--advertise-url is where other replicas reach this one: it needs --store\n${USAGE}`, EXIT.usage);
    const problem = advertiseProblem(options.advertiseUrl);
    if (problem !== undefined) throw new CliError(`--advertise-url ${problem}`, EXIT.usage);
  }
  return options;
}

/** --path, --sse-path and --messages-path, checked as serve() checks them (a usage error, exit 2). */
function pathOptions(values: Values): ServeOptions {
  const given = { mcp: values.path, sse: values['sse-path'], messages: values['messages-path'] } as Record<string, string | undefined>;
  const paths = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Record<string, string>;
  if (Object.keys(paths).length === 0) return {};
  const problem = pathsProblem(paths);
  if (problem !== undefined) throw new CliError(`--path, --sse-path, --messages-path: ${problem}`, EXIT.usage);
  return { paths };
}

const PREFIX_MODES = ['always', 'conflicts', 'never'] as const;

/** --log-format, --log-level, --metrics, --metrics-port and --metrics-host, checked. */
function logOptions(values: Values): ServeOptions {
  const options: ServeOptions = {};
  const format = values['log-format'] as string | undefined;
  if (format !== undefined) {
    if (format !== 'text' && format !== 'json')
      throw new CliError(`--log-format takes text or json, got ${JSON.stringify(format.slice(0, 20))}`, EXIT.usage);
    options.logFormat = format;
  }
  const level = values['log-level'] as string | undefined;
  if (level !== undefined) {
    if (!['debug', 'info', 'warn', 'error'].includes(level))
      throw new CliError(`--log-level takes debug, info, warn or error, got ${JSON.stringify(level.slice(0, 20))}`, EXIT.usage);
    options.logLevel = level as NonNullable<ServeOptions['logLevel']>;
  }
  const port = values['metrics-port'] === undefined ? undefined : positiveInteger(values['metrics-port'] as string, '--metrics-port', USAGE);
  if (port !== undefined && port > 65535) throw new CliError(`--metrics-port takes a port number, got ${port}`, EXIT.usage);
  if (values.metrics === true || port !== undefined) options.metrics = true;
  if (port !== undefined) options.metricsPort = port;
  if (values['audit-log'] !== undefined) options.auditLog = values['audit-log'] as string;
  const metricsHost = values['metrics-host'] as string | undefined;
  if (metricsHost !== undefined) {
    if (port === undefined) throw new CliError('--metrics-host is the address of the --metrics-port listener: give --metrics-port too', EXIT.usage);
    options.metricsHost = metricsHost;
  }
  return options;
}

/** An http(s) URL option, checked. */
function urlOption(value: unknown, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol))
    throw new CliError(`${flag} takes an http(s) URL, got ${JSON.stringify(text.slice(0, 80))}`, EXIT.usage);
  return text;
}

/** The sign-in options (--auth-issuer and its company), checked; the introspection client only from the environment. */
function authOptions(values: Values): Pick<ServeOptions, 'auth' | 'forwardClaims'> {
  const issuer = urlOption(values['auth-issuer'], '--auth-issuer');
  const dependent = ['public-url', 'required-scope', 'introspection-endpoint', 'forward-claims', 'dpop'].filter((flag) => values[flag] !== undefined);
  if (issuer === undefined) {
    if (dependent.length > 0) throw new CliError(`--${dependent[0]} is for a serve that signs callers in: give --auth-issuer too`, EXIT.usage);
    return {};
  }
  if (values['token-env'] !== undefined)
    throw new CliError('--auth-issuer and --token-env do not go together: callers sign in, or share one token', EXIT.usage);
  if (values.socket !== undefined)
    throw new CliError('--auth-issuer checks HTTP callers, and a socket has none to check: leave out --socket', EXIT.usage);
  const resource = urlOption(values['public-url'], '--public-url');
  const endpoint = urlOption(values['introspection-endpoint'], '--introspection-endpoint');
  let introspection: { endpoint: string; clientId: string; clientSecret: string } | undefined;
  if (endpoint !== undefined) {
    const clientId = process.env.MCP_FRAME_INTROSPECTION_CLIENT_ID;
    const clientSecret = process.env.MCP_FRAME_INTROSPECTION_CLIENT_SECRET;
    if (!clientId || !clientSecret)
      throw new CliError(
        '--introspection-endpoint: set MCP_FRAME_INTROSPECTION_CLIENT_ID and MCP_FRAME_INTROSPECTION_CLIENT_SECRET (never on the command line)',
        EXIT.usage,
      );
    introspection = { endpoint, clientId, clientSecret };
  }
  const dpop = values.dpop as string | undefined;
  if (dpop !== undefined && dpop !== 'allow' && dpop !== 'require')
    throw new CliError(`--dpop takes allow or require, got ${JSON.stringify(dpop)}`, EXIT.usage);
  const claims =
    values['forward-claims'] === undefined
      ? undefined
      : String(values['forward-claims'])
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean);
  return {
    auth: {
      issuer,
      ...(resource === undefined ? {} : { resource }),
      ...(values['required-scope'] === undefined ? {} : { requiredScopes: values['required-scope'] as string[] }),
      ...(introspection === undefined ? {} : { introspection }),
      ...(dpop === undefined ? {} : { dpop }),
    },
    ...(claims === undefined || claims.length === 0 ? {} : { forwardClaims: claims }),
  };
}

/** The --policy file, read and checked: a CliError naming the line or the rule when it is not one. */
async function readPolicy(path: string): Promise<Policy> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new CliError(
      `--policy ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
      EXIT.config,
    );
  }
  try {
    return Policy.parse(text, path);
  } catch (err) {
    throw err instanceof PolicyError ? new CliError(`--policy ${err.message}`, EXIT.config) : err;
  }
}

/** The gateway's naming and filters, checked. */
function gatewayOptions(values: Values): ServeOptions {
  const options: ServeOptions = {};
  const prefix = values.prefix as string | undefined;
  if (prefix !== undefined) {
    if (!(PREFIX_MODES as readonly string[]).includes(prefix))
      throw new CliError(`--prefix takes always, conflicts or never, got ${JSON.stringify(prefix.slice(0, 40))}`, EXIT.usage);
    options.prefix = prefix as ServeOptions['prefix'] & string;
  }
  if (values.separator !== undefined) {
    if (values.separator === '') throw new CliError('--separator takes a non-empty text, such as __ or .', EXIT.usage);
    options.separator = values.separator as string;
  }
  if (values.name !== undefined) options.name = values.name as string;
  // Every server of the config behind one endpoint: named as a gateway names them even while there is one.
  if (values.all === true) options.gateway = true;
  if (values.isolate !== undefined) options.isolate = values.isolate as string[];
  if (values['tool-search'] === true) options.toolSearch = true;
  if (values.share === true) options.share = true;
  if (values['pin-tools'] !== undefined) {
    if (values['tool-search'] !== true) throw new CliError('--pin-tools is for --tool-search: give both', EXIT.usage);
    options.pinTools = values['pin-tools'] as string[];
  }
  const globs = { allowTools: 'allow-tools', denyTools: 'deny-tools', allowPrompts: 'allow-prompts', denyPrompts: 'deny-prompts' } as const;
  for (const [key, flag] of Object.entries(globs)) {
    const list = values[flag] as string[] | undefined;
    if (list !== undefined) options[key as keyof typeof globs] = list;
  }
  return options;
}

/**
 * What to serve: `-- <command>` or one named stdio server as they always were; several named servers, `--all`,
 * or one remote server: a gateway in front of them. A gateway's remote servers sign in from the token store.
 */
async function serveTarget(values: Values, positionals: string[], command: string[] | undefined, log: Logger): Promise<ServeTarget> {
  const config = values.config as string | undefined;
  const inputs = keyValues(values.input as string[] | undefined, '--input', USAGE);
  const found = (path: string): void => log.info('config.found', `using ${path}`, { config: path });
  if (values.all === true && (command !== undefined || positionals.length > 0))
    throw new CliError(`--all serves every server of the config: name none with it\n${USAGE}`, EXIT.usage);
  if (values.all !== true && positionals.length <= 1) {
    const entry = await serverEntry(
      { command, server: positionals[0], config, env: envValues(values.env as string[] | undefined, USAGE), inputs, found },
      'serve',
    );
    // Every session starts the command: one that cannot start would make every request a 502. Say so now.
    if (isStdioServer(entry)) {
      const missing = await commandProblem(entry);
      if (missing !== undefined) throw new CliError(`cannot start ${JSON.stringify(entry.command)}: ${missing}`, EXIT.config);
      return command === undefined ? { [positionals[0]!]: entry } : entry;
    }
    if (entry.type === 'socket')
      throw new CliError(`server "${positionals[0]}" is a socket server: serve offers stdio and remote servers`, EXIT.config);
    return { [positionals[0]!]: entry };
  }
  const entries = await serverEntries(positionals, values.all === true, { config, inputs, found }, 'serve');
  const target: Record<string, ServerConfig> = {};
  for (const [name, entry] of entries) {
    if (!isStdioServer(entry) && entry.type === 'socket')
      throw new CliError(`server "${name}" is a socket server: a gateway takes stdio and remote servers`, EXIT.config);
    // One that cannot start takes only its own tools away: said now, served without it.
    const missing = isStdioServer(entry) ? await commandProblem(entry as StdioServerConfig) : undefined;
    if (missing !== undefined)
      log.warn(
        'upstream.cannot_start',
        `warning: server "${name}" cannot start (${JSON.stringify((entry as StdioServerConfig).command)}: ${missing}); its tools are left out`,
        { upstream: name, why: missing },
      );
    target[name] = entry;
  }
  return target;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * The flags in force: a serve configuration's (`--config` naming one, see serve-config.ts), overridden by those
 * given on the command line (`own`), and `config` then naming the servers file; a servers file is left as it is.
 */
function withConfigFile(values: Values, own: readonly string[]): Values {
  const path = values.config as string | undefined;
  const file =
    path === undefined ? undefined : readServeConfig(path, OPTIONS as unknown as Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>);
  if (file === undefined) return values;
  const given = givenFlags(own);
  const merged: Values = { ...values, ...file.values };
  for (const flag of given) if (flag in OPTIONS) merged[flag] = values[flag];
  merged.config = file.servers;
  return merged;
}

/** The certificate and key files --tls-cert and --tls-key name (both, or neither). */
function tlsFilesOf(values: Values): { cert: string; key: string } | undefined {
  const cert = values['tls-cert'] as string | undefined;
  const key = values['tls-key'] as string | undefined;
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) throw new CliError('--tls-cert and --tls-key go together: give both', EXIT.usage);
  if (values['no-http'] === true) throw new CliError('--tls-cert is for HTTP, and --no-http turns it off', EXIT.usage);
  return { cert, key };
}

/** The certificate and key, read (a file that cannot be read, or holds no PEM of its kind, is a config error naming it). */
function readTls(files: { cert: string; key: string }): ServeTls {
  const read = (flag: string, path: string, what: string, pem: RegExp): string => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new CliError(`--${flag} ${path}: cannot read it: ${(err as Error).message}`, EXIT.config);
    }
    if (!pem.test(text)) throw new CliError(`--${flag} ${path}: no PEM ${what} in it`, EXIT.config);
    return text;
  };
  return {
    cert: read('tls-cert', files.cert, 'certificate', /-----BEGIN CERTIFICATE-----/),
    key: read('tls-key', files.key, 'private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/),
  };
}

/** What a reload starts from: how serve was started, and the flags in force. */
interface Reloading {
  own: readonly string[];
  positionals: string[];
  command: string[] | undefined;
  bridge: ServeHandle;
  log: Logger;
  values: Values;
}

/** Flags a reload applies: the others (a port, a limit) are read at start only. */
const RELOADED = new Set(['config', 'policy', 'tls-cert', 'tls-key']);

/**
 * SIGHUP: the configuration file read again (when --config names one), then the policy, the certificate and the
 * servers. What cannot be read or taken is refused and logged, and what is in force kept; a flag the file changed
 * that only a start reads is named. Never stops serve.
 */
async function reload(state: Reloading): Promise<void> {
  const { bridge, log } = state;
  const failed = (what: string, err: unknown): void =>
    log.error('serve.reload_failed', `SIGHUP: kept the ${what} in force: ${safeLine((err as Error).message)}`, { what });
  let values: Values;
  try {
    values = withConfigFile(parseOptions([...state.own], OPTIONS, USAGE).values as Values, state.own);
  } catch (err) {
    return failed('configuration', err);
  }
  const later = Object.keys(OPTIONS).filter((flag) => !RELOADED.has(flag) && JSON.stringify(values[flag]) !== JSON.stringify(state.values[flag]));
  if (later.length > 0)
    log.warn('serve.reload_partial', `SIGHUP: ${later.map((f) => `--${f}`).join(', ')} changed: read at start only, kept until a restart`, {
      flags: later,
    });
  state.values = values;
  const policyPath = values.policy as string | undefined;
  if (policyPath !== undefined) {
    try {
      bridge.setPolicy(await readPolicy(policyPath));
      log.info('serve.reloaded', `SIGHUP: reloaded the policy from ${safeLine(policyPath)}`, { policy: policyPath });
    } catch (err) {
      failed('policy', err);
    }
  }
  try {
    const files = tlsFilesOf(values);
    if (files !== undefined) {
      bridge.setTls(readTls(files));
      log.info('serve.reloaded', `SIGHUP: reloaded the certificate from ${safeLine(files.cert)}`, { cert: files.cert });
    }
  } catch (err) {
    failed('certificate', err);
  }
  if (state.command !== undefined) {
    log.info('serve.reloaded', 'SIGHUP: the server is the command given: nothing to read again for it', {});
    return;
  }
  try {
    const target = (await serveTarget(values, state.positionals, undefined, log)) as Record<string, ServerConfig>;
    const changes = await bridge.setServers(target);
    const said = Object.entries(changes)
      .filter(([, names]) => names.length > 0)
      .map(([how, names]) => `${how} ${names.join(', ')}`);
    log.info('serve.reloaded', `SIGHUP: reloaded the servers: ${said.length === 0 ? 'none changed' : said.join('; ')}`, { ...changes });
  } catch (err) {
    failed('servers', err);
  }
}

/**
 * `mcp-frame serve`: offers a stdio server over Streamable HTTP, the legacy SSE transport and a local socket
 * until SIGINT or SIGTERM (SIGHUP reloads), then closes every session's server and exits 0.
 */
export async function serveCommand(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const command = dash === -1 ? undefined : argv.slice(dash + 1);
  const parsed = parseOptions(own, OPTIONS, USAGE);
  const { positionals } = parsed;
  const values = withConfigFile(parsed.values as Values, own);
  if (values['print-config'] === true) {
    const file = values.config as string | undefined;
    process.stdout.write(`${JSON.stringify(printedConfig(values, file), null, 2)}\n`);
    return EXIT.ok;
  }
  if (command !== undefined && (command.length === 0 || positionals.length > 0)) throw new CliError(USAGE, EXIT.usage);
  if (command === undefined && positionals.length === 0 && values.all !== true) throw new CliError(USAGE, EXIT.usage);
  if (values.env !== undefined && command === undefined) throw new CliError(`-e is for a server started with -- <command>\n${USAGE}`, EXIT.usage);
  const options = { ...serveOptions(values), ...authOptions(values) };
  const log = serveLogger(options);
  options.logger = log;
  try {
    return await serveUntilStopped({ own, values, positionals, command }, options, log);
  } catch (err) {
    // In a JSON log, the reason serve did not start is a JSON line too (and written once).
    if (!(err instanceof CliError) || options.logFormat !== 'json') throw err;
    log.error('serve.failed', err.message, { exitCode: err.exitCode });
    throw new CliError(err.message, err.exitCode, { exitNow: err.exitNow, logged: true });
  }
}

/**
 * serve's lines on stderr, made by serve's own logger (see loggerOf): text lines after `mcp-frame serve: ` and the
 * time (as a service's log has them), or one JSON object a line (`--log-format json`, which has its own `time`); the
 * token never in either.
 */
function serveLogger(options: ServeOptions): Logger {
  const json = options.logFormat === 'json';
  return loggerOf({ ...options, logTime: true, ...(json ? { log: (line: string) => void process.stderr.write(`${line}\n`) } : {}) });
}

async function serveUntilStopped(
  given: { own: readonly string[]; values: Values; positionals: string[]; command: string[] | undefined },
  options: ServeOptions,
  log: Logger,
): Promise<number> {
  const { own, values, positionals, command } = given;
  const policyPath = values.policy as string | undefined;
  if (policyPath !== undefined) options.policy = await readPolicy(policyPath);
  const tlsFiles = tlsFilesOf(values);
  if (tlsFiles !== undefined) options.tls = readTls(tlsFiles);
  const target = await serveTarget(values, positionals, command, log);
  const auth = authFlags(values, USAGE);
  // A remote server behind the gateway that asks for sign-in: the operator signs in here (stdin is not a host's).
  options.upstreamAuth = (name, entry) => cliAuth(entry, name, auth, 'serve', true);
  const bridge = await serve(target, options).catch((err: Error & { code?: string }) => {
    if (err.code === 'NAME_CLASH') throw new CliError(`--${err.message}`, EXIT.config);
    if (err.code === 'MISSING_PEER' || err.code === 'CONFIG') throw new CliError(err.message, EXIT.config);
    throw new CliError(`cannot listen: ${err.message}`, EXIT.connection);
  });

  const where = [
    bridge.url,
    bridge.httpSocketPath === undefined ? undefined : `http+unix:${bridge.httpSocketPath}`,
    bridge.socketPath === undefined ? undefined : `unix:${bridge.socketPath}`,
  ]
    .filter(Boolean)
    .join(' and ');
  log.info('serve.listening', `listening on ${safeLine(where)}`, {
    ...(bridge.url === undefined ? {} : { url: bridge.url }),
    ...(bridge.socketPath === undefined ? {} : { socket: bridge.socketPath }),
    ...(bridge.httpSocketPath === undefined ? {} : { httpSocket: bridge.httpSocketPath }),
  });
  if (bridge.metricsUrl !== undefined) log.info('serve.metrics', `metrics on ${bridge.metricsUrl}`, { url: bridge.metricsUrl });
  // SIGHUP reloads (one at a time, in the order sent); SIGINT and SIGTERM stop.
  const state: Reloading = { own, positionals, command, bridge, log, values };
  let reloading = Promise.resolve();
  const onHangUp = (): void => {
    reloading = reloading.then(() => reload(state));
  };
  process.on('SIGHUP', onHangUp);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    for (const signal of STOP_SIGNALS) process.once(signal, resolve);
  });
  // A SIGHUP now is not a reload, nor (with no handler) the end of serve with its servers left running.
  const ignore = (): void => log.warn('serve.reload_failed', 'SIGHUP while shutting down: not reloaded', { what: 'everything' });
  process.off('SIGHUP', onHangUp).on('SIGHUP', ignore);
  await reloading;
  log.info('serve.stopping', `${signal}: shutting down (again to stop at once)`, { signal });
  // Signals are still handled while closing: the default action of a second Ctrl-C would end serve and leave
  // every server running (each is in a process group of its own). A repeat kills their groups, then exits.
  const again = (repeat: NodeJS.Signals): void => {
    log.warn('serve.killing', `${repeat} again: killing every server now`, { signal: repeat });
    killServerGroups('SIGKILL');
    process.exit(128 + (constants.signals[repeat] ?? 0));
  };
  for (const s of STOP_SIGNALS) process.on(s, again);
  const sessions = bridge.sessions;
  await bridge.close();
  for (const s of STOP_SIGNALS) process.off(s, again);
  process.off('SIGHUP', ignore);
  log.info('serve.stopped', `${signal}: closed ${sessions} session${sessions === 1 ? '' : 's'}, and stopped`, { signal, sessions });
  return EXIT.ok;
}
