/*
 * The JSON-RPC session: ids, pending requests, timeouts, cancellation, the server's requests and
 * notifications, and the 'frame' trace, over any Channel.
 */
import { loadTraceApi, traceApi, withActiveTrace } from '../protocol/trace.js';
import { EventEmitter } from 'node:events';
import { FrameError, preview } from '../errors.js';
import { jsonRpcProblem, isObject } from '../jsonrpc.js';
import { VERSION } from '../version.js';
import { forwardWhenListened, type Channel, type Direction } from './channel.js';
import type { AuthOptions } from './auth/types.js';
import { legacyAgreed, type ListenFilter, wantedBy } from '../protocol/listen.js';
import { listPages } from '../protocol/paging.js';
import {
  LATEST_LEGACY_PROTOCOL_VERSION,
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '../protocol/versions.js';
import { ConnectionError, type ExitStatus } from './errors.js';
import type { ReconnectOptions } from './http.js';
import {
  type ClientMeta,
  INPUT_CAPABILITIES,
  isModernError,
  isModernVersion,
  MODERN_ERRORS,
  MODERN_PROTOCOL_VERSIONS,
  pickModernVersion,
  type ProtocolEra,
  withModernMeta,
  META_SUBSCRIPTION_ID,
} from '../protocol/modern.js';
import type { StdioOptions } from './stdio.js';
import type { Caller } from '../protocol/caller.js';
import { CODES } from '../protocol/codes.js';
import { RpcError } from '../protocol/rpc-error.js';

export { LATEST_LEGACY_PROTOCOL_VERSION, LATEST_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS };
export type { ListenFilter };

export { RpcError };

export interface RequestOptions {
  /**
   * Reject, and tell the server with notifications/cancelled, after this long.
   * @defaultValue the connection's requestTimeoutMs (60 s)
   */
  timeoutMs?: number;
  /** Abort the request: it rejects with ABORTED and the server is told with notifications/cancelled. */
  signal?: AbortSignal;
  /**
   * Modern era: a value handed back, as the handler's third argument, to the onRequest handler of each input
   * request (`input_required`) this request gets, so that a handler serving several callers knows whose it is.
   */
  related?: unknown;
  /**
   * Whom the request is sent for, when this connection carries several callers' requests: the channel is handed it
   * with the request and its cancellation (a gateway's view of a shared gateway tells callers apart by it).
   */
  caller?: Caller | undefined;
  /**
   * Modern era: the client capabilities this request declares, in place of the connection's (a gateway declares
   * for each caller's request what that caller declared).
   */
  capabilities?: Record<string, unknown> | undefined;
  /**
   * Modern era: an `input_required` result is returned as it came (a gateway passes it on to a client of its
   * own), not answered through the onRequest handlers and sent again.
   */
  passInput?: boolean;
  /**
   * Called with each progress notification of this request (the server's `progress`, and `total` and `message`
   * when it gives them): a progress token of the connection's own is put in the request's `_meta` (one given
   * there is replaced), and the notifications stop reaching it once the request settles.
   */
  onProgress?: (progress: Progress) => void;
}

/** A progress notification's news (notifications/progress). */
export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

export interface ConnectOptions extends StdioOptions {
  /**
   * How long the whole handshake may take.
   * @defaultValue 30000
   */
  timeoutMs?: number;
  /**
   * The default timeout of requests.
   * @defaultValue 60000
   */
  requestTimeoutMs?: number;
  /**
   * `'auto'`: find the server's era. A modern server (2026-07-28 on) answers a `server/discover` sent the modern
   * way; anything else (an error that is not a modern one, an HTTP 4xx, or on stdio no answer within
   * `probeTimeoutMs`) is taken as legacy, and the initialize handshake follows, asking for
   * LATEST_LEGACY_PROTOCOL_VERSION. The verdict is kept per server entry in `eraCache`. A revision
   * instead skips detection: a modern one is spoken at once, a legacy one asked for in initialize.
   * @defaultValue 'auto'
   */
  protocolVersion?: string;
  /** On stdio (or a socket): how long the `server/discover` probe waits before the server is taken as legacy. @defaultValue 2000 */
  probeTimeoutMs?: number;
  /** @defaultValue { name: 'mcp-frame', version } */
  clientInfo?: { name: string; version: string; [key: string]: unknown };
  /** @defaultValue {} */
  capabilities?: Record<string, unknown>;
  /** For an http server: how dropped streams are resumed (`false`: never). */
  reconnect?: ReconnectOptions | false;
  /** For an http server: a stream silent this long is taken as broken and resumed. @defaultValue 300000 */
  idleTimeoutMs?: number;
  /**
   * For an http or sse server: sign in with the MCP authorization flow (OAuth 2.1) when it answers 401. Time
   * spent waiting for the user in authorize() does not count against timeoutMs or a request's timeout.
   */
  auth?: AuthOptions;
  /**
   * A remote server: the bearer token of each request, asked for each time (a gateway's token exchanged for its
   * caller), in place of a sign-in; a 401 is then AUTH_REQUIRED. Its value appears nowhere else.
   */
  bearer?: () => Promise<string>;
  /** Called with the Connection before the handshake, to attach listeners ('frame', 'stderr', 'invalid') and request handlers. */
  onSpawn?: (connection: Connection) => void;
  /**
   * The server's log messages wanted from this level up: asked on every request of a modern server, and sent as
   * `logging/setLevel` after the handshake to a legacy server that offers logging.
   */
  logLevel?: 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';
  /**
   * When an elicitation/create handler accepts a form and leaves fields out, fill them with the `default`s the
   * requested schema gives (SEP-1034): the server gets the values the user was shown. `false` sends what the
   * handler returned, as it is.
   * @defaultValue true
   */
  elicitationDefaults?: boolean;
  /** Where the era found for each server is kept, so that it is not probed again; `false`: probe every time. @defaultValue defaultEraCache */
  eraCache?: EraCache | false;
}

/**
 * An accepted elicitation's content with the requested schema's defaults for the fields it leaves out (SEP-1034);
 * any other result as it is.
 */
function withElicitationDefaults(params: unknown, result: unknown): unknown {
  if (!isObject(result) || result.action !== 'accept' || !isObject(params)) return result;
  const schema = isObject(params.requestedSchema) ? params.requestedSchema : undefined;
  const properties = schema !== undefined && isObject(schema.properties) ? schema.properties : undefined;
  if (properties === undefined) return result;
  const content: Json = isObject(result.content) ? { ...result.content } : {};
  let filled = false;
  for (const [name, property] of Object.entries(properties)) {
    if (!isObject(property) || !('default' in property) || Object.hasOwn(content, name)) continue;
    Object.defineProperty(content, name, { value: property.default, enumerable: true, writable: true, configurable: true });
    filled = true;
  }
  return filled ? { ...result, content } : result;
}

/** A message crossing the connection, for tracing: which way, its size on the wire, a short redacted preview. */
export interface FrameTrace {
  direction: Direction;
  /** The frame's size in bytes as it crossed: a sent frame whole, a received one's JSON text (no line end). */
  bytes: number;
  preview: string;
}

/** An open listen(): what the server agreed to send, and how to stop. */
export interface Subscription {
  acknowledged: ListenFilter;
  close(): Promise<void>;
}

/** How many times a modern request may come back `input_required` before the client gives up. */
export const MAX_INPUT_ROUNDS = 8;

/** The longest delay a Node timer takes; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A timeout as a timer delay: undefined for no timeout (Infinity), a RangeError for a value a timer cannot
 * wait (negative, NaN, or 2^31 ms and over, which Node would turn into 1 ms).
 */
function timerDelay(ms: number, what: string): number | undefined {
  if (ms === Infinity) return undefined;
  if (!(ms >= 0 && ms <= MAX_TIMER_MS)) {
    throw new RangeError(`${what} must be a number of milliseconds from 0 to ${MAX_TIMER_MS}, or Infinity for none; got ${String(ms)}`);
  }
  return ms;
}

/** The time left before `deadline`, or Infinity when there is none. */
/** One request's time, shared by the several messages it may take (input rounds, a recovery): what is left of it. */
class Budget {
  readonly #method: string;
  readonly #timeoutMs: number;
  readonly #deadline: number;

  constructor(method: string, timeoutMs: number) {
    this.#method = method;
    this.#timeoutMs = timeoutMs;
    this.#deadline = timeoutMs === Infinity ? Infinity : Date.now() + timeoutMs;
  }

  /** `options` with the time left as its timeout; TIMEOUT when none is. */
  options(options: RequestOptions): RequestOptions {
    if (this.#deadline === Infinity) return options;
    const rest = this.#deadline - Date.now();
    if (rest <= 0) throw new ConnectionError('TIMEOUT', `request ${this.#method} timed out after ${this.#timeoutMs} ms`);
    return { ...options, timeoutMs: rest };
  }
}

function left(deadline: number, timeoutMs: number | undefined): number {
  return timeoutMs === Infinity ? Infinity : Math.max(0, deadline - Date.now());
}

/**
 * The era found per server entry (its command line, URL or socket path), so that a server this process has
 * spoken to is not probed again. connect() uses `defaultEraCache` unless given one (`eraCache`), or `false`.
 */
export class EraCache {
  readonly #eras = new Map<string, ProtocolEra>();

  get(key: string): ProtocolEra | undefined {
    return this.#eras.get(key);
  }

  set(key: string, era: ProtocolEra): void {
    this.#eras.set(key, era);
  }

  /** Forgets one entry's verdict, or every one (a server that moved to another era, a port used again). */
  forget(key?: string): void {
    if (key === undefined) this.#eras.clear();
    else this.#eras.delete(key);
  }
}

/** How long the era probe waits for a stdio server (or a socket) by default: ConnectOptions.probeTimeoutMs. */
export const PROBE_TIMEOUT_MS = 2000;

/** The process's own EraCache, for the life of the process. */
export const defaultEraCache = new EraCache();

/**
 * Whether a failed probe says "legacy server": any JSON-RPC error (a modern one was handled before), on HTTP a
 * 4xx, on stdio no answer in time. A process that died, a 5xx or HTTP silence is a failure, not a verdict.
 */
function isLegacyVerdict(err: unknown, http: boolean): boolean {
  if (err instanceof RpcError) return true;
  if (!(err instanceof ConnectionError)) return false;
  if (err.code === 'TIMEOUT') return !http;
  return err.code === 'HTTP_STATUS' && err.status !== undefined && err.status >= 400 && err.status < 500;
}

type Json = Record<string, unknown>;
/** `related`: the RequestOptions.related of the request that asked for this input, when known (modern era). */
type RequestHandler = (params: unknown, request: Json, related?: unknown) => unknown;
type NotificationHandler = (params: unknown, notification: Json) => void;

interface Pending {
  method: string;
  /** RequestOptions.related: handed to the handlers of what a channel says belongs to this request. */
  related: unknown;
  resolve(result: unknown): void;
  reject(error: Error): void;
  /** Rejects with ABORTED and tells the server with notifications/cancelled. */
  cancel(reason: string): void;
}

/**
 * A JSON-RPC session with an MCP server over a Channel (a child process's stdio, or any pair of byte
 * streams): requests with timeouts and cancellation, notifications, and requests from the server (ping is
 * answered; others go to onRequest handlers or get -32601). Made by connect().
 *
 * Events: 'notification' (message, and the `related` of the request it belongs to when the channel says), 'invalid' (FrameError: a stray or broken frame from the server),
 * 'stderr' (line), 'frame' (FrameTrace, for each message in either direction), 'exit' (ExitStatus),
 * 'unmatched' (a response whose id matches no pending request), 'error' (an exception thrown by an
 * onNotification handler; without an 'error' listener it becomes a process warning), and over HTTP
 * 'reconnecting' ({ attempt, waitMs, reason }) and 'reconnected' ({ attempt }).
 *
 * @example
 * ```ts
 * const server = await connect({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] });
 * server.on('notification', (msg) => console.log(msg.method));
 * const result = await server.request('tools/call', { name: 'echo', arguments: { message: 'hi' } }, { timeoutMs: 5000 });
 * await server.close();
 * ```
 */
export class Connection extends EventEmitter {
  #closeAsked = false;
  readonly #channel: Channel;
  readonly #pending = new Map<number, Pending>();
  /** The session is opening (the era probe, the handshake): a server that ends now failed to start. */
  #opening = false;
  readonly #requestHandlers = new Map<string, RequestHandler>();
  #elicitationDefaults = true;
  readonly #notificationHandlers = new Map<string, NotificationHandler[]>();
  readonly #requestTimeoutMs: number;
  #nextId = 1;
  #initializeResult: Json | undefined;
  #era: ProtocolEra | undefined;
  /** What every modern request carries in its `_meta`; undefined in the legacy era. */
  #meta: ClientMeta | undefined;
  /** The `capabilities` option, over what the handlers declare. */
  #declared: Json = {};
  /** The modern metadata with the capabilities, for the #meta it was made from. */
  #metaCache: { base: ClientMeta | undefined; meta: ClientMeta } | undefined;
  /** The legacy revision to ask for in initialize, when a modern probe was answered with only legacy versions. */
  #legacyVersion: string | undefined;
  /** Modern era: the open subscriptions/listen streams, by the id of the request that opened each. */
  readonly #subscriptions = new Map<number, (msg: Json) => void>();

  constructor(channel: Channel, options: { requestTimeoutMs?: number } = {}) {
    super();
    this.#channel = channel;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    timerDelay(this.#requestTimeoutMs, 'requestTimeoutMs');
    // A channel may say which request of ours a message of the server's belongs to (an in-process gateway's does).
    channel.on('message', (msg: unknown, ours?: unknown) => this.#receive(msg, this.#pending.get(ours as number)?.related));
    channel.on('invalid', (err) => this.emit('invalid', err));
    channel.on('stderr', (line) => this.emit('stderr', line));
    forwardWhenListened(this, 'frame', () => channel.on('wire', (direction: Direction, text: string) => this.#trace(direction, text)));
    // A channel that resumes streams says so; a host may show it (mcp-frame call --trace does).
    channel.on('reconnecting', (info: unknown) => this.emit('reconnecting', info));
    channel.on('reconnected', (info: unknown) => this.emit('reconnected', info));
    channel.on('undeliverable', (ids: Array<string | number>, error: ConnectionError) => undeliverable(this.#pending, ids, error));
    // No answer can come any more: the requests waiting for one fail now, not at their timeouts. While the
    // session opens, the user asked for no request: the server failed to start, whatever the probe was.
    const why = (method: string): string => (this.#opening ? 'the server did not start' : `request ${method} failed`);
    channel.on('end', () => this.#rejectAll((method) => channel.endError(why(method))));
    channel.on('close', (status: ExitStatus) => {
      this.#rejectAll((method) => channel.endError(why(method)));
      this.emit('exit', status);
    });
  }

  /** Whether close() was called: an exit from now on is the client's doing, not the server's. */
  get closing(): boolean {
    return this.#closeAsked;
  }

  /** How the messages travel: `stdio`, `streamable-http`, `sse` (the deprecated HTTP+SSE transport), or undefined for another channel. */
  get transport(): 'stdio' | 'streamable-http' | 'sse' | undefined {
    return this.#channel.transport;
  }

  /** The server's process id, when the channel is a child process. */
  get pid(): number | undefined {
    return this.#channel.pid;
  }

  /**
   * Stops reading the server's output until the returned function is called (a consumer slower than the server:
   * the server is held by its pipe or its streams' flow control). A channel that cannot hold returns a no-op.
   */
  holdInput(): () => void {
    return this.#channel.holdInput?.() ?? (() => undefined);
  }

  /** The protocol revision spoken, once connected: the one the server agreed to, or the modern one chosen. */
  get protocolVersion(): string | undefined {
    return this.#meta?.protocolVersion ?? (this.#initializeResult?.protocolVersion as string | undefined);
  }

  /** `'modern'` (no handshake, metadata on every request) or `'legacy'` (the initialize handshake), once connected. */
  get era(): ProtocolEra | undefined {
    return this.#era;
  }

  /**
   * The server's answer to initialize (protocolVersion, capabilities, serverInfo, instructions), or on a
   * modern server its answer to `server/discover` (supportedVersions, capabilities, and serverInfo in `_meta`).
   */
  get initializeResult(): Json | undefined {
    return this.#initializeResult;
  }

  /** The last lines the server wrote to stderr (none when the channel is not a process). */
  get stderrTail(): string[] {
    return this.#channel.stderrTail ?? [];
  }

  /**
   * Sends a request and resolves with its result; an error response rejects with RpcError. To a modern server
   * the request carries the protocol metadata in `params._meta` (the caller's own `_meta` members are kept);
   * an UnsupportedProtocolVersion error is retried once with a version from the server's list.
   */
  request(method: string, params?: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (options.onProgress !== undefined) return withProgress(this, method, params, options, options.onProgress);
    // The active trace (a host's OpenTelemetry span) goes with the request, in _meta.
    if (traceApi() !== undefined) params = withActiveTrace(params);
    if (this.#meta === undefined) return this.#call(method, params, options);
    return this.#modernRequest(method, params, options);
  }

  /**
   * Modern era: a request, and the multi round-trip pattern around it. An `input_required` result asks the
   * client for input (sampling, elicitation, roots): each input request goes to the onRequest handler of its
   * method, as a legacy server's own request would, and the request is sent again with the answers in
   * `inputResponses` and the server's `requestState` echoed as it came, at most MAX_INPUT_ROUNDS times.
   */
  async #modernRequest(method: string, params: unknown, options: RequestOptions): Promise<unknown> {
    // The caller's timeout bounds the whole request: every round, and any recovery inside one.
    const budget = new Budget(method, options.timeoutMs ?? this.#requestTimeoutMs);
    let current = params;
    for (let round = 0; ; round++) {
      const result = await this.#modernCall(method, current, options, budget);
      if (isObject(result) && result.resultType === 'complete') {
        // Complete is what every legacy result is: callers see the same shape from both eras. The result was
        // parsed for this request alone, so it is changed in place rather than copied.
        delete result.resultType;
        return result;
      }
      if (!isObject(result) || result.resultType !== 'input_required' || options.passInput === true) return result;
      if (round >= MAX_INPUT_ROUNDS) {
        throw new ConnectionError(
          'INPUT_ROUNDS',
          `server "${this.#channel.name}" still asked for input after ${MAX_INPUT_ROUNDS} rounds of ${method}; giving up`,
        );
      }
      const responses = await inputResponses(result, method, this.#channel.name, (inputMethod, inputParams) => {
        const handler = this.#requestHandlers.get(inputMethod);
        return handler && (() => this.#handled(handler, { jsonrpc: '2.0', method: inputMethod, params: inputParams }, options.related));
      });
      current = {
        ...(isObject(params) ? params : {}),
        ...(Object.keys(responses).length > 0 ? { inputResponses: responses } : {}),
        ...(typeof result.requestState === 'string' ? { requestState: result.requestState } : {}),
      };
    }
  }

  async #modernCall(method: string, params: unknown, options: RequestOptions, budget: Budget, refreshed = false): Promise<unknown> {
    const asked = this.#meta!.protocolVersion;
    try {
      return await this.#call(method, withModernMeta(params, this.#metaNow(options.capabilities)), budget.options(options));
    } catch (err) {
      // HeaderMismatch on a tool call: the tool's x-mcp-header declarations are not the ones the channel knows
      // (never listed, or changed). The tool list is read again (to its end, bounded), once, and the call sent
      // again with them.
      if (err instanceof RpcError && err.code === MODERN_ERRORS.headerMismatch && method === 'tools/call' && !refreshed) {
        await listPages(
          (cursor) => this.#call('tools/list', withModernMeta(cursor === undefined ? {} : { cursor }, this.#metaNow()), budget.options(options)),
          'tools',
        );
        return this.#modernCall(method, params, options, budget, true);
      }
      if (!(err instanceof RpcError) || err.code !== MODERN_ERRORS.unsupportedProtocolVersion) throw err;
      this.#useModern(versionFrom(err, asked, this.#channel.name, true));
      return this.#call(method, withModernMeta(params, this.#metaNow(options.capabilities)), budget.options(options));
    }
  }

  /**
   * The capabilities this client declares: those its handlers give (sampling/createMessage: sampling,
   * elicitation/create: elicitation, roots/list: roots), with the `capabilities` option over them.
   */
  #capabilities(): Json {
    const declared: Json = {};
    for (const [method, capability] of Object.entries(INPUT_CAPABILITIES)) if (this.#requestHandlers.has(method)) declared[capability] = {};
    return { ...declared, ...this.#declared };
  }

  /** The modern metadata: the capabilities as they are now (handlers may have been added), or a request's `own`; the log level. */
  #metaNow(own?: Record<string, unknown>): ClientMeta {
    // Made again only when the metadata or the handlers changed: every modern request carries it.
    if (this.#metaCache === undefined || this.#metaCache.base !== this.#meta) {
      this.#metaCache = { base: this.#meta, meta: { ...this.#meta!, capabilities: this.#capabilities() } };
    }
    const meta = this.#metaCache.meta;
    return own === undefined ? meta : { ...meta, capabilities: own };
  }

  /** One request, as is. `cancelOnTimeout: false` sends no notifications/cancelled (for the era probe). */
  #call(method: string, params: unknown, options: RequestOptions, cancelOnTimeout = true): Promise<unknown> {
    const id = this.#nextId++;
    const timeoutMs = options.timeoutMs ?? this.#requestTimeoutMs;
    const signal = options.signal;
    return new Promise<unknown>((resolve, reject) => {
      const delay = timerDelay(timeoutMs, 'timeoutMs');
      if (signal?.aborted)
        return reject(new ConnectionError('ABORTED', `request ${method} was aborted before it was sent`, { cause: signal.reason }));
      let timer: NodeJS.Timeout | undefined;
      const cancel = (error: ConnectionError, reason: string, tell = cancelOnTimeout): void => {
        if (!this.#pending.has(id)) return;
        done();
        reject(error);
        // The server may still be working on it; tell it to stop. It may be gone already: that is fine.
        const cancelled = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } };
        if (tell) this.#send(cancelled, options.caller).catch(() => undefined);
      };
      const onAbort = (): void =>
        cancel(new ConnectionError('ABORTED', `request ${method} was aborted`, { cause: signal?.reason }), 'aborted by the client', true);
      const done = (): void => {
        this.#pending.delete(id);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.#pending.set(id, {
        method,
        related: options.related,
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
        cancel: (reason) => cancel(new ConnectionError('ABORTED', `request ${method} was cancelled: ${reason}`), reason, true),
      });
      if (delay !== undefined) {
        const expire = (): void => {
          // Waiting for the user to sign in is not the server's slowness: the timeout starts again after it.
          if (this.#channel.signIn?.signingIn === true) {
            timer = setTimeout(expire, delay);
            return;
          }
          cancel(new ConnectionError('TIMEOUT', `request ${method} timed out after ${timeoutMs} ms`), `timed out after ${timeoutMs} ms`);
        };
        timer = setTimeout(expire, delay);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      const msg: Json = { jsonrpc: '2.0', id, method };
      if (params !== undefined) msg.params = params;
      this.#send(msg, options.caller).catch((err: Error) => this.#pending.get(id)?.reject(err));
    });
  }

  /** Sends a notification; resolves once it is written (or buffered within the stream's limits). */
  notify(method: string, params?: unknown): Promise<void> {
    const msg: Json = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.#send(msg);
  }

  /** Answers the server's requests for `method`; the handler's return value (or promise) is the result. */
  onRequest(method: string, handler: RequestHandler): this {
    this.#requestHandlers.set(method, handler);
    this.#metaCache = undefined;
    return this;
  }

  /**
   * Listens for list changes and resource updates: on a modern server a `subscriptions/listen` stream (its
   * notifications go to `onNotification`, and over HTTP a stream that breaks is opened again within the
   * reconnection budget); on a legacy server, what that era has: `resources/subscribe` for each of
   * `resourceSubscriptions`, and the session's own list-changed notifications, filtered the same way. Resolves
   * once the server has acknowledged, with what it agreed to send and a close() that ends it.
   */
  async listen(filter: ListenFilter, onNotification: (msg: Json) => void): Promise<Subscription> {
    if (this.#meta === undefined) return legacyListen(this, filter, onNotification);
    const id = this.#nextId;
    const abort = new AbortController();
    let acknowledge!: (agreed: ListenFilter) => void;
    const acknowledged = new Promise<ListenFilter>((resolve) => (acknowledge = resolve));
    this.#subscriptions.set(id, (msg) => {
      if (msg.method === 'notifications/subscriptions/acknowledged') {
        const params = isObject(msg.params) ? msg.params : {};
        return acknowledge(isObject(params.notifications) ? (params.notifications as ListenFilter) : {});
      }
      onNotification(msg);
    });
    const done = this.#call('subscriptions/listen', withModernMeta({ notifications: filter }, this.#metaNow()), {
      timeoutMs: Infinity,
      signal: abort.signal,
    });
    done.catch(() => undefined).finally(() => this.#subscriptions.delete(id));
    const agreed = await Promise.race([acknowledged, done.then(() => undefined)]);
    if (agreed === undefined)
      throw new ConnectionError('INVALID_RESPONSE', `server "${this.#channel.name}" ended subscriptions/listen without acknowledging it`);
    return {
      acknowledged: agreed,
      close: async () => {
        abort.abort();
        this.#subscriptions.delete(id);
        await done.catch(() => undefined);
      },
    };
  }

  /** Calls `handler` for each notification of `method` from the server. */
  onNotification(method: string, handler: NotificationHandler): this {
    const list = this.#notificationHandlers.get(method) ?? [];
    list.push(handler);
    this.#notificationHandlers.set(method, list);
    return this;
  }

  /**
   * Cancels every request in flight, as an interrupted host does: each rejects with ABORTED and the server is
   * told with notifications/cancelled. `initialize` is left to finish (the spec forbids cancelling it).
   */
  cancelAll(reason: string): void {
    for (const pending of [...this.#pending.values()]) if (pending.method !== 'initialize') pending.cancel(reason);
  }

  /**
   * Ends the connection: pending requests reject with CLOSED, stdin is closed, and the server gets SIGTERM,
   * then SIGKILL, if it does not leave. Resolves once it has exited.
   */
  close(): Promise<ExitStatus> {
    this.#closeAsked = true;
    const closing = this.#channel.close();
    this.#rejectAll((method) => new ConnectionError('CLOSED', `request ${method} failed: the connection was closed`));
    return closing;
  }

  /**
   * @internal Opens the session, used by connect(): finds the server's era (or takes the one asked for),
   * then speaks modern or performs the initialize handshake. `eraKey` names the server for the era cache.
   */
  async initialize(options: ConnectOptions, eraKey?: string): Promise<void> {
    this.#opening = true;
    try {
      await this.#open(options, eraKey);
    } finally {
      this.#opening = false;
    }
  }

  async #open(options: ConnectOptions, eraKey?: string): Promise<void> {
    const asked = options.protocolVersion ?? 'auto';
    // timeoutMs bounds the whole opening, the probe and the handshake together.
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    options = { ...options, timeoutMs: options.timeoutMs === Infinity ? Infinity : Math.max(0, deadline - Date.now()) };
    this.#declared = options.capabilities ?? {};
    this.#elicitationDefaults = options.elicitationDefaults !== false;
    this.#metaCache = undefined;
    const meta: Omit<ClientMeta, 'protocolVersion'> = {
      clientInfo: options.clientInfo ?? { name: 'mcp-frame', version: VERSION },
      capabilities: this.#capabilities(),
      ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
    };
    if (asked !== 'auto') {
      if (isModernVersion(asked)) return void (await this.#probe(options, { ...meta, protocolVersion: asked }, true));
      return this.#handshake(options, asked);
    }
    const cache = options.eraCache === false ? undefined : (options.eraCache ?? defaultEraCache);
    const known = eraKey === undefined ? undefined : cache?.get(eraKey);
    // A channel that carries only the legacy era (the deprecated HTTP+SSE transport) needs no probe.
    const probed = known !== 'legacy' && (this.#channel.eras?.includes('modern') ?? true);
    const modern = probed && (await this.#probe(options, { ...meta, protocolVersion: MODERN_PROTOCOL_VERSIONS[0]! }, false));
    if (eraKey !== undefined) cache?.set(eraKey, modern ? 'modern' : 'legacy');
    if (modern) return;
    try {
      // Time spent waiting for the user to sign in moves the deadline.
      const signIn = this.#channel.signIn?.waitedMs ?? 0;
      await this.#handshake(
        { ...options, timeoutMs: left(deadline + signIn, options.timeoutMs) },
        this.#legacyVersion ?? LATEST_LEGACY_PROTOCOL_VERSION,
      );
    } catch (err) {
      // A server that fixed its era on the probe it answered late (it started slowly) refuses initialize naming
      // a modern version: it is modern, and is spoken to so.
      const modernVersion = handshakeFailure(err, probed, this.#channel.name, options.timeoutMs);
      await this.#probe({ ...options, timeoutMs: left(deadline, options.timeoutMs) }, { ...meta, protocolVersion: modernVersion }, true);
      if (eraKey !== undefined) cache?.set(eraKey, 'modern');
    }
  }

  #useModern(protocolVersion: string, meta: Omit<ClientMeta, 'protocolVersion'> = this.#meta!): void {
    this.#meta = { ...meta, protocolVersion };
    this.#era = 'modern';
    this.#channel.useProtocol?.('modern', protocolVersion);
  }

  /**
   * `server/discover`, sent the modern way: true when the server is modern (its answer is then
   * initializeResult), false when it is legacy. `strict` (a modern version asked for) makes every failure an error.
   */
  async #probe(options: ConnectOptions, meta: ClientMeta, strict: boolean, retried = false): Promise<boolean> {
    this.#useModern(meta.protocolVersion, meta);
    const http = this.#channel.answersEveryRequest === true;
    // On a pipe, silence is a legacy verdict: the probe takes at most half the handshake's budget.
    const timeoutMs = strict || http ? options.timeoutMs! : Math.min(options.probeTimeoutMs ?? PROBE_TIMEOUT_MS, options.timeoutMs! / 2);
    try {
      const result = await this.#call('server/discover', withModernMeta(undefined, meta), { timeoutMs }, false);
      // A DiscoverResult names the versions; a server that answers any method with some result is not modern.
      if (!isObject(result) || !Array.isArray(result.supportedVersions)) return this.#legacy();
      if (!result.supportedVersions.includes(meta.protocolVersion)) {
        this.#useModern(versionFrom(new RpcError(0, '', { supported: result.supportedVersions }), meta.protocolVersion, this.#channel.name));
      }
      this.#initializeResult = result;
      return true;
    } catch (err) {
      const verdict = probeVerdict(err, { strict, retried, http, asked: meta.protocolVersion, server: this.#channel.name });
      if ('retry' in verdict) return this.#probe(options, { ...meta, protocolVersion: verdict.retry }, strict, true);
      if (verdict.version !== undefined) this.#legacyVersion = verdict.version;
      return this.#legacy();
    }
  }

  /** The probe's verdict "legacy": the modern metadata is dropped before the handshake. */
  #legacy(): false {
    this.#meta = undefined;
    this.#era = undefined;
    this.#channel.useProtocol?.('legacy', undefined);
    return false;
  }

  /** The initialize handshake, asking for `asked`. */
  async #handshake(options: ConnectOptions, asked: string): Promise<void> {
    const result = await this.request(
      'initialize',
      { protocolVersion: asked, capabilities: this.#capabilities(), clientInfo: options.clientInfo ?? { name: 'mcp-frame', version: VERSION } },
      { timeoutMs: options.timeoutMs ?? 30_000 },
    );
    checkInitialized(result, asked, this.#channel.name);
    this.#initializeResult = result;
    this.#era = 'legacy';
    await this.notify('notifications/initialized');
    // Best effort: a server that offers logging but refuses the level still serves the session.
    if (options.logLevel !== undefined && isObject(result.capabilities) && isObject(result.capabilities.logging)) {
      await this.request('logging/setLevel', { level: options.logLevel }, { timeoutMs: options.timeoutMs ?? 30_000 }).catch(() => undefined);
    }
  }

  #send(msg: Json, caller?: Caller): Promise<void> {
    return caller === undefined ? this.#channel.send(msg) : this.#channel.send(msg, caller);
  }

  #trace(direction: Direction, text: string): void {
    if (this.listenerCount('frame') === 0) return;
    this.emit('frame', { direction, bytes: Buffer.byteLength(text), preview: preview(text) } satisfies FrameTrace);
  }

  #rejectAll(error: (method: string) => Error): void {
    for (const pending of [...this.#pending.values()]) pending.reject(error(pending.method));
  }

  /** One message from the channel; a batch arrives as its elements. */
  #receive(msg: unknown, related: unknown): void {
    if (!isObject(msg)) return void this.emit('unmatched', msg);
    if (typeof msg.method === 'string') {
      if ('id' in msg) void this.#answer(msg, related);
      else this.#notification(msg, related);
      return;
    }
    const pending = typeof msg.id === 'number' ? this.#pending.get(msg.id) : undefined;
    if (pending === undefined) return void this.emit('unmatched', msg);
    const problem = jsonRpcProblem(msg);
    const scrub = (text: string): string => this.#channel.scrub?.(text) ?? text;
    if (problem !== undefined) {
      // `{"error": "boom"}` or no result at all is no answer: the request fails, and the frame is reported.
      const text = preview(scrub(JSON.stringify(msg)));
      this.emit('invalid', new FrameError('INVALID_MESSAGE', `not a JSON-RPC 2.0 response: ${problem}`, {}, text));
      const why = `server "${this.#channel.name}" answered ${pending.method} with a response that is not JSON-RPC 2.0 (${problem}): ${text}`;
      return pending.reject(new ConnectionError('INVALID_RESPONSE', why));
    }
    if (isObject(msg.error)) pending.reject(rpcErrorOf(msg.error, scrub));
    else pending.resolve(msg.result);
  }

  #notification(msg: Json, related: unknown): void {
    // A notification of a subscriptions/listen stream goes to the listener that opened it.
    const meta = isObject(msg.params) && isObject(msg.params._meta) ? msg.params._meta : undefined;
    const subscription = meta === undefined ? undefined : this.#subscriptions.get(meta[META_SUBSCRIPTION_ID] as number);
    if (subscription !== undefined) {
      subscription(msg);
      this.emit('notification', msg, related);
      return;
    }
    for (const handler of this.#notificationHandlers.get(msg.method as string) ?? []) {
      try {
        handler(msg.params, msg);
      } catch (err) {
        // A handler's own bug must not end the session: it goes to 'error' listeners, or becomes a warning.
        if (this.listenerCount('error') > 0) this.emit('error', err);
        else process.emitWarning(err as Error, { detail: `thrown by an onNotification handler for ${String(msg.method)}` });
      }
    }
    this.emit('notification', msg, related);
  }

  /** A handler's answer to a request of the server's (or an input request of a modern result), as sent. */
  async #handled(handler: RequestHandler, request: Json, related?: unknown): Promise<unknown> {
    const result = (await handler(request.params, request, related)) ?? {};
    return request.method === 'elicitation/create' && this.#elicitationDefaults ? withElicitationDefaults(request.params, result) : result;
  }

  async #answer(request: Json, related: unknown): Promise<void> {
    const { id, method } = request as { id: unknown; method: string };
    const handler = this.#requestHandlers.get(method) ?? (method === 'ping' ? () => ({}) : undefined);
    const reply = await replyOf(id, method, handler === undefined ? undefined : () => this.#handled(handler, request, related));
    await this.#send(reply).catch(() => undefined);
  }
}

/**
 * Opens the session over an open channel (the era found, then the initialize handshake on a legacy server) and
 * resolves with the Connection. `eraKey` names the server for the era cache; without it, every call probes.
 */
export async function connectOver(channel: Channel, options: ConnectOptions = {}, eraKey?: string): Promise<Connection> {
  // Listening from the start: a child that exits at once must find the Connection there to hear it.
  const connection = new Connection(channel, options);
  options.onSpawn?.(connection);
  try {
    // The trace API (when installed) loads during the handshake: requests after it carry the active context.
    await Promise.all([connection.initialize(options, eraKey), loadTraceApi()]);
  } catch (err) {
    // Reject now; the shutdown (stdin closed, then SIGTERM, then SIGKILL) goes on in the background.
    void connection.close();
    throw err;
  }
  return connection;
}

/**
 * The version to retry with after UnsupportedProtocolVersion, or a ConnectionError naming both sides. The newest
 * both speak; the one just tried again only when `again` (the revision's SHOULD is to pick a mutually supported
 * version and retry, and a server may refuse a version it lists once, say mid-deployment: one retry).
 */
function versionFrom(err: RpcError, asked: string, server: string, again = false): string {
  const offered = isObject(err.data) ? err.data.supported : undefined;
  const version = pickModernVersion(offered);
  if (version !== undefined && (version !== asked || again)) return version;
  const theirs = Array.isArray(offered) ? offered.map(String).join(', ') : 'none named';
  throw new ConnectionError(
    'UNSUPPORTED_VERSION',
    `server "${server}" does not speak protocol ${asked}; it speaks ${preview(theirs)}, this client ${[...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS].join(', ')}`,
  );
}

/**
 * Throws a ConnectionError (INVALID_RESPONSE) for an initialize result this client cannot take: one must name a
 * protocolVersion, the one asked for or another legacy revision this client speaks (a server may negotiate down);
 * one it does not is an error naming both.
 */
function checkInitialized(result: unknown, asked: string, server: string): asserts result is Json & { protocolVersion: string } {
  if (!isObject(result) || typeof result.protocolVersion !== 'string') {
    throw new ConnectionError(
      'INVALID_RESPONSE',
      `server "${server}" answered initialize without a protocolVersion: ${preview(JSON.stringify(result) ?? '')}`,
    );
  }
  if (result.protocolVersion !== asked && !LEGACY_PROTOCOL_VERSIONS.includes(result.protocolVersion)) {
    throw new ConnectionError(
      'INVALID_RESPONSE',
      `server "${server}" speaks protocol ${preview(result.protocolVersion)}; this client asked for ${asked} and speaks ${LEGACY_PROTOCOL_VERSIONS.join(', ')}`,
    );
  }
}

/** The answer to a server's request `id`: what `run` (its handler) gives, its error, or Method not found without one. */
async function replyOf(id: unknown, method: string, run: (() => Promise<unknown>) | undefined): Promise<Json> {
  if (run === undefined) return { jsonrpc: '2.0', id, error: { code: CODES.methodNotFound, message: `Method not found: ${method}` } };
  try {
    return { jsonrpc: '2.0', id, result: await run() };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return {
      jsonrpc: '2.0',
      id,
      error: { code: Number.isInteger(code) ? code : CODES.internalError, message: (err as Error).message ?? String(err) },
    };
  }
}

/**
 * The answers to an `input_required` result's inputRequests, by key, each from `answer(method, params)` (the
 * onRequest handler of its method); an input no handler answers is a ConnectionError (NO_HANDLER) naming it.
 */
async function inputResponses(
  result: Json,
  method: string,
  server: string,
  answer: (method: string, params: unknown) => (() => Promise<unknown>) | undefined,
): Promise<Json> {
  const responses: Json = {};
  const asked = isObject(result.inputRequests) ? result.inputRequests : {};
  for (const [key, input] of Object.entries(asked)) {
    const inputMethod = isObject(input) && typeof input.method === 'string' ? input.method : undefined;
    const run = inputMethod === undefined ? undefined : answer(inputMethod, (input as Json).params);
    if (run === undefined) {
      throw new ConnectionError(
        'NO_HANDLER',
        `server "${server}" asks for ${inputMethod ?? 'an input of no method'} to complete ${method}, and no handler answers it: connection.onRequest('${inputMethod}', ...)`,
      );
    }
    // A key such as __proto__ is an answer's name like any other: defined, never assigned.
    Object.defineProperty(responses, key, { value: await run(), enumerable: true, writable: true, configurable: true });
  }
  return responses;
}

let progressTokens = 1;

/** A request whose progress goes to `onProgress` (see RequestOptions.onProgress). */
async function withProgress(
  connection: Connection,
  method: string,
  params: unknown,
  options: RequestOptions,
  onProgress: (progress: Progress) => void,
): Promise<unknown> {
  const token = `mcp-frame-progress-${progressTokens++}`;
  const listener = (msg: Json): void => {
    if (msg.method !== 'notifications/progress' || !isObject(msg.params) || msg.params.progressToken !== token) return;
    const { progress, total, message } = msg.params;
    if (typeof progress !== 'number') return;
    onProgress({ progress, ...(typeof total === 'number' ? { total } : {}), ...(typeof message === 'string' ? { message } : {}) });
  };
  connection.on('notification', listener);
  const own = isObject(params) ? params : {};
  const meta = isObject(own._meta) ? own._meta : {};
  const { onProgress: _given, ...rest } = options;
  try {
    return await connection.request(method, { ...own, _meta: { ...meta, progressToken: token } }, rest);
  } finally {
    connection.off('notification', listener);
  }
}

/**
 * After a failed handshake: the modern version to speak when the server refused initialize naming one (it fixed its
 * era on a probe it answered late), else the error to throw: REFUSED for any other refusal, and TIMEOUT naming
 * both requests when a probed server answered neither.
 */
function handshakeFailure(err: unknown, probed: boolean, server: string, timeoutMs: number | undefined): string {
  if (err instanceof RpcError) {
    const modernVersion =
      err.code === MODERN_ERRORS.unsupportedProtocolVersion && isObject(err.data) ? pickModernVersion(err.data.supported) : undefined;
    if (modernVersion !== undefined) return modernVersion;
    throw new ConnectionError('REFUSED', `server "${server}" refused the handshake: error ${err.code}: ${preview(err.message)}`, { cause: err });
  }
  if (!(probed && err instanceof ConnectionError && err.code === 'TIMEOUT')) throw err;
  throw new ConnectionError('TIMEOUT', `server "${server}" answered neither server/discover nor initialize within ${timeoutMs} ms`, { cause: err });
}

/** A JSON-RPC error object as the RpcError a request rejects with, its message scrubbed of the channel's secrets. */
function rpcErrorOf(error: Json, scrub: (text: string) => string): RpcError {
  const { code, message, data } = error;
  return new RpcError(
    typeof code === 'number' ? code : CODES.internalError,
    typeof message === 'string' ? scrub(message) : 'error without a message',
    data,
  );
}

/**
 * What a failed server/discover probe says: a legacy server (`version`: the newest legacy revision it named, when
 * it named only legacy ones), a modern one to ask again at another version (`retry`, once), or an error to throw
 * (any failure when a modern version was asked for, a modern error, or no legacy verdict: see isLegacyVerdict).
 */
function probeVerdict(
  err: unknown,
  probe: { strict: boolean; retried: boolean; http: boolean; asked: string; server: string },
): { version: string | undefined } | { retry: string } {
  if (err instanceof RpcError && err.code === MODERN_ERRORS.unsupportedProtocolVersion) {
    const offered = isObject(err.data) ? err.data.supported : undefined;
    // Only legacy versions offered: the handshake follows, at the newest one both sides speak.
    const legacy = Array.isArray(offered) ? LEGACY_PROTOCOL_VERSIONS.find((v) => offered.includes(v)) : undefined;
    if (!probe.strict && pickModernVersion(offered) === undefined && legacy !== undefined) return { version: legacy };
    if (!probe.retried) return { retry: versionFrom(err, probe.asked, probe.server, true) };
  }
  if (probe.strict || (err instanceof RpcError && isModernError(err.code)) || !isLegacyVerdict(err, probe.http)) throw err;
  return { version: undefined };
}

/**
 * A listen on a legacy server: what its initialize result's capabilities can give of `filter` (its list changes;
 * resource updates through resources/subscribe), its notifications filtered to those.
 */
async function legacyListen(connection: Connection, filter: ListenFilter, onNotification: (msg: Json) => void): Promise<Subscription> {
  const agreed = legacyAgreed(filter, connection.initializeResult?.capabilities);
  const uris = agreed.resourceSubscriptions ?? [];
  for (const uri of uris) await connection.request('resources/subscribe', { uri });
  const listener = (msg: Json): void => {
    if (wantedBy(agreed, msg)) onNotification(msg);
  };
  connection.on('notification', listener);
  return {
    acknowledged: agreed,
    close: async () => {
      connection.off('notification', listener);
      for (const uri of uris) await connection.request('resources/unsubscribe', { uri }).catch(() => undefined);
    },
  };
}

/** Requests whose messages the channel could not deliver (`ids`): each fails with the channel's error, naming it. */
function undeliverable(pending: ReadonlyMap<number, Pending>, ids: Array<string | number>, error: ConnectionError): void {
  for (const id of ids) {
    const waiting = typeof id === 'number' ? pending.get(id) : undefined;
    waiting?.reject(new ConnectionError(error.code, `request ${waiting.method} failed: ${error.message}`, { status: error.status, cause: error }));
  }
}
