/*
 * One server-sent event stream of a served session (a POST's response stream, or the session's GET stream):
 * every event gets an id unique in the session, recent events are held within a byte budget, and a client
 * that drops the response and comes back with Last-Event-ID gets what followed, then the live stream.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { whenGone } from '../../protocol/response.js';

export interface EventStreamOptions {
  /** Bytes of recent events held for a client that resumes. */
  replayBytes: number;
  /** The `retry:` of the priming event, in milliseconds. */
  retryMs: number;
  /** How often a `: keepalive` comment goes out on an open response. */
  keepaliveMs: number;
}

/** What an event stream needs of its session besides the settings. */
interface EventStreamHooks {
  /** Stops reading the session's server until the returned release is called (a slow reader's backpressure). */
  hold?(): () => void;
  /**
   * Whether a new stream opens with the priming event (an id, `retry:` and empty `data:`), asked when it starts.
   * The priming event came with 2025-11-25 (SEP-1699): a client of an earlier revision may parse every event's
   * data as JSON and fail on it, so sessions of earlier revisions get none (their message events keep their ids,
   * so they still resume). @defaultValue true
   */
  primes?(): boolean;
}

interface Held {
  seq: number;
  text: string;
  bytes: number;
}

/** Response headers of every event stream: nothing may hold events back on the way. */
export const EVENT_STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
} as const;

/**
 * Writes to an event stream's response unless it has ended or closed: a keep-alive timer or a late message must
 * never write after end() (Node reports that as an 'error' on the response, fatal without a listener). False
 * when the response holds more than its buffer (the reader is slow): the caller waits for 'drain'.
 */
export function writeEvent(res: ServerResponse, text: string): boolean {
  if (res.writableEnded || res.destroyed) return true;
  return res.write(text);
}

/** Writes a `: keepalive` comment every `ms` while `res` is open; stops when it ends or closes. */
export function keepAlive(res: ServerResponse, ms: number): void {
  const timer = setInterval(() => {
    // A reader that has not taken what was sent needs no keep-alive; its buffer must not grow by them.
    if (res.writableNeedDrain) return;
    writeEvent(res, ': keepalive\n\n');
  }, ms);
  const stop = (): void => clearInterval(timer);
  whenGone(res, stop);
  res.once('finish', stop);
}

/**
 * Bytes a response may hold unread before the process whose messages it carries stops being read. Node's own
 * mark for a response is 16 KiB: held there, a burst of answers (1,000 concurrent calls over the legacy
 * transport, whose answers all go down one stream) stopped and restarted the server's output many times, at
 * 0.82-1.03 ms per call in three runs, against 0.60-0.70 in two with a MiB allowed. A client that does not read
 * still stops its server within a MiB and a message.
 */
const HOLD_BYTES = 1024 * 1024;

/**
 * Backpressure from a response to the process whose messages it carries: when a write leaves `res` needing
 * drain with HOLD_BYTES or more unread, `hold()` is called (it stops reading that process) and the release it
 * returns runs once the response drains or closes. One hold per response at a time.
 */
export function holdUntilDrained(res: ServerResponse, hold: () => () => void): void {
  if (!res.writableNeedDrain || res.writableLength < HOLD_BYTES || holding.has(res)) return;
  holding.add(res);
  const release = hold();
  let released = false;
  const done = (): void => {
    if (released) return;
    released = true;
    res.off('drain', done);
    // A long stream holds and drains many times: each hold's listeners go with it.
    forget();
    holding.delete(res);
    release();
  };
  res.on('drain', done);
  const forget = whenGone(res, done);
}
const holding = new WeakSet<ServerResponse>();

/**
 * How long a POST's stream waits for its first event before its headers go out on their own. An answer that comes
 * sooner (the usual tool call) is written with the headers in one write, with a Content-Length: the client reads
 * one response instead of a chunked stream, and no event waits longer for it.
 */
const FIRST_EVENT_WAIT_MS = 50;

/** An event id `<stream>-<seq>`, split; undefined when the text is not one. */
export function parseEventId(text: string): { stream: number; seq: number } | undefined {
  const match = /^(\d{1,9})-(\d{1,15})$/.exec(text);
  if (match === null) return undefined;
  return { stream: Number(match[1]), seq: Number(match[2]) };
}

export class EventStream {
  readonly number: number;
  readonly #options: EventStreamOptions;
  readonly #held: Held[] = [];
  #heldBytes = 0;
  /** Events up to this seq are no longer held. */
  #droppedThrough = 0;
  #seq = 0;
  /** The last seq written to a response. */
  #written = 0;
  #res: ServerResponse | undefined;
  #primed = false;
  #complete = false;
  /** A response taken by attachWhenFirstEvent and not written to yet: its headers, and the timer that starts it. */
  #deferred: { headers: OutgoingHttpHeaders; timer: NodeJS.Timeout; forget: () => void; starting: boolean } | undefined;

  readonly #hooks: EventStreamHooks;

  constructor(number: number, options: EventStreamOptions, hooks: EventStreamHooks = {}) {
    this.number = number;
    this.#options = options;
    this.#hooks = hooks;
  }

  /** True while a client's response carries this stream. */
  get attached(): boolean {
    return this.#res !== undefined;
  }

  /**
   * Lets go of the response carrying this stream (it is ended), for a client that resumes the stream with its
   * Last-Event-ID: that client lost it, though the old connection's end may not have reached this replica yet
   * (it was cut at another). False, and nothing done, while the stream waits for its first event.
   */
  release(): boolean {
    const res = this.#res;
    if (res === undefined || this.#deferred !== undefined) return false;
    this.#res = undefined;
    res.end();
    return true;
  }

  /** True once the stream has everything it will ever carry (a POST stream whose requests are all answered). */
  get complete(): boolean {
    return this.#complete;
  }

  /** Bytes held for replay. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /**
   * Why a resume after event `seq` cannot be served, or undefined when it can: the events after it are no
   * longer all held, or it names an event this stream has not sent.
   */
  resumeProblem(seq: number): string | undefined {
    if (seq > this.#seq) return `event ${this.number}-${seq} was never sent`;
    if (seq < this.#droppedThrough) {
      return `the events after ${this.number}-${seq} are no longer held (each stream keeps its last ${this.#options.replayBytes} bytes)`;
    }
    return undefined;
  }

  /**
   * Makes `res` (headers already written) carry this stream: the priming event on a new stream, then every
   * held event after `afterSeq` (by default, those no response has carried yet), then live events. A complete
   * stream ends the response once replayed.
   */
  attach(res: ServerResponse, afterSeq = this.#written): void {
    this.#res = res;
    whenGone(res, () => {
      if (this.#res === res) this.#res = undefined;
    });
    if (!this.#primed) {
      this.#primed = true;
      // The priming id names the point before the events this response is about to carry (those queued before
      // the first GET among them), so that a client resuming from it misses none of them.
      if (this.#hooks.primes?.() !== false) writeEvent(res, this.#priming(Math.max(afterSeq, this.#droppedThrough)));
    }
    for (const event of this.#held) if (event.seq > afterSeq) this.#write(event);
    // The headers go out now, even with no event to send: a client must not wait for one to see its stream.
    res.flushHeaders();
    keepAlive(res, this.#options.keepaliveMs);
    if (this.#complete) res.end();
  }

  /**
   * Makes `res` (nothing written yet) carry this new stream, writing nothing until its first event: an event that
   * finishes the stream in the same turn of the event loop (a request's answer) goes out with the headers in one
   * response with a Content-Length; otherwise the stream starts as attach() starts it, at the first event or after
   * FIRST_EVENT_WAIT_MS, whichever is first.
   */
  attachWhenFirstEvent(res: ServerResponse, headers: OutgoingHttpHeaders): void {
    this.#res = res;
    const timer = setTimeout(() => this.#start(), FIRST_EVENT_WAIT_MS);
    // Until the response starts: once it does, attach() watches it (or it has ended).
    const forget = whenGone(res, () => {
      clearTimeout(timer);
      if (this.#res !== res) return;
      this.#res = undefined;
      this.#deferred = undefined;
    });
    this.#deferred = { headers, timer, forget, starting: false };
  }

  /** The priming event: an id naming the point before the events that follow it, and the client's retry. */
  #priming(before: number): string {
    return `id: ${this.number}-${before}\nretry: ${this.#options.retryMs}\ndata:\n\n`;
  }

  /**
   * The headers of the response waiting for its first event, taken (its timer stopped, its close listeners
   * removed); undefined if none waits.
   */
  #undefer(): OutgoingHttpHeaders | undefined {
    const deferred = this.#deferred;
    if (deferred === undefined) return undefined;
    this.#deferred = undefined;
    clearTimeout(deferred.timer);
    deferred.forget();
    return deferred.headers;
  }

  /** A deferred response starts streaming: headers, then what attach() writes. */
  #start(): void {
    const headers = this.#undefer();
    if (headers === undefined) return;
    const res = this.#res!;
    res.writeHead(200, headers);
    this.attach(res);
  }

  /** A deferred response whose stream is complete: everything in one write, with a Content-Length. */
  #endAtOnce(): void {
    const headers = this.#undefer()!;
    const res = this.#res!;
    // Done with at once: the stream no longer counts as attached (an idle session can be closed, a stream opened).
    this.#res = undefined;
    this.#primed = true;
    let body = this.#hooks.primes?.() === false ? '' : this.#priming(0);
    for (const event of this.#held) body += event.text;
    this.#written = this.#seq;
    res.writeHead(200, { ...headers, 'Content-Length': Buffer.byteLength(body) }).end(body);
    if (this.#hooks.hold !== undefined) holdUntilDrained(res, this.#hooks.hold);
  }

  /** Sends a message (its JSON text) as the next event, and holds it for a client that resumes. */
  push(json: string): void {
    const seq = ++this.#seq;
    const text = `id: ${this.number}-${seq}\nevent: message\ndata: ${json}\n\n`;
    const event: Held = { seq, text, bytes: Buffer.byteLength(text) };
    // Held events past the budget are dropped below: a response not started yet must have them first.
    if (this.#deferred !== undefined && this.#heldBytes + event.bytes > this.#options.replayBytes) this.#start();
    this.#held.push(event);
    this.#heldBytes += event.bytes;
    while (this.#heldBytes > this.#options.replayBytes && this.#held.length > 1) {
      const dropped = this.#held.shift()!;
      this.#heldBytes -= dropped.bytes;
      this.#droppedThrough = dropped.seq;
    }
    const deferred = this.#deferred;
    if (deferred !== undefined) {
      // Held until the end of this turn: a finish() before then sends it all in one write.
      if (!deferred.starting) {
        deferred.starting = true;
        setImmediate(() => this.#start());
      }
      return;
    }
    if (this.#res !== undefined) this.#write(event);
  }

  /** No more events will come: the response (now or once resumed) ends after the last one. */
  finish(): void {
    this.#complete = true;
    if (this.#deferred !== undefined) return this.#endAtOnce();
    this.#res?.end();
  }

  #write(event: Held): void {
    const res = this.#res!;
    writeEvent(res, event.text);
    this.#written = event.seq;
    if (this.#hooks.hold !== undefined) holdUntilDrained(res, this.#hooks.hold);
  }
}
