import { pipeline } from 'node:stream/promises';
import type { RemoteServerConfig } from '../client/config.js';
import type { Connection } from '../client/connection.js';
import { ConnectionError } from '../client/errors.js';
import { HttpChannel, type ReconnectOptions } from '../client/http.js';
import { META_PROTOCOL_VERSION, pickModernVersion } from '../protocol/modern.js';
import { SseChannel } from '../client/sse.js';
import { isObject } from '../jsonrpc.js';
import { type FrameError, safeLine } from '../errors.js';
import { FrameDecoder, FrameEncoder } from '../streams.js';
import { AUTH_FLAGS, type AuthFlags, authFlags, cliAuth } from './auth.js';
import { headersOf, serverEntry } from './entry.js';
import { CliError, EXIT, keyValues, parseOptions, positiveInteger } from './io.js';
import { type LegacyHostSession, modernOnlyRefusal, startLegacyHostSession } from '../client/translate.js';

export const USAGE = `usage: mcp-frame bridge <server> [--config path] [--input id=value]
       mcp-frame bridge --url <url> [--header 'Name: value']... [--header-env Name=VAR]...
a stream that drops is resumed: --reconnect-attempts n (8; 0: never)  --reconnect-max-delay ms (30000)
sign-in (a remote server that asks for it; the URL goes to stderr, never a prompt on the host's stdin):
       --no-browser  --callback-port n  --auth-timeout ms`;

interface BridgeArgs {
  name: string;
  url: string;
  headers: Record<string, string>;
  entry: RemoteServerConfig;
  auth: AuthFlags;
  reconnect: ReconnectOptions | false;
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
      header: { type: 'string', multiple: true },
      'header-env': { type: 'string', multiple: true },
      'reconnect-attempts': { type: 'string' },
      'reconnect-max-delay': { type: 'string' },
      ...AUTH_FLAGS,
    },
    USAGE,
  );
  const headers = headersOf(values.header as unknown as string[] | undefined, values['header-env'] as unknown as string[] | undefined, USAGE);
  if (values.url !== undefined) {
    if (positionals.length > 0) throw new CliError(USAGE, 2);
    const url = values.url as string;
    return { name: new URL(url).host, url, headers, entry: { type: 'http', url }, auth: authFlags(values, USAGE), reconnect: reconnectOf(values) };
  }
  const [name, ...extra] = positionals;
  if (name === undefined || extra.length > 0) throw new CliError(USAGE, 2);
  // The config a host would find (./.mcp.json, then ./.vscode/mcp.json), as `call` reads it, `--input` included.
  const entry = await serverEntry(
    {
      server: name,
      command: undefined,
      env: {},
      config: values.config as string | undefined,
      inputs: keyValues(values.input as unknown as string[] | undefined, '--input', USAGE),
    },
    'bridge',
  );
  if (entry.type !== 'http' && entry.type !== 'sse')
    throw new CliError(`server "${name}" is not a remote server (type "${entry.type ?? 'stdio'}")`, EXIT.config);
  return { name, url: entry.url, headers: { ...entry.headers, ...headers }, entry, auth: authFlags(values, USAGE), reconnect: reconnectOf(values) };
}

/**
 * `mcp-frame bridge`: a stdio MCP server that forwards every message, both ways, to a remote server, so that
 * hosts that speak only stdio can use remote servers. stdout carries only frames; errors go to stderr, one line
 * each. Exits when stdin ends, after closing the session.
 *
 * - Streamable HTTP with its resumption; a server that refuses the host's initialize with HTTP 400, 404 or 405
 *   is tried over the deprecated HTTP+SSE transport, as connect() does.
 * - A modern host (its requests carry the 2026-07-28 `_meta`) passes through, with the headers that revision
 *   requires.
 * - A legacy host in front of a modern-only server (it refuses initialize with -32022 naming only modern
 *   revisions) is translated: see LegacyHostSession.
 */
export async function bridgeCommand(argv: string[]): Promise<number> {
  const opts = await parseBridgeArgs(argv);
  const say = (line: string): void => void process.stderr.write(`mcp-frame bridge: ${safeLine(line)}\n`);
  const auth = cliAuth(opts.entry, opts.name, opts.auth, 'bridge', false);
  const remote = { name: opts.name, headers: opts.headers, reconnect: opts.reconnect, ...(auth === undefined ? {} : { auth }) };
  const toHost = new FrameEncoder();
  const written = pipeline(toHost, process.stdout).catch(() => undefined);
  // A request the remote side can no longer answer gets an error response, so that the host does not hang.
  const fail = (id: unknown, error: Error): void => {
    say(error.message);
    toHost.write({ jsonrpc: '2.0', id, error: { code: -32000, message: safeLine(error.message) } });
  };
  let closing = false;
  let gaveUp = false;
  /** The host's initialize, until answered: what a fallback or a translation answers. */
  let hostInit: { id: unknown; params: Record<string, unknown> } | undefined;
  /** A legacy host's session over a modern-only server, once the server said it is one. */
  let translated: Promise<LegacyHostSession | undefined> | undefined;
  let translation: LegacyHostSession | undefined;
  let connection: Connection | undefined;

  /** The listeners of a pass-through channel: messages to the host, with backpressure; reports on stderr. */
  const attach = (channel: HttpChannel | SseChannel): void => {
    // A host that does not read its stdout stops the remote server's streams being read, instead of having this
    // process buffer all they carry.
    let release: (() => void) | undefined;
    channel.on('message', (msg: unknown) => {
      if (channel !== current) return;
      if (hostInit !== undefined && isObject(msg) && msg.id === hostInit.id) {
        if (modernOnlyRefusal(msg)) return void translate(msg);
        hostInit = undefined;
      }
      if (toHost.write(msg) || release !== undefined || !(channel instanceof HttpChannel)) return;
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
    channel.on('end', () => {
      // A channel left for another (the SSE fallback, a translation) ends as it should.
      if (closing || channel !== current || translated !== undefined) return;
      gaveUp = true;
      say(channel.endError('the remote server is gone').message);
      process.stdin.destroy();
    });
  };
  let current: HttpChannel | SseChannel = opts.entry.type === 'sse' ? new SseChannel(opts.url, remote) : new HttpChannel(opts.url, remote);
  attach(current);
  if (current instanceof SseChannel) {
    await current.open().catch(async (err: Error) => {
      await current.close();
      toHost.end();
      throw new CliError(err.message, EXIT.connection);
    });
  }

  /** The server is modern-only: a Connection speaks to it, and the host gets a legacy session from here. */
  const translate = (refusal: Record<string, unknown>): void => {
    const init = hostInit!;
    hostInit = undefined;
    const old = current;
    translated = (async () => {
      let started: Awaited<ReturnType<typeof startLegacyHostSession>>;
      try {
        started = await startLegacyHostSession(new HttpChannel(opts.url, remote), init, refusal, (msg) => toHost.write(msg));
      } catch (err) {
        fail(init.id, err as Error);
        return undefined;
      }
      ({ session: translation, connection } = started);
      say(`the server speaks only ${started.version}: translating for a host of the initialize era`);
      connection.on('end', () => {
        if (closing) return;
        gaveUp = true;
        process.stdin.destroy();
      });
      return translation;
    })();
    void old.close();
  };

  const fromHost = new FrameDecoder({ onInvalid: 'skip' });
  fromHost.on('invalid', (err: FrameError) => say(`skipped a bad frame from the host: ${err.code}: ${err.message}`));
  try {
    for await (const msg of process.stdin.pipe(fromHost)) {
      if (translated !== undefined) {
        // In order: each waits for the translation to be ready, and the one before it to be handed on.
        translated = translated.then((session) => {
          session?.fromHost(msg);
          return session;
        });
        continue;
      }
      const request = isObject(msg) && 'method' in msg && 'id' in msg ? (msg as { id: unknown; method: string; params?: unknown }) : undefined;
      if (request?.method === 'initialize') {
        hostInit = { id: request.id, params: isObject(request.params) ? request.params : {} };
        // A host that probed the modern way and fell back: the session from here on is a legacy one.
        if (current instanceof HttpChannel) current.useProtocol('legacy', undefined);
      }
      // A modern host's requests carry their revision: the channel then sends the headers it requires.
      const asked =
        request !== undefined && isObject(request.params) && isObject(request.params._meta) ? request.params._meta[META_PROTOCOL_VERSION] : undefined;
      if (typeof asked === 'string' && current instanceof HttpChannel && pickModernVersion([asked]) !== undefined)
        current.useProtocol('modern', asked);
      const channel = current;
      // Each POST starts at once, in the host's order, and is answered on its own stream: a slow request does
      // not hold back the ones after it (a cancellation among them).
      void channel.send(msg).catch(async (err: Error) => {
        // Not Streamable HTTP at all (400, 404 or 405 to initialize): the deprecated HTTP+SSE transport.
        if (request?.method === 'initialize' && channel instanceof HttpChannel && isFallbackStatus(err) && channel === current) {
          const sse = new SseChannel(opts.url, remote);
          current = sse;
          attach(sse);
          void channel.close();
          try {
            await sse.open();
            say('the server speaks the HTTP+SSE transport (2024-11-05)');
            return await sse.send(msg);
          } catch (sseErr) {
            err = sseErr as Error;
          }
        }
        if (request === undefined) say(err.message);
        else fail(request.id, err);
      });
    }
  } catch {
    // stdin destroyed after the channel gave up: go on to the exit.
  }
  closing = true;
  translation?.close();
  await Promise.all([current.close(), connection?.close()]);
  toHost.end();
  await written;
  return gaveUp ? 1 : 0;
}

function isFallbackStatus(err: unknown): boolean {
  return err instanceof ConnectionError && err.code === 'HTTP_STATUS' && [400, 404, 405].includes(err.status ?? 0);
}
