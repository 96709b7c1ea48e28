import { FrameError, preview, type FrameErrorPosition } from '../errors.js';
import { asBuffer, COLON, CR, decodeUtf8, LF, startsWithBom } from './bytes.js';
import { SizeLimit } from './limit.js';
import type { DecodeSink, DecoderLimits, EncoderSettings, FrameDecoderCore, FrameEncoderCore, Framing } from './codec.js';
import { LARGE_FRAME, type LargeParse, parseLarge } from './large.js';
import { EventData, HeldLine, isWord, Region } from './sse-reading.js';
import { keepShape } from './shapes.js';
import { DEFAULT_MAX_DEPTH, mayBeTooDeep, NOT_JSON, problemOf, tryParse } from './json.js';
import { frameSse } from './sse-format.js';

export { formatEvent, frameSse, type SseEventFields } from './sse-format.js';

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

/**
 * The most bytes of complete lines the fast path decodes in one call. On the bench's small multibyte messages in
 * 64 KiB chunks, FrameDecoder took 0.96x-0.99x of its time with one region per chunk (paired in five processes);
 * 16 KiB regions took longer than either, a call's cost then showing.
 */
const REGION_BYTES = 32 * 1024;

/** The two LFs that end an event (its last line's and the blank line's). */
const EVENT_END = Buffer.from('\n\n');

/**
 * Where the region that starts at `pos` ends, within `buf[pos, end)` (whole lines): at most REGION_BYTES on, after
 * an event's blank line where there is one in reach, so that the quick reading of whole events goes on across
 * regions; else after the last line end in reach; a line longer than that is a region of its own.
 */
function regionEnd(buf: Buffer, pos: number, end: number): number {
  if (end - pos <= REGION_BYTES) return end;
  const event = buf.lastIndexOf(EVENT_END, pos + REGION_BYTES - 2);
  if (event >= pos) return event + 2;
  const line = buf.lastIndexOf(LF, pos + REGION_BYTES - 1);
  return line >= pos ? line + 1 : buf.indexOf(LF, pos + REGION_BYTES) + 1;
}

/** The type line of an MCP event, and with the start of its data line. */
const QUICK_TYPE = 'event: message\n';
const QUICK_TYPED = `${QUICK_TYPE}data: `;

/** The longest `id:` line the quick path reads (a longer one is measured against the limits line by line). */
const QUICK_ID_UNITS = 256;

/** What quickData read before the data line: the id line's value (undefined for none), and how many lines. One object, reused: this is the hot path. */
const QUICK: { id: string | undefined; lines: number } = { id: undefined, lines: 0 };

/**
 * At the line start `i`, an event of the shape nearly every MCP event has: up to two of `event: message` and
 * `id: <id>`, in either order (a server that can resume a stream names each event: MCP's SDK writes `event:
 * message`, then `id:`), then `data: `. Returns the index of the data's value (what came before it in QUICK), or
 * -1 for another shape (the line by line reading takes it).
 */
function quickData(text: string, i: number): number {
  const first = text.charCodeAt(i);
  QUICK.id = undefined;
  // The usual two, in one comparison each.
  if (first === 0x65 && text.startsWith(QUICK_TYPED, i)) {
    QUICK.lines = 1;
    return i + QUICK_TYPED.length;
  }
  QUICK.lines = 0;
  if (first === 0x64) return text.startsWith('data: ', i) ? i + 6 : -1;
  let at = i;
  for (let c = first; QUICK.lines < 2; c = text.charCodeAt(at), QUICK.lines++) {
    if (c === 0x65 && text.startsWith(QUICK_TYPE, at)) at += QUICK_TYPE.length;
    else if (c !== 0x69 || !text.startsWith('id: ', at)) break;
    else {
      const end = text.indexOf('\n', at + 4);
      if (end === -1 || end - at > QUICK_ID_UNITS) return -1;
      QUICK.id = text.slice(at + 4, end);
      at = end + 1;
    }
  }
  return QUICK.lines > 0 && text.startsWith('data: ', at) ? at + 6 : -1;
}

/** Framing bytes a line holds beside its data: its field name and blank (`data: `), and a BOM on the first line. */
const FIELD_SLACK = 9;

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
  /** A line that spans chunks. */
  readonly #line: HeldLine;
  /** The previous chunk ended with CR: an LF first in this one belongs to it. */
  #afterCR = false;
  #bomChecked = false;
  readonly #data = new EventData();
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
  /** Where the last message dispatched started: its event number (0: none yet), line and byte offset. */
  #lastIndex = 0;
  #lastLine = 0;
  #lastOffset = 0;
  /**
   * A region of the chunk's complete lines, decoded at once (the fast path), while they are read: byte offsets
   * are worked out from it only when asked for (an error, a position), from whichever end is nearer.
   */
  #region: Region | undefined;
  /** When not -1, the current event started at this character of #region; its byte offset is not known yet. */
  #eventStartChar = -1;
  /**
   * When not -1, the last message dispatched started at this character of #lastRegion (kept until asked for): its
   * offset is measured only then. Measured once per region, it took a tenth of the time of one event a chunk.
   */
  #lastPosChar = -1;
  #lastRegion: Region | undefined;

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#maxDepth = maxDepth;
    this.#limit = new SizeLimit(maxMessageBytes, FIELD_SLACK);
    this.#line = new HeldLine(this.#limit.holdCap);
    keepShape(SseDecoder, () => new SseDecoder({ maxMessageBytes, maxDepth }));
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
    return this.#line.length + this.#data.held;
  }

  lastPosition(): FrameErrorPosition {
    if (this.#lastPosChar !== -1) {
      this.#lastOffset = this.#lastRegion!.byteAt(this.#lastPosChar);
      this.#lastPosChar = -1;
      this.#lastRegion = undefined;
    }
    return this.#lastIndex === 0 ? {} : { index: this.#lastIndex, line: this.#lastLine, offset: this.#lastOffset };
  }

  abandonPartial(): FrameErrorPosition | undefined {
    if (!this.#eventStarted && this.#line.length === 0) return undefined;
    if (!this.#eventStarted) this.#startEvent();
    const at = this.#position();
    // The rest of a half-read line is dropped with it, and so are the event's lines up to its blank line.
    this.#line.tooLong ||= this.#line.length > 0;
    this.#line.clear();
    this.#dropEvent();
    return at;
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    const buf = asBuffer(chunk);
    this.#region = undefined;
    // The fast path takes the chunk's complete lines a region at a time; it needs LF line ends only, the BOM
    // checked, and no line pending from the last chunk (that one line is finished here first).
    if (this.#afterCR || buf.indexOf(CR) !== -1) return this.#writeLines(buf, sink);
    let pos = 0;
    if (this.#line.length > 0 || this.#line.tooLong || !this.#bomChecked) {
      const firstLF = buf.indexOf(LF);
      pos = firstLF === -1 ? buf.length : firstLF + 1;
      // A held line is most often an event's last data line: its blank line is read with it, so that #heldData
      // knows the event ends there.
      if (pos < buf.length && buf[pos] === LF) pos++;
      if (!this.#writeLines(buf.subarray(0, pos), sink)) return false;
    }
    const lastLF = buf[buf.length - 1] === LF ? buf.length - 1 : buf.lastIndexOf(LF);
    while (lastLF >= pos) {
      const end = regionEnd(buf, pos, lastLF + 1);
      const done = this.#writeRegion(buf, pos, end, sink);
      if (done === false) return false;
      if (done === undefined && !this.#writeLines(buf.subarray(pos, end), sink)) return false;
      pos = end;
    }
    return pos === buf.length || this.#writeLines(buf.subarray(pos), sink);
  }

  /**
   * The fast path: `buf[pos, end)` holds whole lines with LF ends only, decoded in one call and read as text.
   * Returns undefined, having read nothing, when the bytes are not valid UTF-8 (the byte path then reports
   * the line), and false when the sink said stop.
   */
  #writeRegion(buf: Buffer, pos: number, end: number, sink: DecodeSink): boolean | undefined {
    const text = decodeUtf8(buf, pos, end);
    if (text === undefined) return undefined;
    this.#region = new Region(text, this.#offset, this.#offset + (end - pos));
    let ok = true;
    // The next colon at or after the current line's start; text.length when there is none.
    let colon = -1;
    for (let i = 0; i < text.length && ok; ) {
      // The shape nearly every MCP event has, `event: message` (or nothing) and one data line, read at once.
      if (!this.#eventStarted && !this.#dropping) {
        const next = this.#quickEvents(text, i, sink);
        if (next < 0) {
          ok = false;
          break;
        }
        if (next !== i) {
          i = next;
          continue;
        }
      }
      const eol = text.indexOf('\n', i);
      if (eol === i) {
        ok = this.#dispatch(sink);
      } else if (!this.#dropping && text.charCodeAt(i) !== 0x3a) {
        if (colon < i) {
          colon = text.indexOf(':', i);
          if (colon === -1) colon = text.length;
        }
        ok = this.#field(text, i, Math.min(colon, eol), eol, sink);
      }
      i = eol + 1;
      this.#lineNo++;
    }
    if (ok) {
      // Nothing of the region but the last message's start (see #lastRegion) is needed once it is gone: the event
      // still open has its position worked out now.
      if (this.#eventStartChar !== -1) this.#eventOffset = this.#region.byteAt(this.#eventStartChar);
      this.#offset = this.#region.byteEnd;
    }
    this.#eventStartChar = -1;
    this.#region = undefined;
    return ok;
  }

  /**
   * At a line start with no event open: the events there of the usual shape (quickData) and their blank line, each
   * dispatched whole, in one loop. Returns the index after the last one read (`i` when the lines there have
   * another shape: the line by line reading follows), negated and less one when the sink said stop.
   */
  #quickEvents(text: string, i: number, sink: DecodeSink): number {
    const length = text.length;
    // Within the limit even at 3 bytes a character; a longer line is measured by the line by line reading.
    const maxUnits = Math.floor(this.#limit.max / 3);
    for (;;) {
      const value = quickData(text, i);
      if (value === -1) return i;
      const eol = text.indexOf('\n', value);
      if (eol === -1 || eol + 1 >= length || text.charCodeAt(eol + 1) !== 0x0a || eol - value > maxUnits) return i;
      const index = this.#eventIndex++;
      const line = this.#lineNo;
      this.#lineNo = line + QUICK.lines + 2; // the event's lines, its data line and its blank line
      if (QUICK.id !== undefined && !QUICK.id.includes('\0')) this.#idBuffer = QUICK.id;
      this.#lastEventId = this.#idBuffer;
      const next = eol + 2;
      if (eol > value) {
        // #deliver's work, written out for the usual message: a call less for each event.
        const data = text.slice(value, eol);
        const msg = tryParse(data);
        if (msg !== NOT_JSON && msg !== null && !mayBeTooDeep(data, this.#maxDepth)) this.#handOn(msg, data, index, line, 0, i, sink);
        else if (!this.#checkFurther(msg, data, index, line, 0, i, sink)) return -next - 1;
      }
      if (next >= length) return next;
      i = next;
    }
  }

  /** One field line of the region, `text[start, eol)`, its name ending at `nameEnd`. */
  #field(text: string, start: number, nameEnd: number, eol: number, sink: DecodeSink): boolean {
    let valueStart = nameEnd;
    if (nameEnd < eol) valueStart = text.charCodeAt(nameEnd + 1) === 0x20 && nameEnd + 1 < eol ? nameEnd + 2 : nameEnd + 1;
    const name = nameEnd - start;
    if (name === 4 && text.startsWith('data', start)) return this.#regionData(text, start, valueStart, eol, sink);
    // A line of another field too long to hold carries no message: dropped, as on the byte path.
    if (3 * (eol - start) > this.#limit.holdCap && this.#limit.heldTooLong(Buffer.byteLength(text.slice(start, eol)))) return true;
    this.#regionEventStart(start);
    if (name === 5 && text.startsWith('event', start)) {
      this.#eventType = eol - valueStart === 7 && text.startsWith('message', valueStart) ? 'message' : text.slice(valueStart, eol);
    } else if (name === 2 && text.startsWith('id', start)) {
      this.#otherField('id', text.slice(valueStart, eol));
    } else if (name === 5 && text.startsWith('retry', start)) {
      this.#otherField('retry', text.slice(valueStart, eol));
    }
    return true;
  }

  /** The value of an `id` line (kept unless it holds NUL) or a `retry` line (kept when it is digits). */
  #otherField(name: 'id' | 'retry', value: string): void {
    if (name === 'id' ? !value.includes('\0') : /^[0-9]+$/.test(value)) {
      if (name === 'id') this.#idBuffer = value;
      else this.#retry = Number(value);
    }
  }

  #regionData(text: string, start: number, valueStart: number, eol: number, sink: DecodeSink): boolean {
    this.#regionEventStart(start);
    if (!this.#limit.over(this.#data.addText(text.slice(valueStart, eol), this.#region!.ascii))) return true;
    if (!this.#limit.over(this.#data.measure())) return true;
    const error = this.#limit.error('event data', this.#position(), this.#data.lines[0]!);
    this.#dropEvent();
    return sink.invalid(error);
  }

  /** A field line of the region: the event starts there if it has not yet; its offset is worked out if asked. */
  #regionEventStart(char: number): void {
    if (this.#eventStarted) return;
    this.#eventStarted = true;
    this.#eventLine = this.#lineNo;
    this.#eventStartChar = char;
  }

  /** Line by line, as bytes: any line ends, a line that spans chunks, the BOM. */
  #writeLines(buf: Buffer, sink: DecodeSink): boolean {
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
      if (this.#line.length === 0 && !this.#line.tooLong) this.#lineStart = this.#offset;
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
      if (this.#line.length > 0 || this.#line.tooLong) {
        if (!this.#hold(buf, pos, eol, sink)) return false;
        const tooLong = this.#line.tooLong;
        this.#line.tooLong = false;
        const eventEnds = lineEnd < buf.length && (buf[lineEnd] === LF || buf[lineEnd] === CR);
        const held = this.#line.bytes;
        ok = tooLong ? true : this.#line.value ? this.#heldData(sink, eventEnds) : this.#processLine(held.bytes(), 0, held.length, sink);
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
    const pending = this.#line.length > 0 || (this.#eventStarted && (this.#data.lines.length > 0 || this.#eventType !== ''));
    if (pending && !this.#dropping) {
      if (!this.#eventStarted) this.#startEvent();
      const text = this.#data.lines.join('\n') + this.#line.bytes.bytes().toString('utf8');
      sink.invalid(new FrameError('TRUNCATED', 'input ended inside an event; it is not dispatched', this.#position(), preview(text)));
    }
    this.#line.clear();
    this.#resetEvent();
  }

  /** Bytes of a line that has not ended yet; false when the sink said stop. */
  #hold(buf: Buffer, start: number, end: number, sink: DecodeSink): boolean {
    const line = this.#line;
    if (line.tooLong || start === end) return true;
    if (this.#bomChecked && !this.#dropping) start = line.valueStart(buf, start, end);
    if (!this.#limit.heldTooLong(line.length + (end - start))) {
      line.bytes.append(buf, start, end);
      return true;
    }
    const head = line.length > 0 ? line.bytes.bytes() : buf.subarray(start, end);
    if (this.#dropping) {
      // A line of an event being dropped is dropped whatever it holds, as it is when it comes whole.
      line.clear();
      line.tooLong = true;
      return true;
    }
    // The field name is read from the line's first bytes, held or not: held bytes alone may stop inside it
    // (`data` held, `x: ...` to come), which would make a line of another field look like data.
    const first = head.length >= 9 ? head : Buffer.concat([head, buf.subarray(start, Math.min(end, start + 9))]);
    // The first line's BOM is not read yet: the field name comes after it.
    const name = !this.#bomChecked && startsWithBom(first, 0, first.length) ? first.subarray(3) : first;
    if (!line.value && !isDataLine(name)) {
      // A comment or another field this long carries no message: it is dropped, as it is when it comes whole.
      line.clear();
      line.tooLong = true;
      return true;
    }
    if (!this.#eventStarted) this.#startEvent();
    const error = this.#limit.error('event data', this.#position(), line.length > 0 ? line.bytes.bytes() : buf.subarray(start));
    line.clear();
    line.tooLong = true;
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
    if (this.#eventStartChar !== -1) {
      this.#eventOffset = this.#region!.byteAt(this.#eventStartChar);
      this.#eventStartChar = -1;
    }
    return { index: this.#eventIndex, line: this.#eventLine, offset: this.#eventOffset };
  }

  #resetEvent(): void {
    this.#data.reset();
    this.#eventType = '';
    this.#eventStarted = false;
    this.#eventStartChar = -1;
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
    const name = fieldName(buf, start, colon);
    if (name === 'data') return this.#dataValue(buf, valueStart, end, sink);
    // `event: message` comes with nearly every MCP event: compared as bytes, not decoded each time.
    if (name === 'event') this.#eventType = isWord(buf, valueStart, end, 'message') ? 'message' : buf.toString('utf8', valueStart, end);
    else if (name !== undefined) this.#otherField(name, buf.toString('utf8', valueStart, end));
    return true;
  }

  /** A data line held without its field name, now complete; `eventEnds`: a blank line follows it. */
  #heldData(sink: DecodeSink, eventEnds: boolean): boolean {
    if (this.#dropping) return true;
    if (!this.#eventStarted) this.#startEvent();
    const bytes = this.#line.bytes.bytes();
    // An event of one large data line, the usual shape of a large MCP message, is parsed from its bytes now:
    // nothing can follow it but its dispatch, which takes the message as it is.
    const single = eventEnds && this.#data.lines.length === 0 && (this.#eventType === '' || this.#eventType === 'message');
    if (single && bytes.length >= LARGE_FRAME && sink.textUnused === true && !this.#limit.over(bytes.length)) {
      const parsed = parseLarge(bytes);
      // A bad one (nested too deep) goes the text way, which reports it with a preview of its text.
      if (parsed !== undefined && problemOf(parsed.msg, parsed.skeleton, this.#maxDepth) === undefined) {
        this.#data.addParsed(parsed, bytes.length);
        return true;
      }
    }
    return this.#dataValue(bytes, 0, bytes.length, sink);
  }

  /** The value `buf[valueStart, end)` of a data line read as bytes. */
  #dataValue(buf: Buffer, valueStart: number, end: number, sink: DecodeSink): boolean {
    let error: FrameError | undefined;
    if (this.#limit.over(this.#data.reserve(end - valueStart))) {
      error = this.#limit.error('event data', this.#position(), this.#data.lines[0] ?? buf.subarray(valueStart));
    } else {
      const value = decodeUtf8(buf, valueStart, end);
      if (value !== undefined) {
        this.#data.lines.push(value);
        return true;
      }
      error = new FrameError('INVALID_UTF8', 'event data is not valid UTF-8', this.#position(), preview(buf.subarray(valueStart, end)));
    }
    this.#dropEvent();
    return sink.invalid(error);
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
    // On the fast path the event's byte offset is worked out only if it is asked for.
    const lazyChar = this.#eventStartChar;
    const index = this.#eventIndex;
    const line = this.#eventLine;
    if (lazyChar === -1) this.#position();
    const offset = this.#eventOffset;
    const hadData = this.#data.lines.length > 0;
    const data = this.#data.text();
    const type = this.#eventType === '' ? 'message' : this.#eventType;
    const parsed = this.#data.parsed;
    this.#resetEvent();
    if (!hadData) return true;
    this.#eventIndex++;
    if (type !== 'message') {
      sink.event?.(this.#lastEventId === '' ? { event: type, data } : { event: type, data, id: this.#lastEventId });
      return true;
    }
    return this.#deliver(data, index, line, offset, lazyChar, sink, parsed);
  }

  /**
   * A message event's data, parsed and handed on. The event started at byte `offset`, or, when `lazyChar` is
   * not -1, at that character of the region, its offset not worked out unless it is asked for. `parsed`: the
   * data was parsed from its bytes and is a message, and `data` is ''.
   */
  #deliver(data: string, index: number, line: number, offset: number, lazyChar: number, sink: DecodeSink, parsed?: LargeParse): boolean {
    // A message event with empty data carries no message: it is the priming event MCP servers send to give a
    // stream its first id (`id: 1`, `data:`), neither a message nor an error.
    if (data === '' && parsed === undefined) return true;
    const msg = parsed === undefined ? tryParse(data) : parsed.msg;
    // One parsed from its bytes was checked then (#heldData).
    const fine = parsed !== undefined || (msg !== NOT_JSON && msg !== null && !mayBeTooDeep(data, this.#maxDepth));
    return fine ? this.#handOn(msg, data, index, line, offset, lazyChar, sink) : this.#checkFurther(msg, data, index, line, offset, lazyChar, sink);
  }

  /** A message, to the sink; its event's position kept for lastPosition(). */
  #handOn(msg: unknown, data: string, index: number, line: number, offset: number, lazyChar: number, sink: DecodeSink): true {
    this.#lastIndex = index;
    this.#lastLine = line;
    this.#lastOffset = offset;
    this.#lastPosChar = lazyChar;
    this.#lastRegion = lazyChar === -1 ? undefined : this.#region;
    sink.message(msg, data);
    return true;
  }

  /**
   * Event data that the quick checks did not pass (`msg`, what tryParse made of it, may be NOT_JSON or null): a
   * long text is a message once its depth is checked; anything else is reported.
   */
  #checkFurther(msg: unknown, data: string, index: number, line: number, offset: number, lazyChar: number, sink: DecodeSink): boolean {
    const problem = problemOf(msg, data, this.#maxDepth);
    if (problem === undefined) return this.#handOn(msg, data, index, line, offset, lazyChar, sink);
    if (lazyChar !== -1) offset = this.#region!.byteAt(lazyChar);
    const what = problem.code === 'INVALID_JSON' ? `event data ${problem.reason}` : problem.reason;
    return sink.invalid(new FrameError(problem.code, what, { index, line, offset }, preview(data)));
  }
}

function createSseEncoder(options: EncoderSettings = {}): FrameEncoderCore {
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
