/*
 * The deprecated HTTP+SSE channel (MCP 2024-11-05): one long GET stream that names, in its `endpoint` event,
 * where to POST messages; every answer comes back on the stream.
 */
import type { ProtocolEra } from '../protocol/modern.js';
import { isObject } from '../jsonrpc.js';
import { EventEmitter } from 'node:events';
import type * as http from 'node:http';
import { preview, reasonText } from '../errors.js';
import { debug, debugFrameError } from '../debug.js';
import type { FramedEvent } from '../framings/codec.js';
import { serialize } from '../framings/json.js';
import type { Channel } from './channel.js';
import type { SignIn } from './sign-in.js';
import { ConnectionError, type ExitStatus } from './errors.js';
import {
  type HttpChannelOptions,
  MAX_TIMER_MS,
  PREVIEW_BODY_BYTES,
  type RemoteSettings,
  readEventStream,
  reconnectWait,
  remoteRequest,
  pathOf,
  remoteSettings,
  scrubFrameError,
} from './remote.js';
import { readCapped } from '../protocol/body.js';

type Json = Record<string, unknown>;
type Id = string | number;

/**
 * A channel over the deprecated HTTP+SSE transport. open() reads the stream up to its `endpoint` event (an
 * endpoint on another origin is refused: it would receive the configured headers). When the stream drops, it
 * reconnects with the same backoff as HttpChannel and starts a new session with the session's own
 * initialize; the requests in flight reject with STREAM_LOST, since the new session cannot answer them.
 */
export class SseChannel extends EventEmitter implements Channel {
  readonly name: string;
  /** The transport, as Connection.transport says it. */
  readonly transport = 'sse' as const;
  readonly #remote: RemoteSettings;
  #endpoint: URL | undefined;
  #response: http.IncomingMessage | undefined;
  /** Stops the idle watchdog of the stream being read. */
  #stopWatch: (() => void) | undefined;
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Requests sent and not answered: what a drop loses. */
  readonly #inFlight = new Set<Id>();
  #initialize: Json | undefined;
  /** The id of our own initialize on a new session, whose answer is not delivered. */
  #renewalId: string | undefined;
  #failures = 0;
  #closed = false;
  #ended: ConnectionError | undefined;

  constructor(url: string | URL, options: HttpChannelOptions = {}) {
    super();
    this.#remote = remoteSettings(url, options);
    this.name = this.#remote.name;
  }

  /** `text` (from the server) without the configured header values and URL query values it may echo. */
  scrub(text: string): string {
    return this.#remote.scrub(text);
  }

  /** The sign-in, when `auth` was given: whether it waits for the user, and how long it has. */
  get signIn(): SignIn | undefined {
    return this.#remote.auth;
  }

  #holds = 0;
  /** The deprecated HTTP+SSE transport is of the legacy era by definition. */
  readonly eras: readonly ProtocolEra[] = ['legacy'];

  /**
   * Stops reading the server's stream until the returned function is called (each hold released once): for a
   * consumer slower than the server, as HttpChannel.holdInput. A stream opened again while held starts paused.
   */
  holdInput(): () => void {
    if (this.#holds++ === 0) this.#response?.pause();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0) this.#response?.resume();
    };
  }

  /**
   * Opens the stream and waits for its `endpoint` event, at most `timeoutMs` in all: a server that sends only
   * comments, or nothing, fails with TIMEOUT instead of holding the caller forever.
   */
  async open(timeoutMs = 30_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let pending: http.IncomingMessage | undefined;
    const expired = new Promise<never>((_, reject) => {
      if (!Number.isFinite(timeoutMs)) return;
      timer = setTimeout(
        () => {
          timedOut = true;
          pending?.destroy();
          reject(new ConnectionError('TIMEOUT', `"${this.name}" sent no endpoint event within ${timeoutMs} ms`));
        },
        Math.min(timeoutMs, MAX_TIMER_MS),
      );
    });
    const opened = (async () => {
      const res = await this.#request('GET', this.#remote.url, undefined, { accept: 'text/event-stream' });
      if (timedOut) return void res.destroy();
      pending = res;
      if (res.statusCode !== 200) {
        res.resume();
        throw new ConnectionError('HTTP_STATUS', `"${this.name}" answered GET ${pathOf(this.#remote.url)} with HTTP ${res.statusCode}`, {
          status: res.statusCode,
        });
      }
      await new Promise<void>((resolve, reject) => {
        this.#read(res, resolve, reject);
      });
    })();
    opened.catch(() => undefined);
    try {
      await Promise.race([opened, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  send(msg: unknown): Promise<void> {
    if (this.#closed || this.#ended !== undefined || this.#endpoint === undefined) return Promise.reject(this.endError('cannot send'));
    let text: string;
    try {
      text = serialize(msg);
    } catch (err) {
      return Promise.reject(err);
    }
    if (isObject(msg) && msg.method === 'initialize') this.#initialize = msg;
    if (isObject(msg) && typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number')) this.#inFlight.add(msg.id);
    if (this.listenerCount('wire') > 0) this.emit('wire', 'send', `${text}\n`);
    return this.#post(text);
  }

  endError(what: string): ConnectionError {
    if (this.#closed) return new ConnectionError('CLOSED', `${what}: the connection to "${this.name}" is closing`);
    return this.#ended ?? new ConnectionError('ENDED', `${what}: "${this.name}" is not connected`);
  }

  async close(): Promise<ExitStatus> {
    if (!this.#closed) {
      this.#closed = true;
      this.#remote.auth?.close();
      for (const timer of this.#timers) clearTimeout(timer);
      this.#timers.clear();
      this.#stopWatch?.();
      this.#response?.destroy();
      this.#remote.agent.destroy();
      this.#remote.streamAgent.destroy();
      this.emit('end');
      this.emit('close', { code: null, signal: null } satisfies ExitStatus);
    }
    return { code: null, signal: null };
  }

  async #post(text: string): Promise<void> {
    const res = await this.#request('POST', this.#endpoint!, text, { 'content-type': 'application/json' });
    const ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
    if (ok) return void res.resume();
    // An error body is read for its preview only, never further: a server could send gigabytes.
    const { body: head, over } = await readCapped(res, PREVIEW_BODY_BYTES);
    if (over) res.destroy();
    const body = reasonText(this.scrub(head.toString('utf8')));
    throw new ConnectionError(
      'HTTP_STATUS',
      `"${this.name}" answered POST ${pathOf(this.#endpoint!)} with HTTP ${res.statusCode}${body ? `: ${body}` : ''}`,
      {
        status: res.statusCode,
      },
    );
  }

  /** Reads the stream; `ready` once the endpoint is known, `fail` if the stream ends before that. */
  #read(res: http.IncomingMessage, ready: () => void, fail: (err: Error) => void): void {
    this.#response = res;
    if (this.#holds > 0) res.pause();
    let known = false;
    const endpointEvent = (event: FramedEvent): void => {
      if (event.event !== 'endpoint' || known) return;
      let endpoint: URL;
      try {
        endpoint = new URL(event.data.trim(), this.#remote.url);
      } catch {
        res.destroy();
        return fail(
          new ConnectionError('INVALID_RESPONSE', `"${this.name}" named an endpoint that is not a URL: ${preview(this.scrub(event.data))}`),
        );
      }
      if (endpoint.origin !== this.#remote.url.origin) {
        res.destroy();
        const where = preview(endpoint.origin);
        return fail(
          new ConnectionError(
            'HTTP_STATUS',
            `"${this.name}" named an endpoint on another origin (${where}); refused, as it would receive the configured headers`,
          ),
        );
      }
      known = true;
      this.#endpoint = endpoint;
      ready();
    };
    this.#stopWatch = readEventStream(res, this.#remote.maxBytes, this.#remote.idleMs, {
      frame: (text) => {
        if (this.listenerCount('wire') > 0) this.emit('wire', 'receive', this.scrub(text));
      },
      tracing: () => this.listenerCount('wire') > 0,
      invalid: (err) => {
        const error = scrubFrameError(err, this.#remote.scrub);
        debugFrameError(`"${this.name}"`, error);
        this.emit('invalid', error);
      },
      event: endpointEvent,
      message: (msg) => {
        this.#failures = 0;
        if (isObject(msg) && !('method' in msg) && 'id' in msg) {
          this.#inFlight.delete(msg.id as Id);
          if (msg.id === this.#renewalId) return;
        }
        this.emit('message', msg);
      },
      ended: (reason, _lastEventId, retry) => {
        this.#stopWatch = undefined;
        this.#response = undefined;
        if (!known) return fail(new ConnectionError('HTTP_STATUS', `the stream from "${this.name}" ended before its endpoint event (${reason})`));
        this.#dropped(reason, retry);
      },
    });
  }

  /** The stream dropped: what was in flight is lost; reconnect and start a new session. */
  #dropped(reason: string, retry: number | undefined): void {
    if (this.#closed) return;
    this.#endpoint = undefined;
    const lost = new ConnectionError(
      'STREAM_LOST',
      `the stream from "${this.name}" dropped (${reason}); a new session cannot answer what was in flight`,
    );
    if (this.#inFlight.size > 0) this.emit('undeliverable', [...this.#inFlight], lost);
    this.#inFlight.clear();
    const policy = this.#remote.reconnect;
    if (policy === false || this.#failures >= policy.maxAttempts) {
      this.#ended = new ConnectionError('GAVE_UP', `gave up on "${this.name}" (${reason})`);
      this.emit('end');
      void this.close();
      return;
    }
    const waitMs = reconnectWait(policy, retry, this.#failures);
    this.#failures++;
    debug(`"${this.name}": reconnecting in ${waitMs} ms (attempt ${this.#failures}): ${reason}`);
    this.emit('reconnecting', { attempt: this.#failures, waitMs, reason });
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.open().then(
        () => this.#renewSession(),
        (err: Error) => this.#dropped(err.message, retry),
      );
    }, waitMs);
    this.#timers.add(timer);
  }

  async #renewSession(): Promise<void> {
    this.emit('reconnected', { attempt: this.#failures });
    if (this.#initialize === undefined) return;
    this.#renewalId = `mcp-frame-renew-${Date.now()}`;
    await this.#post(serialize({ ...this.#initialize, id: this.#renewalId })).catch(() => undefined);
    await this.#post(serialize({ jsonrpc: '2.0', method: 'notifications/initialized' })).catch(() => undefined);
  }

  #request(method: string, url: URL, body: string | undefined, extra: Record<string, string>): Promise<http.IncomingMessage> {
    return remoteRequest(this.#remote, this.name, { method, url, headers: { ...this.#remote.headers, ...extra }, body }, (req) => {
      // As HttpChannel: a request that goes out only after close() is ended at once.
      if (this.#closed) req.destroy(this.endError(`${method} ${this.name}`));
    });
  }
}
