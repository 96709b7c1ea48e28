/*
 * Newline-delimited JSON on any runtime: the decoder of mcp-frame/web, written on Uint8Array and TextDecoder
 * alone (no node: module, no Buffer), to the same rules as the Node decoder (framings/ndjson.ts) and held to
 * them by the same fixtures: a message a line, a BOM on the first line and the CR of a CRLF allowed, blank lines
 * skipped, a line past maxMessageBytes MESSAGE_TOO_LARGE and dropped up to its LF, bytes that are not UTF-8
 * INVALID_UTF8, a line that is not JSON INVALID_JSON (TRUNCATED when the input ends inside it), one that is not a
 * message INVALID_MESSAGE; every error with the line and byte offset where its line starts.
 *
 * The Node decoder decodes a chunk's complete lines in one call and parses large frames from their bytes, for
 * speed measured on Node; this one decodes a line at a time. The unfinished line's pieces are kept as they came
 * and joined once, when its LF comes, so a long line costs linear time whatever its chunking.
 */
import { FrameError, type FrameErrorPosition, preview } from '../errors.js';
import type { DecodeSink, DecoderLimits, FrameDecoderCore } from '../framings/codec.js';
import { DEFAULT_MAX_DEPTH, lineError, lineProblem, tryParse } from '../framings/json.js';
import { joined } from './pieces.js';

const LF = 0x0a;
const CR = 0x0d;
/** Framing bytes a line holds beside its message: a BOM (3) on the first line and the CR of a CRLF (1). */
const LINE_SLACK = 4;
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class WebNdjsonDecoder implements FrameDecoderCore {
  readonly #max: number;
  readonly #maxDepth: number;
  /** The pieces of the unfinished line, unless it is being discarded. */
  #pieces: Uint8Array[] = [];
  /** Bytes of the unfinished line seen so far (also counted while discarding it). */
  #partLen = 0;
  #discarding = false;
  /** Stream byte offset and 1-based number of the current line. */
  #offset = 0;
  #line = 1;
  #last: FrameErrorPosition = {};

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#max = maxMessageBytes;
    this.#maxDepth = maxDepth;
  }

  get partialBytes(): number {
    return this.#partLen;
  }

  get bufferedBytes(): number {
    return this.#pieces.reduce((sum, piece) => sum + piece.length, 0);
  }

  lastPosition(): FrameErrorPosition {
    return { ...this.#last };
  }

  abandonPartial(): FrameErrorPosition | undefined {
    if (this.#partLen === 0 || this.#discarding) return undefined;
    this.#discarding = true;
    this.#pieces = [];
    return { line: this.#line, offset: this.#offset };
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    let pos = 0;
    while (pos < chunk.length) {
      const nl = chunk.indexOf(LF, pos);
      if (nl === -1) return this.#hold(chunk.subarray(pos), sink);
      if (!this.#lineEnds(chunk.subarray(pos, nl), sink)) return false;
      pos = nl + 1;
    }
    return true;
  }

  end(sink: DecodeSink): void {
    if (this.#partLen === 0) return;
    this.#partLen = 0;
    if (this.#discarding) {
      this.#discarding = false;
      return;
    }
    const bytes = joined(this.#pieces);
    this.#pieces = [];
    this.#decodeLine(bytes, true, sink);
  }

  /** Bytes of the unfinished line; past the limit (its framing included) the line is reported and dropped. */
  #hold(bytes: Uint8Array, sink: DecodeSink): boolean {
    const had = this.#partLen;
    this.#partLen += bytes.length;
    if (this.#discarding) return true;
    if (this.#partLen > this.#max + LINE_SLACK) {
      const head = had > 0 ? joined(this.#pieces) : bytes;
      this.#discarding = true;
      this.#pieces = [];
      return sink.invalid(this.#tooLarge({ line: this.#line, offset: this.#offset }, head));
    }
    // A piece of a caller's chunk is copied: the caller may reuse its buffer once write() returns.
    this.#pieces.push(bytes.slice());
    return true;
  }

  /** The current line ends with `rest` (the bytes of this chunk before its LF). */
  #lineEnds(rest: Uint8Array, sink: DecodeSink): boolean {
    if (this.#partLen === 0) return this.#decodeLine(rest, false, sink);
    const len = this.#partLen + rest.length;
    this.#partLen = 0;
    if (this.#discarding) {
      this.#discarding = false;
      this.#offset += len + 1;
      this.#line++;
      return true;
    }
    this.#pieces.push(rest);
    const bytes = joined(this.#pieces);
    this.#pieces = [];
    if (len > this.#max + LINE_SLACK) {
      const at = { line: this.#line, offset: this.#offset };
      this.#line++;
      this.#offset += len + 1;
      return sink.invalid(this.#tooLarge(at, bytes));
    }
    return this.#decodeLine(bytes, false, sink);
  }

  /** One whole line, without its LF. */
  #decodeLine(bytes: Uint8Array, atEnd: boolean, sink: DecodeSink): boolean {
    const at = { line: this.#line, offset: this.#offset };
    this.#line++;
    this.#offset += bytes.length + 1;
    const start = at.line === 1 && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    const end = bytes.length > start && bytes[bytes.length - 1] === CR ? bytes.length - 1 : bytes.length;
    if (end - start > this.#max) return sink.invalid(this.#tooLarge(at, bytes.subarray(start)));
    let text: string;
    try {
      text = UTF8.decode(bytes.subarray(start));
    } catch {
      return sink.invalid(new FrameError('INVALID_UTF8', 'line is not valid UTF-8', at, preview(bytes.subarray(start))));
    }
    const msg = tryParse(text);
    const problem = lineProblem(msg, text, this.#maxDepth);
    if (problem === 'blank') return true;
    if (problem !== undefined) return sink.invalid(lineError(problem, atEnd, at, text));
    this.#last = at;
    sink.message(msg, text);
    return true;
  }

  #tooLarge(at: FrameErrorPosition, head: Uint8Array): FrameError {
    return new FrameError('MESSAGE_TOO_LARGE', `message is larger than maxMessageBytes (${this.#max})`, at, preview(head));
  }
}
