import { pipeline } from 'node:stream/promises';
import { loadConfig, type RemoteServerConfig, serverNamed } from '../client/config.js';
import type { ConnectionError } from '../client/errors.js';
import { HttpChannel } from '../client/http.js';
import { type FrameError, safeLine } from '../errors.js';
import { FrameDecoder, FrameEncoder } from '../streams.js';
import { AUTH_FLAGS, type AuthFlags, authFlags, cliAuth } from './auth.js';
import { CliError, EXIT, parseOptions } from './io.js';

export const USAGE = `usage: mcp-frame bridge <server> [--config path]
       mcp-frame bridge --url <url> [--header 'Name: value']...
sign-in (a remote server that asks for it; the URL goes to stderr, never a prompt on the host's stdin):
       --no-browser  --callback-port n  --auth-timeout ms`;

interface BridgeArgs {
  name: string;
  url: string;
  headers: Record<string, string>;
  entry: RemoteServerConfig;
  auth: AuthFlags;
}

async function parseBridgeArgs(args: string[]): Promise<BridgeArgs> {
  const { values, positionals } = parseOptions(
    args,
    { config: { type: 'string', default: '.mcp.json' }, url: { type: 'string' }, header: { type: 'string', multiple: true }, ...AUTH_FLAGS },
    USAGE,
  );
  const headers: Record<string, string> = {};
  for (const line of (values.header as unknown as string[] | undefined) ?? []) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new CliError(`--header takes 'Name: value', got ${JSON.stringify(line.slice(0, 40))}\n${USAGE}`, 2);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  if (values.url !== undefined) {
    if (positionals.length > 0) throw new CliError(USAGE, 2);
    const url = values.url as string;
    return { name: new URL(url).host, url, headers, entry: { type: 'http', url }, auth: authFlags(values, USAGE) };
  }
  const [name, ...extra] = positionals;
  if (name === undefined || extra.length > 0) throw new CliError(USAGE, 2);
  const config = await loadConfig(values.config as string, { server: name }).catch((err: Error) => {
    throw new CliError(err.message, EXIT.config);
  });
  const entry = serverNamed(config, name);
  if (entry === undefined) throw new CliError(`no server "${name}" in ${String(values.config)}`, EXIT.config);
  if (entry.type !== 'http') throw new CliError(`server "${name}" is not a Streamable HTTP server (type "${entry.type ?? 'stdio'}")`, EXIT.config);
  return { name, url: entry.url, headers: { ...entry.headers, ...headers }, entry, auth: authFlags(values, USAGE) };
}

/**
 * `mcp-frame bridge`: a stdio MCP server that forwards every message, both ways, to a remote server over
 * Streamable HTTP, with its resumption. Hosts that speak only stdio can then use remote servers. stdout
 * carries only frames; errors go to stderr, one line each. Exits when stdin ends, after closing the session.
 */
export async function bridgeCommand(argv: string[]): Promise<number> {
  const opts = await parseBridgeArgs(argv);
  const say = (line: string): void => void process.stderr.write(`mcp-frame bridge: ${safeLine(line)}\n`);
  const auth = cliAuth(opts.entry, opts.name, opts.auth, 'bridge', false);
  const channel = new HttpChannel(opts.url, { name: opts.name, headers: opts.headers, ...(auth === undefined ? {} : { auth }) });
  const toHost = new FrameEncoder();
  const written = pipeline(toHost, process.stdout).catch(() => undefined);
  // A request the remote side can no longer answer gets an error response, so that the host does not hang.
  const fail = (id: unknown, error: Error): void => {
    say(error.message);
    toHost.write({ jsonrpc: '2.0', id, error: { code: -32000, message: safeLine(error.message) } });
  };
  // A host that does not read its stdout stops the remote server's streams being read, instead of having this
  // process buffer all they carry.
  let release: (() => void) | undefined;
  channel.on('message', (msg: unknown) => {
    if (toHost.write(msg) || release !== undefined) return;
    release = channel.holdInput();
    toHost.once('drain', () => {
      release?.();
      release = undefined;
    });
  });
  channel.on('invalid', (err: FrameError) => say(`skipped a bad frame from the server: ${err.code}: ${err.message}`));
  channel.on('reconnecting', (r: { attempt: number; waitMs: number; reason: string }) =>
    say(`reconnecting (attempt ${r.attempt}, in ${r.waitMs} ms): ${r.reason}`),
  );
  channel.on('undeliverable', (ids: unknown[], error: ConnectionError) => {
    for (const id of ids) fail(id, error);
  });
  // The channel ends on its own only when it gave up resuming; then the host is told by the end of stdout.
  let closing = false;
  let gaveUp = false;
  channel.on('end', () => {
    if (closing) return;
    gaveUp = true;
    say(channel.endError('the remote server is gone').message);
    process.stdin.destroy();
  });

  const fromHost = new FrameDecoder({ onInvalid: 'skip' });
  fromHost.on('invalid', (err: FrameError) => say(`skipped a bad frame from the host: ${err.code}: ${err.message}`));
  try {
    for await (const msg of process.stdin.pipe(fromHost)) {
      const request = typeof msg === 'object' && msg !== null && 'method' in msg && 'id' in msg ? (msg as { id: unknown }) : undefined;
      // Each POST starts at once, in the host's order, and is answered on its own stream: a slow request does
      // not hold back the ones after it (a cancellation among them).
      void channel.send(msg).catch((err: Error) => (request === undefined ? say(err.message) : fail(request.id, err)));
    }
  } catch {
    // stdin destroyed after the channel gave up: go on to the exit.
  }
  closing = true;
  await channel.close();
  toHost.end();
  await written;
  return gaveUp ? 1 : 0;
}
