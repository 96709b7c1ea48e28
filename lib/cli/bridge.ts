import type { RemoteServerConfig } from '../client/config.js';
import type { ReconnectOptions } from '../client/http.js';
import { bridge } from '../bridge/index.js';
import { AUTH_FLAGS, type AuthFlags, authFlags, cliAuth } from './auth.js';
import { headersOf, isServerUrl, namedEntry } from './entry.js';
import { CliError, EXIT, parseOptions, positiveInteger } from './io.js';

export const USAGE = `usage: mcp-frame bridge <server> [--config path] [--input id=value]
       mcp-frame bridge [--url] <url> [--header 'Name: value']... [--header-env Name=VAR]... [--socket-path p]
a stream that drops is resumed: --reconnect-attempts n (8; 0: never)  --reconnect-max-delay ms (30000)
--ignore-tool <glob>: the host does not see the tools whose names match (repeatable; * and ?)
sign-in (a remote server that asks for it; the URL goes to stderr, never a prompt on the host's stdin):
       --no-browser  --callback-port n  --auth-timeout ms  --authorize-param k=v  --client-id id  --no-resource  --device-code`;

interface BridgeArgs {
  name: string;
  headers: Record<string, string>;
  entry: RemoteServerConfig;
  auth: AuthFlags;
  reconnect: ReconnectOptions | false;
  /** `--ignore-tool <glob>`: tools the host does not see. */
  ignoreTools: string[];
}

/**
 * How the bridge resumes a dropped stream: with the defaults, a remote that is gone costs about two minutes
 * of backoff (8 attempts, waits doubling from 1 s to 30 s) before the host's requests in flight fail.
 */
function reconnectOf(values: Record<string, unknown>): ReconnectOptions | false {
  const attempts = values['reconnect-attempts'] as string | undefined;
  const n = attempts === undefined ? 8 : Number(attempts);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new CliError(`--reconnect-attempts takes a whole number, got ${JSON.stringify(attempts)}\n${USAGE}`, EXIT.usage);
  if (n === 0) return false;
  return {
    maxAttempts: n,
    ...(values['reconnect-max-delay'] === undefined
      ? {}
      : { maxDelayMs: positiveInteger(values['reconnect-max-delay'] as string, '--reconnect-max-delay', USAGE)! }),
  };
}

async function parseBridgeArgs(args: string[]): Promise<BridgeArgs> {
  const { values, positionals } = parseOptions(
    args,
    {
      config: { type: 'string' },
      input: { type: 'string', multiple: true },
      url: { type: 'string' },
      'socket-path': { type: 'string' },
      header: { type: 'string', multiple: true },
      'header-env': { type: 'string', multiple: true },
      'reconnect-attempts': { type: 'string' },
      'reconnect-max-delay': { type: 'string' },
      'ignore-tool': { type: 'string', multiple: true },
      ...AUTH_FLAGS,
    },
    USAGE,
  );
  const headers = headersOf(values.header, values['header-env'], USAGE);
  // `bridge https://host/mcp`: a URL where the server's name goes is --url.
  const url = values.url ?? (isServerUrl(positionals[0]) ? positionals.shift() : undefined);
  if (url !== undefined) {
    if (positionals.length > 0) throw new CliError(USAGE, EXIT.usage);
    return {
      name: new URL(url).host,
      headers,
      entry: { type: 'http', url, ...(values['socket-path'] === undefined ? {} : { socketPath: values['socket-path'] as string }) },
      auth: authFlags(values, USAGE),
      reconnect: reconnectOf(values),
      ignoreTools: values['ignore-tool'] ?? [],
    };
  }
  if (values['socket-path'] !== undefined) throw new CliError(`--socket-path is for a server named by --url\n${USAGE}`, EXIT.usage);
  // The config a host would find (./.mcp.json, then ./.vscode/mcp.json), as `call` reads it, `--input` included.
  const entry = await namedEntry(positionals, values, USAGE, 'bridge');
  const name = positionals[0]!;
  if (entry.type !== 'http' && entry.type !== 'sse')
    throw new CliError(`server "${name}" is not a remote server (type "${entry.type ?? 'stdio'}")`, EXIT.config);
  return {
    name,
    headers: { ...entry.headers, ...headers },
    entry,
    auth: authFlags(values, USAGE),
    reconnect: reconnectOf(values),
    ignoreTools: values['ignore-tool'] ?? [],
  };
}

/**
 * `mcp-frame bridge`: bridge() (lib/serve/bridge.ts) on this process's stdin and stdout. stdout carries only
 * frames; errors go to stderr, one line each. Exits when stdin ends, after closing the session: 0, or 1 when
 * the remote server went away for good.
 */
export async function bridgeCommand(argv: string[]): Promise<number> {
  const opts = await parseBridgeArgs(argv);
  const auth = cliAuth(opts.entry, opts.name, opts.auth, 'bridge', false);
  try {
    const { gaveUp } = await bridge(opts.entry, {
      name: opts.name,
      headers: opts.headers,
      reconnect: opts.reconnect,
      ignoreTools: opts.ignoreTools,
      ...(auth === undefined ? {} : { auth }),
    });
    return gaveUp ? 1 : 0;
  } catch (err) {
    throw new CliError((err as Error).message, EXIT.connection);
  }
}
