/*
 * Server-Sent Events on any runtime: the decoder of mcp-frame/web, written on Uint8Array and TextDecoder alone (no
 * node: module, no Buffer), to the same rules as the Node decoder (framings/sse.ts) and held to them by the same
 * fixtures and a differential test: LF, CR and CRLF line ends (a CRLF split across chunks counts once), a BOM at
 * the start, comment lines, `data` lines joined with LF, `event`, `id` (kept as lastEventId unless it holds NUL)
 * and `retry` (kept when it is digits); an event of type `message` carries a JSON-RPC message, one of another type
 * goes to sink.event, one with empty data carries nothing (MCP's priming event). Event data past maxMessageBytes
 * is MESSAGE_TOO_LARGE (early, once a line that spans chunks passes the limit and its slack) and the event is
 * dropped to its blank line; a line of another field that long carries no message and is dropped; data that is
 * not UTF-8, not JSON or not a message its own code; input that ends inside an event TRUNCATED. Every error names
 * the event's number, the line it starts on and its byte offset.
 *
 * The Node decoder reads whole regions of a chunk as text, for speed measured on Node; this one reads a line at a
 * time and keeps a line that spans chunks as copies of the pieces it came in, joined once it ends.
 */
import { FrameError, type FrameErrorPosition, preview } from '../errors.js';
import type { DecodeSink, DecoderLimits, FrameDecoderCore } from '../framings/codec.js';
import { DEFAULT_MAX_DEPTH, mayBeTooDeep, NOT_JSON, problemOf, tryParse } from '../framings/json.js';
import { SizeLimit } from '../framings/limit.js';
import { frameSse } from '../framings/sse-format.js';
import { joined } from './pieces.js';

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const LENIENT = new TextDecoder('utf-8', { ignoreBOM: true });
const TO_BYTES = new TextEncoder();
/** Framing bytes a line holds beside its data: its field name and blank (`data: `), and a BOM on the first line. */
const FIELD_SLACK = 9;
/** Bytes of a line too long to hold that its error's preview is made from (more than a preview reads). */
const PREVIEW_BYTES = 8192;

/** `event: message\ndata: <json>\n\n`, as bytes: what the Node SSE encoder writes. */
export function frameSseBytes(msg: unknown): Uint8Array {
  return TO_BYTES.encode(frameSse(msg));
}

function startsWithBom(bytes: Uint8Array, start: number): boolean {
  return bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf;
}

/** `bytes[start, end)` is exactly the ASCII `word`. */
function isWord(bytes: Uint8Array, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false;
  for (let i = 0; i < word.length; i++) if (bytes[start + i] !== word.charCodeAt(i)) return false;
  return true;
}

/** Where a line that starts `data:` has its value (past the colon and one blank), or -1 for another line. */
function dataValueAt(head: Uint8Array): number {
  if (head.length < 5 || !isWord(head, 0, 5, 'data:')) return -1;
  return head[5] === SPACE ? 6 : 5;
}

export class WebSseDecoder implements FrameDecoderCore {
  readonly #limit: SizeLimit;
  readonly #maxDepth: number;
  /** A line that spans chunks: its pieces as they came, their bytes, and whether it is past the limit (dropped to its end). */
  #pieces: Uint8Array[] = [];
  #held = 0;
  #tooLong = false;
  /** The previous chunk ended with CR: an LF first in this one belongs to it. */
  #afterCR = false;
  #bomChecked = false;
  /** The event being read: its data lines, their bytes with an LF each, its type. */
  #lines: string[] = [];
  #dataBytes = 0;
  #type = '';
  #idBuffer = '';
  #lastEventId = '';
  #retry: number | undefined;
  /** The event was reported (too large, not UTF-8, abandoned): its lines are dropped up to its blank line. */
  #dropping = false;
  #started = false;
  /** Where the event started: stream offset, line number, event number. */
  #eventOffset = 0;
  #eventLine = 1;
  #eventIndex = 1;
  /** Offset of the next unread byte, where the current line started, and the number of the current line. */
  #offset = 0;
  #lineStart = 0;
  #lineNo = 1;
  #last: FrameErrorPosition = {};

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#limit = new SizeLimit(maxMessageBytes, FIELD_SLACK);
    this.#maxDepth = maxDepth;
  }

  /** The id of the last event dispatched, for a reconnection's Last-Event-ID header. */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** The reconnection time the server asked for with `retry:`, in milliseconds. */
  get retry(): number | undefined {
    return this.#retry;
  }

  get partialBytes(): number {
    return this.#started ? this.#offset - this.#eventOffset : this.#held;
  }

  get bufferedBytes(): number {
    return this.#held + this.#dataBytes;
  }

  lastPosition(): FrameErrorPosition {
    return this.#last;
  }

  abandonPartial(): FrameErrorPosition | undefined {
    if (!this.#started && this.#held === 0) return undefined;
    if (!this.#started) this.#startEvent();
    const at = this.#position();
    this.#tooLong ||= this.#held > 0;
    this.#clearLine();
    this.#dropEvent();
    return at;
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    let pos = 0;
    if (this.#afterCR && chunk.length > 0) {
      this.#afterCR = false;
      if (chunk[0] === LF) {
        pos = 1;
        this.#offset += 1;
      }
    }
    let nextLF = chunk.indexOf(LF, pos);
    let nextCR = chunk.indexOf(CR, pos);
    while (pos < chunk.length) {
      if (this.#held === 0 && !this.#tooLong) this.#lineStart = this.#offset;
      if (nextLF !== -1 && nextLF < pos) nextLF = chunk.indexOf(LF, pos);
      if (nextCR !== -1 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
      const eol = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      if (eol === -1) {
        const ok = this.#hold(chunk, pos, chunk.length, sink);
        this.#offset += chunk.length - pos;
        return ok;
      }
      let lineEnd = eol + 1;
      if (chunk[eol] === CR) {
        if (eol + 1 === chunk.length) this.#afterCR = true;
        else if (chunk[eol + 1] === LF) lineEnd = eol + 2;
      }
      let ok = true;
      if (this.#held > 0 || this.#tooLong) {
        if (!this.#hold(chunk, pos, eol, sink)) return false;
        if (!this.#tooLong) {
          const line = joined(this.#pieces);
          ok = this.#line(line, 0, line.length, sink);
        }
        this.#tooLong = false;
        this.#clearLine();
      } else {
        ok = this.#line(chunk, pos, eol, sink);
      }
      this.#offset += lineEnd - pos;
      this.#lineNo++;
      pos = lineEnd;
      if (!ok) return false;
    }
    return true;
  }

  end(sink: DecodeSink): void {
    const pending = this.#held > 0 || (this.#started && (this.#lines.length > 0 || this.#type !== ''));
    if (pending && !this.#dropping) {
      if (!this.#started) this.#startEvent();
      const text = this.#lines.join('\n') + LENIENT.decode(joined(this.#pieces));
      sink.invalid(new FrameError('TRUNCATED', 'input ended inside an event; it is not dispatched', this.#position(), preview(text)));
    }
    this.#clearLine();
    this.#tooLong = false;
    this.#resetEvent();
  }

  /**
   * Bytes of a line that has not ended yet (or its last ones); false when the sink said stop. Once the line can no
   * longer hold data within the limit (a data line's value counted, past the first line's BOM check), a data line
   * is MESSAGE_TOO_LARGE and drops its event; another is dropped.
   */
  #hold(chunk: Uint8Array, start: number, end: number, sink: DecodeSink): boolean {
    if (this.#tooLong || start === end) return true;
    // Copied: the writer may reuse its buffer once write() returns (a BYOB reader's next read transfers it, which
    // would leave a view of it empty); the pieces are joined once, when the line ends.
    const piece = chunk.slice(start, end);
    const held = this.#held + piece.length;
    const head = this.#head(piece);
    const value = this.#bomChecked && !this.#dropping ? dataValueAt(head) : -1;
    const counted = value !== -1 && held > value ? held - value : held;
    if (!this.#limit.heldTooLong(counted)) {
      this.#pieces.push(piece);
      this.#held = held;
      return true;
    }
    const bom = !this.#bomChecked && startsWithBom(head, 0) ? 3 : 0;
    const data = dataValueAt(head.subarray(bom));
    const line = data === -1 || this.#dropping ? undefined : this.#head(piece, PREVIEW_BYTES);
    this.#clearLine();
    this.#tooLong = true;
    if (line === undefined) return true;
    if (!this.#started) this.#startEvent();
    const error = this.#limit.error('event data', this.#position(), line.subarray(bom + data));
    this.#dropEvent();
    return sink.invalid(error);
  }

  /** The first bytes (`want` or more, when there are) of the held line with `piece` after them. */
  #head(piece: Uint8Array, want = 16): Uint8Array {
    if (this.#pieces.length === 0) return piece;
    const first: Uint8Array[] = [];
    let bytes = 0;
    for (const held of this.#pieces) {
      if (bytes >= want) break;
      first.push(held);
      bytes += held.length;
    }
    return joined(bytes >= want ? first : [...first, piece.subarray(0, want)]);
  }

  #clearLine(): void {
    this.#pieces = [];
    this.#held = 0;
  }

  /** One complete line `bytes[start, end)`, without its line end. */
  #line(bytes: Uint8Array, start: number, end: number, sink: DecodeSink): boolean {
    if (!this.#bomChecked) {
      this.#bomChecked = true;
      if (startsWithBom(bytes, start)) start = Math.min(start + 3, end);
    }
    if (start === end) return this.#dispatch(sink);
    // Comments (keep-alives among them) belong to no event; nor does a line of another field too long to hold.
    if (this.#dropping || bytes[start] === COLON) return true;
    let colon = start;
    while (colon < end && bytes[colon] !== COLON) colon++;
    const isData = isWord(bytes, start, colon, 'data');
    if (!isData && this.#limit.heldTooLong(end - start)) return true;
    if (!this.#started) this.#startEvent();
    let valueStart = colon;
    if (colon < end) valueStart = bytes[colon + 1] === SPACE && colon + 1 < end ? colon + 2 : colon + 1;
    if (isData) return this.#data(bytes, valueStart, end, sink);
    // `event: message` comes with nearly every MCP event: compared as bytes, not decoded each time.
    if (isWord(bytes, start, colon, 'event'))
      this.#type = isWord(bytes, valueStart, end, 'message') ? 'message' : LENIENT.decode(bytes.subarray(valueStart, end));
    else if (isWord(bytes, start, colon, 'id')) {
      const id = LENIENT.decode(bytes.subarray(valueStart, end));
      if (!id.includes('\0')) this.#idBuffer = id;
    } else if (isWord(bytes, start, colon, 'retry')) {
      const retry = LENIENT.decode(bytes.subarray(valueStart, end));
      if (/^[0-9]+$/.test(retry)) this.#retry = Number(retry);
    }
    return true;
  }

  /** A data line's value `bytes[start, end)`. */
  #data(bytes: Uint8Array, start: number, end: number, sink: DecodeSink): boolean {
    this.#dataBytes += end - start + 1;
    let error: FrameError;
    if (this.#limit.over(this.#dataBytes - 1)) {
      error = this.#limit.error('event data', this.#position(), this.#lines[0] ?? bytes.subarray(start, end));
    } else {
      try {
        this.#lines.push(UTF8.decode(bytes.subarray(start, end)));
        return true;
      } catch {
        error = new FrameError('INVALID_UTF8', 'event data is not valid UTF-8', this.#position(), preview(bytes.subarray(start, end)));
      }
    }
    this.#dropEvent();
    return sink.invalid(error);
  }

  #startEvent(): void {
    this.#started = true;
    this.#eventOffset = this.#lineStart;
    this.#eventLine = this.#lineNo;
  }

  #dropEvent(): void {
    this.#resetEvent();
    this.#started = true;
    this.#dropping = true;
  }

  #resetEvent(): void {
    this.#lines = [];
    this.#dataBytes = 0;
    this.#type = '';
    this.#started = false;
  }

  #position(): FrameErrorPosition {
    return { index: this.#eventIndex, line: this.#eventLine, offset: this.#eventOffset };
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
    if (!this.#started) return true;
    const at = this.#position();
    const hadData = this.#lines.length > 0;
    const data = this.#lines.length === 1 ? this.#lines[0]! : this.#lines.join('\n');
    const type = this.#type === '' ? 'message' : this.#type;
    this.#resetEvent();
    if (!hadData) return true;
    this.#eventIndex++;
    if (type !== 'message') {
      sink.event?.(this.#lastEventId === '' ? { event: type, data } : { event: type, data, id: this.#lastEventId });
      return true;
    }
    // Empty data carries no message: the priming event MCP servers send to give a stream its first id.
    if (data === '') return true;
    const msg = tryParse(data);
    if (msg === NOT_JSON || msg === null || mayBeTooDeep(data, this.#maxDepth)) {
      const problem = problemOf(msg, data, this.#maxDepth);
      if (problem !== undefined) {
        const what = problem.code === 'INVALID_JSON' ? `event data ${problem.reason}` : problem.reason;
        return sink.invalid(new FrameError(problem.code, what, at, preview(data)));
      }
    }
    this.#last = at;
    sink.message(msg, data);
    return true;
  }
}
