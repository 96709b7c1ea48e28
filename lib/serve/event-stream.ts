/*
 * One server-sent event stream of a served session (a POST's response stream, or the session's GET stream):
 * every event gets an id unique in the session, recent events are held within a byte budget, and a client
 * that drops the response and comes back with Last-Event-ID gets what followed, then the live stream.
 */
import type { ServerResponse } from 'node:http';

export interface EventStreamOptions {
  /** Bytes of recent events held for a client that resumes. */
  replayBytes: number;
  /** The `retry:` of the priming event, in milliseconds. */
  retryMs: number;
  /** How often a `: keepalive` comment goes out on an open response. */
  keepaliveMs: number;
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

/** Writes a `: keepalive` comment every `ms` while `res` is open; stops when it closes. */
export function keepAlive(res: ServerResponse, ms: number): void {
  const timer = setInterval(() => res.write(': keepalive\n\n'), ms);
  res.once('close', () => clearInterval(timer));
}

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

  constructor(number: number, options: EventStreamOptions) {
    this.number = number;
    this.#options = options;
  }

  /** True while a client's response carries this stream. */
  get attached(): boolean {
    return this.#res !== undefined;
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
    res.once('close', () => {
      if (this.#res === res) this.#res = undefined;
    });
    if (!this.#primed) {
      this.#primed = true;
      res.write(`id: ${this.number}-${this.#seq}\nretry: ${this.#options.retryMs}\ndata:\n\n`);
    }
    for (const event of this.#held) if (event.seq > afterSeq) this.#write(event);
    keepAlive(res, this.#options.keepaliveMs);
    if (this.#complete) res.end();
  }

  /** Sends a message (its JSON text) as the next event, and holds it for a client that resumes. */
  push(json: string): void {
    const seq = ++this.#seq;
    const text = `id: ${this.number}-${seq}\nevent: message\ndata: ${json}\n\n`;
    const event: Held = { seq, text, bytes: Buffer.byteLength(text) };
    this.#held.push(event);
    this.#heldBytes += event.bytes;
    while (this.#heldBytes > this.#options.replayBytes && this.#held.length > 1) {
      const dropped = this.#held.shift()!;
      this.#heldBytes -= dropped.bytes;
      this.#droppedThrough = dropped.seq;
    }
    if (this.#res !== undefined) this.#write(event);
  }

  /** No more events will come: the response (now or once resumed) ends after the last one. */
  finish(): void {
    this.#complete = true;
    this.#res?.end();
  }

  /** Ends the response, if one is open, without finishing the stream. */
  detach(): void {
    this.#res?.end();
    this.#res = undefined;
  }

  #write(event: Held): void {
    this.#res!.write(event.text);
    this.#written = event.seq;
  }
}
