import { isObject } from '../jsonrpc.js';
import { closeSync, openSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Duplex, Transform, type TransformCallback } from 'node:stream';
import { type FrameError, type FrameErrorCode, redactMessage } from '../errors.js';
import type { DecodeSink } from '../framings/codec.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_MESSAGE_BYTES } from '../framings/index.js';
import { problemOf } from '../framings/json.js';
import { NdjsonDecoder, frame } from '../framings/ndjson.js';
import { jsonErrorPosition } from '../json-position.js';
import { CODES } from '../protocol/codes.js';

/** Which side of a session sent a message. */
export type Side = 'client' | 'server';

/** One line of a cassette: a message, or a line that was not a valid frame. `t` is ms since the start. */
export type CassetteEvent = { from: Side; t: number; msg: unknown } | { from: Side; t: number; invalid: string; code: FrameErrorCode };

/** A cassette that cannot be read: says which file and which line. */
export class CassetteError extends Error {
  override readonly name = 'CassetteError';
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    message: string,
  ) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${message}`);
  }
}

/** JSON-RPC error code a replay answers with when the cassette holds no request like the live one. */
export const REPLAY_NOT_RECORDED = CODES.replayNotRecorded;

/** Where recorded events go: a file (CassetteWriter) or memory (Cassette). */
export interface EventRecorder {
  /** Milliseconds since recording started. */
  now(): number;
  write(event: CassetteEvent): void;
  /** Hide secrets in the messages recorded (see redactMessage). @defaultValue true */
  readonly redact?: boolean;
}

interface RecordOptions {
  /**
   * Hide secrets in what is recorded: values under keys that look secret become "[REDACTED]", and bearer
   * tokens, URL passwords and `key=value` secrets in strings are hidden. `false` keeps every value as sent.
   * @defaultValue true
   */
  redact?: boolean;
}

/** A decoder sink that records what one side sends. */
function recordingSink(recorder: EventRecorder, from: Side): DecodeSink {
  const clean = recorder.redact === false ? (msg: unknown) => msg : redactMessage;
  return {
    textUnused: true,
    message: (msg) => recorder.write({ from, t: recorder.now(), msg: clean(msg) }),
    invalid: (err: FrameError) => {
      recorder.write({ from, t: recorder.now(), invalid: err.preview, code: err.code });
      return true;
    },
  };
}

/**
 * Passes bytes through unchanged (with the stream's backpressure) and records the messages in them: a copy is
 * decoded as ndjson beside the flow. A line that is not a valid frame is recorded as `invalid`, with its code
 * and a short redacted preview, and still passed on untouched.
 */
export class RecordingTap extends Transform {
  readonly #decoder = new NdjsonDecoder({ maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
  readonly #sink: DecodeSink;

  constructor(from: Side, recorder: EventRecorder) {
    super();
    this.#sink = recordingSink(recorder, from);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#decoder.write(chunk, this.#sink);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.#decoder.end(this.#sink);
    callback();
  }
}

/**
 * Appends events to a cassette file, one JSON line each, written through at once: a crash of the recorder
 * (or of what it records) keeps every event before it.
 */
export class CassetteWriter implements EventRecorder {
  readonly #fd: number;
  readonly #start = performance.now();
  readonly redact: boolean;

  constructor(
    readonly path: string,
    options: RecordOptions = {},
  ) {
    this.redact = options.redact !== false;
    this.#fd = openSync(path, 'w');
  }

  now(): number {
    return Math.round((performance.now() - this.#start) * 1000) / 1000;
  }

  write(event: CassetteEvent): void {
    writeSync(this.#fd, `${JSON.stringify(event)}\n`);
  }

  /** A pass-through stream that records what `from` sends. */
  tap(from: Side): RecordingTap {
    return new RecordingTap(from, this);
  }

  close(): void {
    closeSync(this.#fd);
  }
}

export const NOT_AN_EVENT = 'not a cassette event: expected {"from": "client" | "server", "t": ms, "msg": message}';

/** True when `v` has the shape of a cassette line. */
export function isCassetteEvent(v: unknown): v is CassetteEvent {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    (e.from === 'client' || e.from === 'server') &&
    typeof e.t === 'number' &&
    ('msg' in e || (typeof e.invalid === 'string' && typeof e.code === 'string'))
  );
}

/** The error for a cassette line that is not JSON, with the column where it stops being JSON. */
function notJson(file: string, line: number, text: string): CassetteError {
  const at = jsonErrorPosition(text);
  return new CassetteError(file, line, `not JSON${at ? ` (column ${at.column})` : ''}`);
}

/** Parses a cassette's text; every problem names the file and line. */
export function parseCassette(text: string, file = 'cassette'): CassetteEvent[] {
  const events: CassetteEvent[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw notJson(file, i + 1, line);
    }
    if (!isCassetteEvent(value)) throw new CassetteError(file, i + 1, NOT_AN_EVENT);
    // The event wraps its message in one more level.
    if (problemOf(value, line, DEFAULT_MAX_DEPTH + 1) !== undefined) {
      throw new CassetteError(file, i + 1, `the message nests deeper than ${DEFAULT_MAX_DEPTH} levels`);
    }
    events.push(value);
  });
  return events;
}

type Obj = Record<string, unknown>;

/** JSON with object keys sorted, so that equal params match whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * What a request is matched by: its method and params, without `_meta` (progress tokens differ between runs),
 * and with secrets hidden as a recording hides them, so that a redacted cassette matches the live request.
 * `initialize` matches by method alone, since every client names itself differently. No params and `{}` are
 * the same request (clients differ in which they send).
 */
function requestKey(method: string, params: unknown): string {
  if (method === 'initialize') return method;
  const rest = isObject(params) ? Object.fromEntries(Object.entries(params).filter(([k]) => k !== '_meta')) : params;
  return `${method} ${canonical(redactMessage(rest ?? {}))}`;
}

/** A recorded client request and what the server sent for it: notifications on the way, then its response. */
interface Exchange {
  key: string;
  request: Obj;
  replies: Obj[];
  /** When the request was recorded, and each reply after it, ms (the cassette's `t`). */
  t: number;
  after: number[];
}

/** Pairs each recorded client request with the server messages that answered it. */
export function exchanges(events: readonly CassetteEvent[]): Exchange[] {
  const out: Exchange[] = [];
  const open = new Map<string, Exchange>();
  let current: Exchange | undefined;
  for (const event of events) {
    if (!('msg' in event) || !isObject(event.msg)) continue;
    const msg = event.msg;
    if (event.from === 'client') {
      if (typeof msg.method === 'string' && 'id' in msg) {
        current = { key: requestKey(msg.method, msg.params), request: msg, replies: [], t: event.t, after: [] };
        out.push(current);
        open.set(canonical(msg.id), current);
      }
      continue;
    }
    const isResponse = typeof msg.method !== 'string' && 'id' in msg;
    if (isResponse) {
      const id = canonical(msg.id);
      const ex = open.get(id);
      if (ex === undefined) continue;
      ex.replies.push(msg);
      ex.after.push(Math.max(0, event.t - ex.t));
      open.delete(id);
      if (current === ex) current = undefined;
    } else if (current !== undefined) {
      // A notification (or a request of the server's) while a request was open goes with the latest one.
      current.replies.push(msg);
      current.after.push(Math.max(0, event.t - current.t));
    }
  }
  return out;
}

function progressToken(request: Obj): unknown {
  const params = request.params;
  return isObject(params) && isObject(params._meta) ? params._meta.progressToken : undefined;
}

/** A recorded reply made to fit the live request: its id, and the progress token it was given. */
function adapt(reply: Obj, recorded: Obj, live: Obj): Obj {
  if (typeof reply.method !== 'string') return { ...reply, id: live.id };
  const from = progressToken(recorded);
  const to = progressToken(live);
  if (from !== undefined && to !== undefined && isObject(reply.params) && reply.params.progressToken === from) {
    return { ...reply, params: { ...reply.params, progressToken: to } };
  }
  return reply;
}

export interface ReplayOptions {
  /** Only the next recorded request, in order, may match. @defaultValue false */
  strictOrder?: boolean;
  /**
   * replayStream(): each reply as long after its live request as it came after the recorded one. Without it,
   * the replies go at once, still one write each, as a server writes them. @defaultValue false
   */
  pace?: boolean;
  /** Told about each live request the cassette cannot answer. */
  onMiss?: (request: { method: string; id: unknown; reason: string }) => void;
}

/**
 * The server side of a recorded session. `answer()` gives the messages to send for one live client message:
 * the recorded replies to the request that matches it by method and params (not by id, and not by order
 * unless `strictOrder`), with ids rewritten to the live one, or a JSON-RPC error when nothing matches.
 * Recorded requests that match the same live request are used in turn; the last is repeated.
 */
export class Replayer {
  readonly #exchanges: Exchange[];
  /** The exchanges by request key, in order, and how many of each key have been used: a lookup, not a scan. */
  readonly #byKey = new Map<string, Exchange[]>();
  readonly #usedByKey = new Map<string, number>();
  readonly #methods = new Set<unknown>();
  readonly #strict: boolean;
  readonly #onMiss: ReplayOptions['onMiss'];
  #next = 0;

  constructor(events: readonly CassetteEvent[], options: ReplayOptions = {}) {
    this.#exchanges = exchanges(events);
    for (const exchange of this.#exchanges) {
      const list = this.#byKey.get(exchange.key);
      if (list === undefined) this.#byKey.set(exchange.key, [exchange]);
      else list.push(exchange);
      this.#methods.add(exchange.request.method);
    }
    this.#strict = options.strictOrder === true;
    this.#onMiss = options.onMiss;
  }

  answer(msg: unknown): Obj[] {
    return this.timedAnswer(msg).map((r) => r.msg);
  }

  /** answer(), each message with how long after the request the recorded server sent it (0 for a miss). */
  timedAnswer(msg: unknown): Array<{ msg: Obj; after: number }> {
    if (Array.isArray(msg)) return msg.flatMap((m) => this.timedAnswer(m));
    if (!isObject(msg) || typeof msg.method !== 'string' || !('id' in msg)) return []; // notifications and responses need no answer
    const key = requestKey(msg.method, msg.params);
    const found = this.#find(key);
    if (found === undefined) {
      const known = this.#methods.has(msg.method);
      const reason = this.#strict
        ? `it is not the next recorded request (${this.#exchanges[this.#next]?.request.method ?? 'none left'})`
        : known
          ? 'the cassette has this method, but not with these params'
          : 'the cassette never saw this method';
      this.#onMiss?.({ method: msg.method, id: msg.id, reason });
      const error =
        known || this.#strict
          ? { code: REPLAY_NOT_RECORDED, message: `not in the cassette: ${msg.method}: ${reason}`, data: { method: msg.method, params: msg.params } }
          : { code: CODES.methodNotFound, message: `Method not found: ${msg.method} (not in the cassette)` };
      return [{ msg: { jsonrpc: '2.0', id: msg.id, error }, after: 0 }];
    }
    return found.replies.map((reply, i) => ({ msg: adapt(reply, found.request, msg), after: found.after[i] ?? 0 }));
  }

  #find(key: string): Exchange | undefined {
    if (this.#strict) {
      const next = this.#exchanges[this.#next];
      if (next === undefined || next.key !== key) return undefined;
      this.#next++;
      return next;
    }
    const candidates = this.#byKey.get(key);
    if (candidates === undefined) return undefined;
    const used = this.#usedByKey.get(key) ?? 0;
    this.#usedByKey.set(key, used + 1);
    return candidates[Math.min(used, candidates.length - 1)];
  }
}

/**
 * A replaying server as one Duplex stream of ndjson bytes: write what a client sends, read what the recorded
 * server answers, one frame to a chunk and one chunk to a turn of the event loop, as a server's writes come (a
 * client may read a progress notification and the response after it differently when they come in one read:
 * the MCP SDK 1.x client drops the progress). With `pace`, each at its recorded delay. Bad input lines are
 * skipped (and reported on 'invalid'). The stream ends once every reply is out.
 */
export function replayStream(events: readonly CassetteEvent[], options: ReplayOptions = {}): Duplex {
  const replayer = new Replayer(events, options);
  const decoder = new NdjsonDecoder({ maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
  /** Frames due now, in order; one is pushed a turn. */
  const due: string[] = [];
  let pending = 0;
  let ending = false;
  let duplex: Duplex;
  const pump = (): void => {
    const next = due.shift();
    if (next !== undefined) duplex.push(next);
    if (due.length > 0) setImmediate(pump);
    else if (ending && pending === 0) duplex.push(null);
  };
  const send = (text: string): void => {
    due.push(text);
    if (due.length === 1) setImmediate(pump);
  };
  const sink: DecodeSink = {
    textUnused: true,
    message: (msg) => {
      for (const reply of replayer.timedAnswer(msg)) {
        if (options.pace !== true || reply.after === 0) send(frame(reply.msg));
        else {
          pending++;
          setTimeout(() => {
            pending--;
            send(frame(reply.msg));
          }, reply.after);
        }
      }
    },
    invalid: (err) => {
      duplex.emit('invalid', err);
      return true;
    },
  };
  duplex = new Duplex({
    write(chunk: Buffer, _enc, callback) {
      decoder.write(chunk, sink);
      callback();
    },
    final(callback) {
      decoder.end(sink);
      ending = true;
      if (due.length === 0 && pending === 0) this.push(null);
      callback();
    },
    read() {},
  });
  return duplex;
}

/**
 * A recorded session: plain JSON Lines that a person can read and edit. Record in memory with tap(), replay
 * with replay() (a Duplex of ndjson bytes) or replayer() (one message at a time), save with toString().
 */
export class Cassette implements EventRecorder {
  readonly #start = performance.now();
  readonly redact: boolean;

  constructor(
    readonly events: CassetteEvent[] = [],
    options: RecordOptions = {},
  ) {
    this.redact = options.redact !== false;
  }

  now(): number {
    return Math.round((performance.now() - this.#start) * 1000) / 1000;
  }

  write(event: CassetteEvent): void {
    this.events.push(event);
  }

  /** A pass-through stream that records what `from` sends into this cassette. */
  tap(from: Side): RecordingTap {
    return new RecordingTap(from, this);
  }

  static async load(path: string): Promise<Cassette> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new CassetteError(path, undefined, code === 'ENOENT' ? 'no such file' : (err as Error).message);
    }
    return new Cassette(parseCassette(text, path));
  }

  /** The server side of the session, as a Duplex of ndjson bytes. */
  replay(options: ReplayOptions = {}): Duplex {
    return replayStream(this.events, options);
  }

  /** The server side of the session, one live message at a time. */
  replayer(options: ReplayOptions = {}): Replayer {
    return new Replayer(this.events, options);
  }

  toString(): string {
    return this.events.map((e) => `${JSON.stringify(e)}\n`).join('');
  }
}
