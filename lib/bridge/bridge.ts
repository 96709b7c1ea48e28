/*
 * bridge(): a stdio MCP server (as bytes on `input` and `output`) that forwards every message, both ways, to a
 * remote server, so that hosts that speak only stdio can use remote servers. `mcp-frame bridge` is this on its
 * own stdin and stdout.
 *
 * - Streamable HTTP with its resumption; a server that refuses the host's initialize with HTTP 400, 404 or 405
 *   is tried over the deprecated HTTP+SSE transport, as connect() does.
 * - A modern host (its requests carry the 2026-07-28 `_meta`) passes through, with the headers that revision
 *   requires.
 * - A legacy host in front of a modern-only server (it refuses initialize with -32022 naming only modern
 *   revisions) is translated: see LegacyHostSession.
 * - A host that does not read its output stops the remote server's streams being read (holdInput), instead of
 *   this process buffering all they carry.
 */
import { pipeline } from 'node:stream/promises';
import type { Readable, Writable } from 'node:stream';
import type { AuthOptions } from '../client/auth/types.js';
import type { Channel } from '../client/channel.js';
import type { RemoteServerConfig } from '../client/config.js';
import type { Connection } from '../client/connection.js';
import { ConnectionError } from '../client/errors.js';
import { HttpChannel, type ReconnectOptions } from '../client/http.js';
import { SseChannel } from '../client/sse.js';
import { startLegacyHostSession } from '../client/translate.js';
import { type LegacyHostSession, modernOnlyRefusal } from '../protocol/translate.js';
import { type FrameError, safeLine, frameProblem } from '../errors.js';
import { NameFilter } from '../gateway/names.js';
import { idKey, isObject } from '../jsonrpc.js';
import { META_PROTOCOL_VERSION, pickModernVersion } from '../protocol/modern.js';
import { FrameDecoder, FrameEncoder } from '../streams.js';
import { CODES } from '../protocol/codes.js';

export interface BridgeOptions {
  /** The host's messages, as bytes (newline-delimited JSON). @defaultValue process.stdin */
  input?: Readable;
  /** Where the server's messages go, framed. @defaultValue process.stdout */
  output?: Writable;
  /** The server's name in messages. @defaultValue the URL's host */
  name?: string;
  /** Sent on every request, over the entry's own headers. */
  headers?: Record<string, string>;
  reconnect?: ReconnectOptions | false;
  /** Sign in when the server asks for it. */
  auth?: AuthOptions;
  /** A line for each thing worth saying (a fallback, a reconnection, a bad frame). @defaultValue stderr, prefixed `mcp-frame bridge:` */
  log?: (line: string) => void;
  /**
   * Tools the host is not to see (globs on their names, `*` and `?`): left out of every tools/list answer, and a
   * tools/call of one is answered here with -32602, never sent on.
   */
  ignoreTools?: string[];
}

export interface BridgeResult {
  /** The remote server went away for good (reconnection gave up): the host's input was ended for it. */
  gaveUp: boolean;
}

/** Serves the host on `input`/`output` until its input ends (or the server is gone for good). */
export async function bridge(entry: RemoteServerConfig, options: BridgeOptions = {}): Promise<BridgeResult> {
  const run = new BridgeRun(entry, options);
  await run.open();
  return run.serve();
}

function isFallbackStatus(err: unknown): boolean {
  return err instanceof ConnectionError && err.code === 'HTTP_STATUS' && [400, 404, 405].includes(err.status ?? 0);
}

/** A pass-through channel: to a Streamable HTTP server, or (the fallback) an HTTP+SSE one. */
type Passage = HttpChannel | SseChannel;

class BridgeRun {
  readonly #url: string;
  readonly #remote: { name?: string; headers: Record<string, string>; reconnect?: ReconnectOptions | false; auth?: AuthOptions };
  readonly #input: Readable;
  readonly #say: (line: string) => void;
  readonly #toHost = new FrameEncoder();
  readonly #fromHostFrames = new FrameDecoder({ onInvalid: 'skip' });
  readonly #written: Promise<void>;
  #closing = false;
  #gaveUp = false;
  /** The host's initialize, until answered: what a fallback or a translation answers. */
  #hostInit: { id: unknown; params: Record<string, unknown> } | undefined;
  /**
   * What the server sent before the host's initialize was answered: held, then written after the answer (the
   * lifecycle: nothing may reach a host before its initialize result).
   */
  #early: unknown[] = [];
  /** A legacy host's session over a modern-only server, once the server said it is one. */
  #translated: Promise<LegacyHostSession | undefined> | undefined;
  #translation: LegacyHostSession | undefined;
  #connection: Connection | undefined;
  #current: Passage;
  /** With ignoreTools: the names the host may see, and the ids of its tools/list requests not yet answered. */
  readonly #tools: NameFilter | undefined;
  readonly #listing = new Set<string>();

  constructor(entry: RemoteServerConfig, options: BridgeOptions) {
    this.#url = entry.url;
    this.#remote = {
      ...(options.name === undefined ? {} : { name: options.name }),
      headers: { ...entry.headers, ...options.headers },
      ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
      ...(options.auth === undefined ? {} : { auth: options.auth }),
      ...(entry.socketPath === undefined ? {} : { socketPath: entry.socketPath }),
    };
    this.#tools = options.ignoreTools === undefined || options.ignoreTools.length === 0 ? undefined : new NameFilter([], options.ignoreTools);
    this.#input = options.input ?? process.stdin;
    this.#say = options.log ?? ((line) => void process.stderr.write(`mcp-frame bridge: ${safeLine(line)}\n`));
    this.#written = pipeline(this.#toHost, options.output ?? process.stdout).catch(() => undefined);
    this.#current = entry.type === 'sse' ? new SseChannel(this.#url, this.#remote) : new HttpChannel(this.#url, this.#remote);
    this.#attach(this.#current);
  }

  /** An SSE entry opens its stream first (a Streamable HTTP one needs nothing before the host's first message). */
  async open(): Promise<void> {
    const current = this.#current;
    if (!('open' in current)) return;
    try {
      await current.open();
    } catch (err) {
      await this.#current.close();
      this.#toHost.end();
      throw err;
    }
  }

  async serve(): Promise<BridgeResult> {
    const fromHost = this.#fromHostFrames;
    fromHost.on('invalid', (err: FrameError) => this.#say(`skipped a bad frame from the host: ${frameProblem(err)}`));
    try {
      for await (const msg of this.#input.pipe(fromHost)) this.#fromHost(msg);
    } catch {
      // The input destroyed after the channel gave up: go on to the end.
    }
    this.#closing = true;
    this.#translation?.close();
    await Promise.all([this.#current.close(), this.#connection?.close()]);
    this.#toHost.end();
    await this.#written;
    return { gaveUp: this.#gaveUp };
  }

  /** The server is gone for good: the host's input is read no more, and serve() goes on to the end. */
  #stopInput(): void {
    this.#input.unpipe(this.#fromHostFrames);
    this.#input.destroy();
    this.#fromHostFrames.destroy();
  }

  /** A request the remote side can no longer answer gets an error response, so that the host does not hang. */
  #fail(id: unknown, error: Error): void {
    this.#say(error.message);
    this.#toHost.write({ jsonrpc: '2.0', id, error: { code: CODES.serverError, message: safeLine(error.message) } });
  }

  /** The listeners of a pass-through channel: messages to the host, with backpressure; reports on the log. */
  #attach(channel: Passage): void {
    let release: (() => void) | undefined;
    channel.on('message', (msg: unknown) => {
      if (channel !== this.#current) return;
      const init = this.#hostInit;
      if (init !== undefined) {
        if (!isObject(msg) || msg.id !== init.id || 'method' in msg) return void this.#early.push(msg);
        if (modernOnlyRefusal(msg)) return void this.#translate(msg);
        this.#hostInit = undefined;
      }
      let room = this.#toHost.write(this.#shown(msg));
      for (const held of this.#early.splice(0)) room = this.#toHost.write(this.#shown(held));
      if (room || release !== undefined || channel.holdInput === undefined) return;
      release = channel.holdInput();
      this.#toHost.once('drain', () => {
        release?.();
        release = undefined;
      });
    });
    channel.on('invalid', (err: FrameError) => this.#say(`skipped a bad frame from the server: ${frameProblem(err)}`));
    channel.on('reconnecting', (r: { attempt: number; waitMs: number; reason: string }) =>
      this.#say(`reconnecting (attempt ${r.attempt}, in ${r.waitMs} ms): ${r.reason}`),
    );
    channel.on('undeliverable', (ids: unknown[], error: ConnectionError) => {
      for (const id of ids) this.#fail(id, error);
    });
    // The channel ends on its own only when it gave up resuming; then the host is told by the end of the output.
    channel.on('end', () => {
      // A channel left for another (the SSE fallback, a translation) ends as it should.
      if (this.#closing || channel !== this.#current || this.#translated !== undefined) return;
      this.#gaveUp = true;
      this.#say(channel.endError('the remote server is gone').message);
      this.#stopInput();
    });
  }

  /** The server is modern-only: a Connection speaks to it, and the host gets a legacy session from here. */
  #translate(refusal: Record<string, unknown>): void {
    const init = this.#hostInit!;
    this.#hostInit = undefined;
    const old = this.#current;
    this.#translated = (async () => {
      let started: Awaited<ReturnType<typeof startLegacyHostSession>>;
      try {
        started = await startLegacyHostSession(new HttpChannel(this.#url, this.#remote), init, refusal, (msg) =>
          this.#toHost.write(this.#shown(msg)),
        );
      } catch (err) {
        this.#fail(init.id, err as Error);
        return undefined;
      }
      this.#translation = started.session;
      this.#connection = started.connection;
      this.#say(`the server speaks only ${started.version}: translating for a host of the initialize era`);
      started.connection.on('end', () => {
        if (this.#closing) return;
        this.#gaveUp = true;
        this.#stopInput();
      });
      return started.session;
    })();
    void old.close();
  }

  /** A server message as the host may see it: a tools/list answer without the tools left out. */
  #shown(msg: unknown): unknown {
    if (this.#tools === undefined || !isObject(msg) || 'method' in msg || !('id' in msg) || !this.#listing.delete(idKey(msg.id))) return msg;
    const result = msg.result;
    if (!isObject(result) || !Array.isArray(result.tools)) return msg;
    const tools = result.tools.filter((t: unknown) => !isObject(t) || typeof t.name !== 'string' || this.#tools!.passes(t.name));
    return { ...msg, result: { ...result, tools } };
  }

  /** With ignoreTools: notes a tools/list to filter, and answers a tools/call of a tool left out; true when answered here. */
  #leftOut(msg: unknown): boolean {
    if (this.#tools === undefined || !isObject(msg) || !('id' in msg)) return false;
    if (msg.method === 'tools/list') this.#listing.add(idKey(msg.id));
    if (msg.method !== 'tools/call' || !isObject(msg.params) || typeof msg.params.name !== 'string') return false;
    if (this.#tools.passes(msg.params.name)) return false;
    this.#toHost.write({ jsonrpc: '2.0', id: msg.id, error: { code: CODES.invalidParams, message: `Unknown tool: ${safeLine(msg.params.name)}` } });
    return true;
  }

  #fromHost(msg: unknown): void {
    if (this.#leftOut(msg)) return;
    if (this.#translated !== undefined) {
      // In order: each waits for the translation to be ready, and the one before it to be handed on.
      this.#translated = this.#translated.then((session) => {
        session?.fromHost(msg);
        return session;
      });
      return;
    }
    const request = isObject(msg) && 'method' in msg && 'id' in msg ? (msg as { id: unknown; method: string; params?: unknown }) : undefined;
    const current: Channel = this.#current;
    if (request?.method === 'initialize') {
      this.#hostInit = { id: request.id, params: isObject(request.params) ? request.params : {} };
      // A host that probed the modern way and fell back: the session from here on is a legacy one.
      current.useProtocol?.('legacy', undefined);
    }
    // A modern host's requests carry their revision: the channel then sends the headers it requires.
    const asked =
      request !== undefined && isObject(request.params) && isObject(request.params._meta) ? request.params._meta[META_PROTOCOL_VERSION] : undefined;
    if (typeof asked === 'string' && pickModernVersion([asked]) !== undefined) current.useProtocol?.('modern', asked);
    // Each POST starts at once, in the host's order, and is answered on its own stream: a slow request does not
    // hold back the ones after it (a cancellation among them).
    void current.send(msg).catch((err: Error) => this.#sendFailed(current, msg, request, err));
  }

  /** A send that failed: an initialize refused as Streamable HTTP tries HTTP+SSE; anything else fails its request. */
  async #sendFailed(channel: Channel, msg: unknown, request: { id: unknown; method: string } | undefined, err: Error): Promise<void> {
    // Only Streamable HTTP falls back (the channel that carries both eras); an SSE channel is the fallback.
    const streamable = channel.eras === undefined;
    if (request?.method === 'initialize' && streamable && isFallbackStatus(err) && channel === this.#current) {
      const sse = new SseChannel(this.#url, this.#remote);
      this.#current = sse;
      this.#attach(sse);
      void channel.close();
      try {
        await sse.open();
        this.#say('the server speaks the HTTP+SSE transport (2024-11-05)');
        return await sse.send(msg);
      } catch (sseErr) {
        err = sseErr as Error;
      }
    }
    if (request === undefined) this.#say(err.message);
    else this.#fail(request.id, err);
  }
}
