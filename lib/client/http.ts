/*
 * The Streamable HTTP channel. In the legacy era (MCP 2025-03-26 to 2025-11-25): each message a POST, answers
 * as JSON or on an SSE stream, server-initiated messages on a GET stream, a session id, and streams that resume
 * with Last-Event-ID after a drop. In the modern era (2026-07-28): no session and no GET stream, the request
 * metadata headers on every POST, and a response stream that breaks is answered by sending its request again
 * under a new id when running it twice does no harm (else STREAM_LOST); closing a request's stream cancels it.
 */
import { isObject } from '../jsonrpc.js';
import { EventEmitter } from 'node:events';
import type * as http from 'node:http';
import { FrameError, redact } from '../errors.js';
import { debug, debugFrameError } from '../debug.js';
import { serialize } from '../framings/json.js';
import type { Channel } from './channel.js';
import type { SignIn } from './sign-in.js';
import { ConnectionError, type ExitStatus } from './errors.js';
import { modernHeaders, type ProtocolEra } from '../protocol/modern.js';
import { Resends } from './resends.js';
import { errorAnswer, type EventStream, newEventStream, readJsonBody, SEEN_IDS, SessionRenewal, stopStream } from './http-responses.js';
import { ToolPolicy } from './tool-policy.js';
import {
  type HttpChannelOptions,
  ownCopy,
  RecentIds,
  scrubFrameError,
  type RemoteSettings,
  readEventStream,
  reconnectWait,
  remoteRequest,
  pathOf,
  remoteSettings,
} from './remote.js';

export type { HttpChannelOptions, ReconnectOptions } from './remote.js';

type Json = Record<string, unknown>;
type Id = string | number;

/**
 * How long the end of a legacy handshake waits for the GET stream's answer before going on without it: a server
 * that sends the stream's headers only with its first event costs this once per session.
 */
const GET_OPEN_WAIT_MS = 500;

/** How long close() waits for the server to answer the DELETE that ends the session. */
const DELETE_TIMEOUT_MS = 2000;

/**
 * A Streamable HTTP channel. The session above it is unaware of HTTP: it sends messages and receives them.
 *
 * Beyond the Channel events: 'reconnecting' ({ attempt, waitMs, reason }), 'reconnected' ({ attempt }), and
 * 'undeliverable' (ids of requests whose answers can no longer come, and the ConnectionError why).
 */
export class HttpChannel extends EventEmitter implements Channel {
  readonly name: string;
  /** The transport, as Connection.transport says it. */
  readonly transport = 'streamable-http' as const;
  readonly #remote: RemoteSettings;
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  /** What starts a new session after a 404. */
  readonly #renewal = new SessionRenewal();
  #getStream: EventStream | undefined;
  readonly #streams = new Set<EventStream>();
  /** The event ids of the session's streams delivered most recently (legacy era: ids are unique in a session). */
  readonly #seen = new RecentIds(SEEN_IDS);
  /** Which stream owes the response to each request in flight. */
  readonly #owedBy = new Map<Id, EventStream>();
  readonly #requests = new Set<http.ClientRequest>();
  /** The POST that carried each request (alone) until it closes: destroyed when the caller gives up on it. */
  readonly #posts = new Map<Id, http.ClientRequest>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;
  #ended: ConnectionError | undefined;
  #modern = false;
  /** Modern era: the requests in flight, to send again when their stream breaks. */
  readonly #resends: Resends;
  /** Holds on the input taken by holdInput() and not released yet. */
  #holds = 0;
  /** Modern era: what the server's tools/list says of its tools (harmless ones, x-mcp-header declarations). */
  readonly #policy: ToolPolicy;
  /** Every request gets a status: silence to the era probe is an outage. */
  readonly answersEveryRequest = true;

  constructor(url: string | URL, options: HttpChannelOptions = {}) {
    super();
    this.#remote = remoteSettings(url, options);
    this.name = this.#remote.name;
    this.#policy = options.toolPolicy ?? new ToolPolicy();
    this.#resends = new Resends(this.#policy);
  }

  /**
   * Stops reading the server's streams until the returned function is called (each hold released once): for a
   * consumer slower than the server, such as `bridge` writing to a host that does not read. The server's
   * writes then wait in its socket instead of in this process.
   */
  holdInput(): () => void {
    if (this.#holds++ === 0) for (const stream of this.#streams) stream.response?.pause();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0) for (const stream of this.#streams) stream.response?.resume();
    };
  }

  /** `text` (from the server) without the configured header values and URL query values it may echo. */
  scrub(text: string): string {
    return this.#remote.scrub(text);
  }

  /** The sign-in, when `auth` was given: whether it waits for the user, and how long it has. */
  get signIn(): SignIn | undefined {
    return this.#remote.auth;
  }

  /** The session id the server gave, if any. */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /**
   * Which era to speak, set by the session once it knows: `modern` with its protocol version (the headers of
   * every POST, no session, requests sent again when their stream breaks), or `legacy`.
   */
  useProtocol(era: ProtocolEra, version: string | undefined): void {
    this.#modern = era === 'modern';
    this.#protocolVersion = version;
  }

  send(msg: unknown): Promise<void> {
    if (this.#closed || this.#ended !== undefined) return Promise.reject(this.endError('cannot send'));
    // Modern HTTP has no client notifications: closing a request's stream is its cancellation.
    if (this.#modern && isObject(msg) && msg.method === 'notifications/cancelled') return Promise.resolve(this.#cancel(msg.params));
    // A request given up on (timeout, abort) must not hold a socket: 64 of them would hold them all.
    if (isObject(msg) && msg.method === 'notifications/cancelled' && isObject(msg.params)) this.#abandon(msg.params.requestId as Id);
    let text: string;
    try {
      text = serialize(msg);
    } catch (err) {
      return Promise.reject(err);
    }
    this.#renewal.sent(msg);
    if (this.listenerCount('wire') > 0) this.emit('wire', 'send', `${text}\n`);
    return this.#deliver(msg, text);
  }

  endError(what: string): ConnectionError {
    if (this.#closed) return new ConnectionError('CLOSED', `${what}: the connection to "${this.name}" is closing`);
    return this.#ended ?? new ConnectionError('ENDED', `${what}: "${this.name}" is not connected`);
  }

  /** Ends the session (DELETE; a 405 is fine), aborts every stream and clears every timer. */
  async close(): Promise<ExitStatus> {
    if (this.#closed) return { code: null, signal: null };
    this.#closed = true;
    this.#remote.auth?.close();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const stream of this.#streams) stopStream(stream);
    if (this.#sessionId !== undefined) {
      // A server that never answers the DELETE must not keep the caller (bridge, call) from exiting.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.#request('DELETE', undefined, {})
          .then((res) => res.resume())
          .catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, DELETE_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
    }
    for (const req of this.#requests) req.destroy();
    this.#remote.agent.destroy();
    this.#remote.streamAgent.destroy();
    this.emit('end');
    this.emit('close', { code: null, signal: null } satisfies ExitStatus);
    return { code: null, signal: null };
  }

  async #deliver(msg: unknown, text: string): Promise<void> {
    await this.#renewal.before(msg);
    const owed = requestIds(msg);
    if (this.#modern && isObject(msg) && owed.size === 1) this.#resends.track(msg);
    const [only] = owed;
    const res = await this.#request(
      'POST',
      text,
      this.#modern ? { ...modernHeaders(msg, this.#protocolVersion!), ...this.#policy.headersFor(msg) } : {},
      owed.size === 1 ? (req) => this.#trackPost(only!, req) : undefined,
      // A listen stream stays open for as long as it listens: on the stream sockets, as a GET stream is, so that
      // listens never take the sockets every other request needs.
      this.#modern && isObject(msg) && msg.method === 'subscriptions/listen',
    );
    if (res.statusCode === 404 && this.#sessionId !== undefined && !this.#modern) {
      res.resume();
      throw await this.#sessionExpired();
    }
    if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode >= 300) {
      // A JSON-RPC error answering the request (modern servers send them with 400 and 404) is its answer.
      const answer = await errorAnswer(res, owed, `"${this.name}" answered POST ${pathOf(this.#remote.url)}`, this.#remote.scrub);
      if (answer instanceof ConnectionError) throw answer;
      if (this.listenerCount('wire') > 0) this.emit('wire', 'receive', this.scrub(answer.text));
      return this.#receive(answer.value);
    }
    this.#renewal.succeeded();
    const session = res.headers['mcp-session-id'];
    if (typeof session === 'string' && session !== '') this.#sessionId = session;
    const type = String(res.headers['content-type'] ?? '');
    if (res.statusCode === 202 || owed.size === 0) {
      res.resume();
      // The handshake ends once the GET stream is open (or refused): requests sent after it cannot race it, and
      // what the server sends right after initialize has a stream to arrive on.
      if (isObject(msg) && msg.method === 'notifications/initialized') await this.#openGetStream();
      return;
    }
    if (type.startsWith('text/event-stream')) {
      const stream = this.#newStream('post', owed);
      this.#readStream(stream, res);
    } else {
      const problem = await this.#readJson(res);
      // A body that is no answer: what the request waited for cannot come.
      if (problem !== undefined)
        this.#undeliverable(owed, new ConnectionError('INVALID_RESPONSE', `"${this.name}" answered with ${problem.message}`));
    }
  }

  /** A JSON body: its message or batch received, or the problem (reported on 'invalid' too) when it is not one. */
  async #readJson(res: http.IncomingMessage): Promise<FrameError | undefined> {
    const read = await readJsonBody(res, this.#remote.maxBytes, this.#remote.scrub);
    if (read instanceof FrameError) return this.#invalid(read);
    if (this.listenerCount('wire') > 0) this.emit('wire', 'receive', this.scrub(read.text));
    for (const message of Array.isArray(read.value) ? read.value : [read.value]) this.#receive(message);
    return undefined;
  }

  #invalid(error: FrameError): FrameError {
    this.emit('invalid', error);
    return error;
  }

  #newStream(kind: EventStream['kind'], owed: Set<Id>): EventStream {
    const stream = newEventStream(kind, owed);
    for (const id of owed) this.#owedBy.set(id, stream);
    this.#streams.add(stream);
    return stream;
  }

  /** Reads an SSE response into the channel, until it ends or breaks; then resumes it if it must. */
  #readStream(stream: EventStream, res: http.IncomingMessage): void {
    stream.response = res;
    stream.stopWatch = readEventStream(res, this.#remote.maxBytes, this.#remote.idleMs, {
      frame: (text) => {
        if (this.listenerCount('wire') > 0) this.emit('wire', 'receive', this.scrub(text));
      },
      tracing: () => this.listenerCount('wire') > 0,
      invalid: (err) => {
        const error = scrubFrameError(err, this.#remote.scrub);
        debugFrameError(`"${this.name}"`, error);
        this.emit('invalid', error);
      },
      message: (msg, id) => {
        if (id !== '') {
          // One copy, kept by both: a slice of the event's text would keep that text alive.
          const own = ownCopy(id);
          stream.lastEventId = own;
          // Event ids are unique within a session, across its streams: a server that replays another
          // stream's events after Last-Event-ID gets each delivered once.
          if (!(this.#modern ? stream.seen : this.#seen).add(own)) return;
        }
        // A message on a new stream: the attempts start again (never on a clean close without one).
        if (stream.failures > 0) this.emit('reconnected', { attempt: stream.failures });
        stream.failures = 0;
        this.#receive(msg);
      },
      ended: (reason, lastEventId, retry) => {
        stream.stopWatch = undefined;
        stream.retry = retry ?? stream.retry;
        if (lastEventId !== '') stream.lastEventId = ownCopy(lastEventId);
        this.#streamEnded(stream, reason);
      },
    });
    // After the 'data' listener: a stream that opens while the input is held starts paused.
    if (this.#holds > 0) res.pause();
  }

  #receive(received: unknown): void {
    const msg = this.#resends.incoming(received);
    if (isObject(msg) && !('method' in msg) && 'id' in msg) {
      const id = msg.id as Id;
      // A response may come on its own stream or, resumed, on another: the map says which stream owed it.
      this.#owedBy.get(id)?.owed.delete(id);
      this.#owedBy.delete(id);
      if (this.#renewal.isInitialize(id) && isObject(msg.result) && typeof msg.result.protocolVersion === 'string') {
        this.#protocolVersion = msg.result.protocolVersion;
      }
      // An answer to a request sent again: the session knows it by its first id.
      const first = this.#resends.answered(id, msg, this.name, this.#modern);
      if (first !== undefined) return void this.emit('message', { ...msg, id: first });
    }
    this.emit('message', msg);
  }

  /** A stream is over: done, resumed with Last-Event-ID, or the requests it owed fail now. */
  #streamEnded(stream: EventStream, reason: string): void {
    stream.response = undefined;
    if (this.#closed) return;
    if (stream.kind === 'post' && stream.owed.size === 0) {
      this.#streams.delete(stream);
      return;
    }
    if (this.#modern && stream.kind === 'post') {
      this.#streams.delete(stream);
      for (const id of stream.owed) this.#sendAgain(id, reason);
      return;
    }
    if (stream.kind === 'post' && stream.lastEventId === undefined) {
      // Nothing to resume from: what it owed cannot come.
      this.#streams.delete(stream);
      this.#undeliverable(
        stream.owed,
        new ConnectionError(
          'STREAM_LOST',
          `the response stream from "${this.name}" broke before it carried an event id (${reason}); the request cannot be resumed`,
        ),
      );
      return;
    }
    this.#scheduleResume(stream, reason);
  }

  #scheduleResume(stream: EventStream, reason: string): void {
    const policy = this.#remote.reconnect;
    if (policy === false) {
      this.#streams.delete(stream);
      this.#undeliverable(stream.owed, new ConnectionError('STREAM_LOST', `the stream from "${this.name}" broke (${reason}) and reconnect is off`));
      return;
    }
    if (stream.failures >= policy.maxAttempts) return this.#giveUp(stream, reason);
    const waitMs = reconnectWait(policy, stream.retry, stream.failures);
    stream.failures++;
    debug(`"${this.name}": resuming a stream in ${waitMs} ms (attempt ${stream.failures}): ${reason}`);
    this.emit('reconnecting', { attempt: stream.failures, waitMs, reason });
    // A resumption belongs to the stream and the session it was scheduled for: a session renewed meanwhile has
    // streams of its own, and this one's GET would open a second (a 409, counted as a failure, in some servers).
    const session = this.#sessionId;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#streams.has(stream) && this.#sessionId === session) void this.#resume(stream);
    }, waitMs);
    this.#timers.add(timer);
  }

  /** One attempt: GET with Last-Event-ID (when the stream carried one). */
  async #resume(stream: EventStream): Promise<void> {
    if (this.#closed) return;
    const session = this.#sessionId;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (stream.lastEventId !== undefined) headers['last-event-id'] = stream.lastEventId;
    let res: http.IncomingMessage;
    try {
      res = await this.#request('GET', undefined, headers);
    } catch (err) {
      return this.#scheduleResume(stream, this.scrub(redact((err as Error).message)));
    }
    if (this.#closed || !this.#streams.has(stream) || this.#sessionId !== session) return void res.destroy();
    if (res.statusCode === 405 && stream.kind === 'get') {
      res.resume();
      this.#streams.delete(stream);
      return;
    }
    if (res.statusCode === 404 && this.#sessionId !== undefined) {
      res.resume();
      this.#streams.delete(stream);
      const error = await this.#sessionExpired();
      this.#undeliverable(stream.owed, error);
      return;
    }
    if (res.statusCode !== 200 || !String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
      res.resume();
      // 409 (a GET stream already open) and 5xx are transient: back off and try again.
      return this.#scheduleResume(stream, `HTTP ${res.statusCode}`);
    }
    this.#readStream(stream, res);
  }

  /**
   * Modern era: a request whose stream broke before its answer is sent again under a new id (streams do not
   * resume), after the reconnection wait, at most maxAttempts times; then it fails with STREAM_LOST.
   */
  #sendAgain(id: Id, reason: string): void {
    this.#owedBy.delete(id);
    const policy = this.#remote.reconnect;
    const plan = this.#resends.plan(id, policy);
    const { first } = plan;
    if ('why' in plan || policy === false) {
      const why = 'why' in plan ? plan.why : '';
      this.#undeliverable(new Set([first]), new ConnectionError('STREAM_LOST', `the response stream from "${this.name}" broke (${reason}) ${why}`));
      return;
    }
    const waitMs = reconnectWait(policy, undefined, plan.attempt - 1);
    debug(`"${this.name}": sending a request again in ${waitMs} ms (attempt ${plan.attempt}): ${reason}`);
    this.emit('reconnecting', { attempt: plan.attempt, waitMs, reason });
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (this.#closed || !this.#resends.pending(first)) return;
      const again = this.#resends.again(first, plan.request);
      this.#deliver(again, serialize(again)).catch((err: Error) => this.#undeliverable(new Set([first]), toConnectionError(err)));
    }, waitMs);
    this.#timers.add(timer);
  }

  #trackPost(id: Id, req: http.ClientRequest): void {
    this.#posts.set(id, req);
    req.once('close', () => {
      if (this.#posts.get(id) === req) this.#posts.delete(id);
    });
  }

  /**
   * The caller gave up on request `id`: the stream that owed its answer owes it no more (and stops, if that was
   * all it owed), and the POST that carried it alone is destroyed, so that its socket is free again.
   */
  #abandon(id: Id): void {
    const stream = this.#owedBy.get(id);
    this.#owedBy.delete(id);
    if (stream !== undefined) {
      stream.owed.delete(id);
      if (stream.kind === 'post' && stream.owed.size === 0) {
        stopStream(stream);
        this.#streams.delete(stream);
      }
    }
    const req = this.#posts.get(id);
    this.#posts.delete(id);
    req?.destroy();
  }

  /** Modern era: cancels a request by closing the stream its answer would come on (or the POST still waiting). */
  #cancel(params: unknown): void {
    const asked = isObject(params) ? (params.requestId as Id) : undefined;
    if (asked === undefined) return;
    this.#abandon(asked);
    for (const alias of this.#resends.cancel(asked)) this.#abandon(alias);
  }

  #giveUp(stream: EventStream, reason: string): void {
    this.#streams.delete(stream);
    const error = new ConnectionError('GAVE_UP', `gave up on "${this.name}" after ${stream.failures} failed attempts to resume a stream (${reason})`);
    this.#undeliverable(stream.owed, error);
    this.#ended = error;
    this.emit('end');
    void this.close();
  }

  #undeliverable(ids: Set<Id>, error: ConnectionError): void {
    for (const id of ids) this.#owedBy.delete(id);
    if (ids.size > 0) this.emit('undeliverable', [...ids], error);
    ids.clear();
  }

  /**
   * After notifications/initialized: the stream for server-initiated messages (a 405 means there is none).
   * Resolves once the server has answered the GET (or failed it), or after GET_OPEN_WAIT_MS at most.
   */
  #openGetStream(): Promise<void> {
    if (this.#getStream !== undefined || this.#closed) return Promise.resolve();
    const stream = this.#newStream('get', new Set());
    this.#getStream = stream;
    const answered = this.#request('GET', undefined, { accept: 'text/event-stream' }).then(
      (res) => {
        // The session was renewed (or the channel closed) while this GET waited: the new one has its own.
        if (!this.#streams.has(stream)) return void res.destroy();
        if (res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) return this.#readStream(stream, res);
        res.resume();
        if (res.statusCode === 405) this.#streams.delete(stream);
        else this.#scheduleResume(stream, `HTTP ${res.statusCode}`);
      },
      (err: Error) => this.#scheduleResume(stream, this.scrub(redact(err.message))),
    );
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, GET_OPEN_WAIT_MS)));
    return Promise.race([answered, waited]).finally(() => clearTimeout(timer));
  }

  /**
   * A 404 on a request that carried a session id: the session is gone. The requests in flight fail with
   * SESSION_EXPIRED (they may not be idempotent, so none is sent again); a new session is started once with the
   * initialize request the session sent, and later requests use it. A second 404 in a row is an error.
   */
  async #sessionExpired(): Promise<ConnectionError> {
    if (!this.#renewal.expired()) return new ConnectionError('HTTP_STATUS', `"${this.name}" answered 404 again for the new session`, { status: 404 });
    const error = new ConnectionError('SESSION_EXPIRED', `the session with "${this.name}" expired (HTTP 404); the request was not sent again`);
    for (const stream of [...this.#streams]) {
      stopStream(stream);
      this.#undeliverable(stream.owed, error);
      this.#streams.delete(stream);
    }
    this.#getStream = undefined;
    this.#sessionId = undefined;
    this.#seen.clear();
    await this.#renewal.renew((init) => this.#renewSession(init));
    return error;
  }

  async #renewSession(init: Json): Promise<void> {
    const renewal = { ...init, id: `mcp-frame-renew-${Date.now()}` };
    const res = await this.#request('POST', serialize(renewal), {});
    if (res.statusCode !== 200) {
      res.resume();
      throw new ConnectionError('HTTP_STATUS', `"${this.name}" refused a new session: HTTP ${res.statusCode}`, { status: res.statusCode });
    }
    const session = res.headers['mcp-session-id'];
    if (typeof session === 'string' && session !== '') this.#sessionId = session;
    // The answer to our own initialize is ours: read and dropped, not delivered to the session.
    res.resume();
    await new Promise((resolve) => res.on('end', resolve).on('close', resolve));
    const done = await this.#request('POST', serialize({ jsonrpc: '2.0', method: 'notifications/initialized' }), {});
    done.resume();
    await this.#openGetStream();
  }

  /** One HTTP request with the configured headers, the session id and the protocol version. */
  #request(
    method: string,
    body: string | undefined,
    extra: Record<string, string>,
    onRequest?: (req: http.ClientRequest) => void,
    longLived = false,
  ): Promise<http.IncomingMessage> {
    const headers: Record<string, string> = { ...this.#remote.headers };
    if (method === 'POST') {
      headers.accept = 'application/json, text/event-stream';
      headers['content-type'] = 'application/json';
    }
    if (this.#sessionId !== undefined && !this.#modern) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    Object.assign(headers, extra);
    return remoteRequest(this.#remote, this.name, { method, headers, body, longLived }, (req) => {
      // A request that went out only after close() (it waited for the sign-in, say) would hold a socket open
      // that nothing closes, and the process with it; close()'s own DELETE, bounded there, is the one that may.
      if (this.#closed && method !== 'DELETE') return void req.destroy(this.endError(`${method} ${this.name}`));
      this.#requests.add(req);
      req.on('close', () => this.#requests.delete(req));
      onRequest?.(req);
    });
  }
}

function toConnectionError(err: Error): ConnectionError {
  return err instanceof ConnectionError ? err : new ConnectionError('STREAM_LOST', err.message, { cause: err });
}

/** The ids of the requests in a message or batch: what a POST's answer owes. */
function requestIds(msg: unknown): Set<Id> {
  const ids = new Set<Id>();
  for (const m of Array.isArray(msg) ? msg : [msg]) {
    if (isObject(m) && typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) ids.add(m.id);
  }
  return ids;
}
