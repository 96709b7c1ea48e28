import { FrameError, preview, type FrameErrorPosition } from '../errors.js';
import { ByteAccumulator } from './accumulator.js';
import { asBuffer, COLON, CR, decodeUtf8, LF, SizeLimit, startsWithBom } from './bytes.js';
import type { DecodeSink, DecoderLimits, EncoderSettings, FrameDecoderCore, FrameEncoderCore, Framing } from './codec.js';
import { DEFAULT_MAX_DEPTH, mayBeTooDeep, NOT_JSON, problemOf, serialize, tryParse } from './json.js';

/** `buf[start, end)` holds exactly the ASCII `word`, compared as bytes. */
function isWord(buf: Buffer, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false;
  for (let i = 0; i < word.length; i++) if (buf[start + i] !== word.charCodeAt(i)) return false;
  return true;
}

/** The field a line names, when it is one of the four the format defines; read as bytes, not decoded. */
function fieldName(buf: Buffer, start: number, end: number): 'data' | 'event' | 'id' | 'retry' | undefined {
  switch (end - start) {
    case 4:
      return isWord(buf, start, end, 'data') ? 'data' : undefined;
    case 5:
      return isWord(buf, start, end, 'event') ? 'event' : isWord(buf, start, end, 'retry') ? 'retry' : undefined;
    case 2:
      return isWord(buf, start, end, 'id') ? 'id' : undefined;
    default:
      return undefined;
  }
}

/** The line (or the start of it) is a `data` field: `data` then a colon, or `data` alone. */
function isDataLine(head: Buffer): boolean {
  let colon = 0;
  while (colon < head.length && colon < 5 && head[colon] !== COLON) colon++;
  return fieldName(head, 0, colon) === 'data';
}

/** Framing bytes a line holds beside its data: its field name and blank (`data: `), and a BOM on the first line. */
const FIELD_SLACK = 9;

export interface SseEventFields {
  /** Event type; omitted, the reader takes it as `message`. */
  event?: string;
  data: string;
  id?: string | number;
  /** Reconnection time, in milliseconds. */
  retry?: number;
}

/** One event in the WHATWG event-stream format; each line of `data` becomes its own `data:` line. */
export function formatEvent({ event, data, id, retry }: SseEventFields): string {
  let out = '';
  if (id !== undefined) {
    const text = String(id);
    if (/[\r\n\0]/.test(text)) throw new TypeError('an SSE event id cannot hold CR, LF or NUL');
    out += `id: ${text}\n`;
  }
  if (event !== undefined) {
    if (/[\r\n]/.test(event)) throw new TypeError('an SSE event type cannot hold CR or LF');
    out += `event: ${event}\n`;
  }
  if (retry !== undefined) out += `retry: ${Math.floor(retry)}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** `event: message\ndata: <json>\n\n`, with an `id:` line first when an id is given. Compact JSON has no line breaks. */
export function frameSse(msg: unknown, id?: string | number): string {
  const json = serialize(msg);
  return id === undefined ? `event: message\ndata: ${json}\n\n` : formatEvent({ id, event: 'message', data: json });
}

/**
 * Server-Sent Events, read as the WHATWG event-stream rules say: LF, CR and CRLF line ends (a CRLF split
 * across chunks counts once), a BOM at the start, comment lines, `data` lines joined with LF, `event`, `id`
 * (kept as lastEventId, for reconnection) and `retry`. Events of type `message` carry JSON-RPC messages;
 * other types (MCP's legacy `endpoint` event carries a URL) go to sink.event. An event cut off by the end of
 * the input is not dispatched; it is reported as TRUNCATED.
 */
export class SseDecoder implements FrameDecoderCore {
  readonly #limit: SizeLimit;
  readonly #maxDepth: number;
  /** Bytes of a line that spans chunks. */
  readonly #line: ByteAccumulator;
  /** The current line is over the limit: its bytes are dropped up to its end. */
  #lineTooLong = false;
  /** The previous chunk ended with CR: an LF first in this one belongs to it. */
  #afterCR = false;
  #bomChecked = false;
  #data: string[] = [];
  #dataBytes = 0;
  #eventType = '';
  /** The id of the last event dispatched; `#idBuffer` the last `id:` line read, which becomes it at dispatch. */
  #lastEventId = '';
  #idBuffer = '';
  #retry: number | undefined;
  /** The current event was reported (too large, abandoned): its lines are dropped up to its blank line. */
  #dropping = false;
  /** Where the current event started: stream offset, line number, event number. */
  #eventOffset = 0;
  #eventLine = 1;
  #eventIndex = 1;
  #eventStarted = false;
  /** Offset of the next unread byte, where the current line started, and the number of the current line. */
  #offset = 0;
  #lineStart = 0;
  #lineNo = 1;
  #lastPos: FrameErrorPosition = {};

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#maxDepth = maxDepth;
    this.#limit = new SizeLimit(maxMessageBytes, FIELD_SLACK);
    this.#line = new ByteAccumulator(this.#limit.holdCap);
  }

  /**
   * The id of the last event dispatched, for a reconnection's Last-Event-ID header. An `id:` line counts once
   * its event ends (an event cut off by the end of the stream does not move it), even when the event carries
   * no data (a priming event).
   */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** The reconnection time the server asked for with `retry:`, in milliseconds. */
  get retry(): number | undefined {
    return this.#retry;
  }

  get partialBytes(): number {
    return this.#eventStarted ? this.#offset - this.#eventOffset : this.#line.length;
  }

  get bufferedBytes(): number {
    return this.#line.length + this.#dataBytes;
  }

  lastPosition(): FrameErrorPosition {
    return this.#lastPos;
  }

  abandonPartial(): FrameErrorPosition | undefined {
    if (!this.#eventStarted && this.#line.length === 0) return undefined;
    if (!this.#eventStarted) this.#startEvent();
    const at = this.#position();
    // The rest of a half-read line is dropped with it, and so are the event's lines up to its blank line.
    this.#lineTooLong ||= this.#line.length > 0;
    this.#line.clear();
    this.#dropEvent();
    return at;
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    const buf = asBuffer(chunk);
    let pos = 0;
    if (this.#afterCR && buf.length > 0) {
      this.#afterCR = false;
      if (buf[0] === LF) {
        pos = 1;
        this.#offset += 1;
      }
    }
    // Next CR and LF at or after `pos`, each searched for once per occurrence.
    let nextLF = buf.indexOf(LF, pos);
    let nextCR = buf.indexOf(CR, pos);
    while (pos < buf.length) {
      if (this.#line.length === 0 && !this.#lineTooLong) this.#lineStart = this.#offset;
      if (nextLF !== -1 && nextLF < pos) nextLF = buf.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = buf.indexOf(CR, pos);
      const eol = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (eol === -1) {
        const ok = this.#hold(buf, pos, buf.length, sink);
        this.#offset += buf.length - pos;
        return ok;
      }
      let lineEnd = eol + 1;
      if (buf[eol] === CR) {
        if (eol + 1 < buf.length) {
          if (buf[eol + 1] === LF) lineEnd = eol + 2;
        } else {
          this.#afterCR = true;
        }
      }
      let ok: boolean;
      if (this.#line.length > 0 || this.#lineTooLong) {
        if (!this.#hold(buf, pos, eol, sink)) return false;
        const tooLong = this.#lineTooLong;
        this.#lineTooLong = false;
        ok = tooLong ? true : this.#processLine(this.#line.bytes(), 0, this.#line.length, sink);
        this.#line.clear();
      } else {
        ok = this.#processLine(buf, pos, eol, sink);
      }
      this.#offset += lineEnd - pos;
      this.#lineNo++;
      pos = lineEnd;
      if (!ok) return false;
    }
    return true;
  }

  end(sink: DecodeSink): void {
    const pending = this.#line.length > 0 || (this.#eventStarted && (this.#data.length > 0 || this.#eventType !== ''));
    if (pending && !this.#dropping) {
      if (!this.#eventStarted) this.#startEvent();
      const text = this.#data.join('\n') + this.#line.bytes().toString('utf8');
      sink.invalid(new FrameError('TRUNCATED', 'input ended inside an event; it is not dispatched', this.#position(), preview(text)));
    }
    this.#line.clear();
    this.#resetEvent();
  }

  /** Bytes of a line that has not ended yet; false when the sink said stop. */
  #hold(buf: Buffer, start: number, end: number, sink: DecodeSink): boolean {
    if (this.#lineTooLong || start === end) return true;
    if (!this.#limit.heldTooLong(this.#line.length + (end - start))) {
      this.#line.append(buf, start, end);
      return true;
    }
    const head = this.#line.length > 0 ? this.#line.bytes() : buf.subarray(start, end);
    if (!isDataLine(head)) {
      // A comment or another field this long carries no message: it is dropped, as it is when it comes whole.
      this.#line.clear();
      this.#lineTooLong = true;
      return true;
    }
    if (!this.#eventStarted) this.#startEvent();
    const error = this.#limit.error('event data', this.#position(), this.#line.length > 0 ? this.#line.bytes() : buf.subarray(start));
    this.#line.clear();
    this.#lineTooLong = true;
    this.#dropEvent();
    return sink.invalid(error);
  }

  /** The event starts at the line being read. */
  #startEvent(): void {
    this.#eventStarted = true;
    this.#eventOffset = this.#lineStart;
    this.#eventLine = this.#lineNo;
  }

  /** Drops the current event's lines up to its blank line. */
  #dropEvent(): void {
    this.#resetEvent();
    this.#eventStarted = true;
    this.#dropping = true;
  }

  #position(): FrameErrorPosition {
    return { index: this.#eventIndex, line: this.#eventLine, offset: this.#eventOffset };
  }

  #resetEvent(): void {
    this.#data = [];
    this.#dataBytes = 0;
    this.#eventType = '';
    this.#eventStarted = false;
  }

  /** One complete line `buf[start, end)`, without its line end. */
  #processLine(buf: Buffer, start: number, end: number, sink: DecodeSink): boolean {
    if (!this.#bomChecked) {
      this.#bomChecked = true;
      if (startsWithBom(buf, start, end)) start += 3;
    }
    if (start === end) return this.#dispatch(sink);
    // Comments (keep-alives among them) are not part of any event; nor is a line of another field too long to
    // hold (see #hold).
    if (this.#dropping || buf[start] === COLON) return true;
    if (this.#limit.heldTooLong(end - start) && !isDataLine(buf.subarray(start, end))) return true;
    if (!this.#eventStarted) this.#startEvent();
    // The colon is looked for within this line only: a search on into the chunk would make many lines without
    // one quadratic.
    let colon = start;
    while (colon < end && buf[colon] !== COLON) colon++;
    let valueStart = colon;
    if (colon < end) {
      valueStart = colon + 1;
      if (valueStart < end && buf[valueStart] === 0x20) valueStart++;
    }
    switch (fieldName(buf, start, colon)) {
      case 'data': {
        // Each data line adds its bytes and the LF that joins it to the next; the last has no LF.
        this.#dataBytes += end - valueStart + 1;
        let error: FrameError | undefined;
        if (this.#limit.over(this.#dataBytes - 1)) {
          error = this.#limit.error('event data', this.#position(), this.#data[0] ?? buf.subarray(valueStart));
        } else {
          const value = decodeUtf8(buf, valueStart, end);
          if (value !== undefined) {
            this.#data.push(value);
            return true;
          }
          error = new FrameError('INVALID_UTF8', 'event data is not valid UTF-8', this.#position(), preview(buf.subarray(valueStart, end)));
        }
        this.#dropEvent();
        return sink.invalid(error);
      }
      case 'event':
        // `event: message` comes with nearly every MCP event: compared as bytes, not decoded each time.
        this.#eventType = isWord(buf, valueStart, end, 'message') ? 'message' : buf.toString('utf8', valueStart, end);
        return true;
      case 'id': {
        const id = buf.toString('utf8', valueStart, end);
        if (!id.includes('\0')) this.#idBuffer = id;
        return true;
      }
      case 'retry': {
        const value = buf.toString('latin1', valueStart, end);
        if (/^[0-9]+$/.test(value)) this.#retry = Number(value);
        return true;
      }
      default:
        return true;
    }
  }

  /** A blank line: the event ends. */
  #dispatch(sink: DecodeSink): boolean {
    this.#lastEventId = this.#idBuffer;
    if (this.#dropping) {
      this.#dropping = false;
      this.#eventIndex++;
      this.#resetEvent();
      return true;
    }
    if (!this.#eventStarted) return true;
    const at = this.#position();
    const hadData = this.#data.length > 0;
    const data = this.#data.join('\n');
    const type = this.#eventType === '' ? 'message' : this.#eventType;
    this.#resetEvent();
    if (!hadData) return true;
    this.#eventIndex++;
    if (type !== 'message') {
      sink.event?.(this.#lastEventId === '' ? { event: type, data } : { event: type, data, id: this.#lastEventId });
      return true;
    }
    // A message event with empty data carries no message: it is the priming event MCP servers send to give a
    // stream its first id (`id: 1`, `data:`), neither a message nor an error.
    if (data === '') return true;
    const msg = tryParse(data);
    const problem = msg !== NOT_JSON && msg !== null && !mayBeTooDeep(data, this.#maxDepth) ? undefined : problemOf(msg, data, this.#maxDepth);
    if (problem === undefined) {
      this.#lastPos = at;
      sink.message(msg, data);
      return true;
    }
    const what = problem.code === 'INVALID_JSON' ? `event data ${problem.reason}` : problem.reason;
    return sink.invalid(new FrameError(problem.code, what, at, preview(data)));
  }
}

export function createSseEncoder(options: EncoderSettings = {}): FrameEncoderCore {
  const eventId = options.eventId;
  if (eventId === undefined) return { encode: (msg) => frameSse(msg) };
  let seq = 0;
  return { encode: (msg) => frameSse(msg, eventId(msg, ++seq)) };
}

/** Server-Sent Events, as MCP's HTTP transports use them. */
export const sseFraming: Framing = {
  name: 'sse',
  createDecoder: (limits) => new SseDecoder(limits),
  createEncoder: (options) => createSseEncoder(options),
};
