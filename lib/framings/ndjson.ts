import { isUtf8 } from 'node:buffer';
import { FrameError, preview, type FrameErrorPosition } from '../errors.js';
import { ByteAccumulator } from './accumulator.js';
import { asBuffer, decodeUtf8, LF, startsWithBom, withoutCR } from './bytes.js';
import { SizeLimit } from './limit.js';
import type { DecodeSink, DecoderLimits, FrameDecoderCore, Framing } from './codec.js';
import { LARGE_FRAME, parseLarge } from './large.js';
import { keepShape } from './shapes.js';
import { DEFAULT_MAX_DEPTH, lineError, lineProblem, serialize, tryParse } from './json.js';

/** Framing bytes a line holds beside its message: a BOM (3) on the first line and the CR of a CRLF (1). */
const LINE_SLACK = 4;

/**
 * One message as one line: `JSON.stringify(msg) + "\n"`, byte for byte. JSON.stringify escapes every newline
 * inside strings, so the only LF is the terminator (U+2028 stays raw, as JSON allows).
 */
export function frame(msg: unknown): string {
  return `${serialize(msg)}\n`;
}

/**
 * Parses one frame: surrounding whitespace and a trailing `\n` or `\r\n` are allowed, anything else that is not
 * exactly one JSON value on one line is FrameError(INVALID_JSON).
 */
export function parseFrame(line: string | Uint8Array): unknown {
  if (typeof line !== 'string' && !isUtf8(line)) throw new FrameError('INVALID_UTF8', 'frame is not valid UTF-8', {}, preview(line));
  const text = typeof line === 'string' ? line : asBuffer(line).toString('utf8');
  // One trailing LF ends the frame (the CR of a CRLF is JSON whitespace); any other LF starts a second line.
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (body.includes('\n')) {
    throw new FrameError('INVALID_JSON', 'a frame must be one line, but this one has more', {}, preview(text));
  }
  try {
    // JSON.parse allows JSON whitespace around the value (space, tab, CR, LF), and nothing else.
    return JSON.parse(body);
  } catch {
    // The engine's SyntaxError quotes the input, secrets and all; say where instead of what.
    throw new FrameError('INVALID_JSON', 'frame is not valid JSON', {}, preview(text));
  }
}

/**
 * Newline-delimited JSON. A complete line is decoded as soon as its LF arrives. The bytes of an unfinished line
 * are copied into a ByteAccumulator as they come and decoded once, when its LF comes; only new bytes are
 * scanned for LF. Re-joining or rescanning the pending bytes on every chunk would make one long line quadratic
 * in its chunk count.
 */
export class NdjsonDecoder implements FrameDecoderCore {
  /** The unfinished line's bytes, unless it is being discarded. */
  readonly #held: ByteAccumulator;
  /** Bytes of the current unfinished line seen so far (also counted while discarding it). */
  #partLen = 0;
  /** The current line was reported (too large, or abandoned); its bytes are dropped up to its LF. */
  #discarding = false;
  /** Stream byte offset where the current line starts. */
  #offset = 0;
  /** 1-based number of the current line. */
  #line = 1;
  readonly #limit: SizeLimit;
  readonly #maxDepth: number;
  /**
   * Where the line last delivered to the sink came from, for lastPosition(). A line from a block of complete
   * lines has its byte offset worked out only when asked: it is `#lastOffset` plus the bytes of
   * `#lastBlock` from character `#lastFrom` to `#lastChar`.
   */
  #lastLine = 0;
  #lastOffset = 0;
  #lastBlock: string | undefined;
  #lastFrom = 0;
  #lastChar = 0;

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#maxDepth = maxDepth;
    this.#limit = new SizeLimit(maxMessageBytes, LINE_SLACK);
    this.#held = new ByteAccumulator(this.#limit.holdCap);
    keepShape(NdjsonDecoder, () => new NdjsonDecoder({ maxMessageBytes, maxDepth }));
  }

  get partialBytes(): number {
    return this.#partLen;
  }

  get bufferedBytes(): number {
    return this.#held.length;
  }

  lastPosition(): FrameErrorPosition {
    if (this.#lastBlock !== undefined) {
      this.#lastOffset += Buffer.byteLength(this.#lastBlock.slice(this.#lastFrom, this.#lastChar));
      this.#lastBlock = undefined;
    }
    return { line: this.#lastLine, offset: this.#lastOffset };
  }

  abandonPartial(): FrameErrorPosition | undefined {
    if (this.#partLen === 0 || this.#discarding) return undefined;
    this.#discarding = true;
    this.#held.clear();
    return { line: this.#line, offset: this.#offset };
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    const buf = asBuffer(chunk);
    let start = 0;
    if (this.#partLen > 0) {
      const nl = buf.indexOf(LF);
      if (nl === -1) return this.#hold(buf, sink);
      if (!this.#finishHeld(buf, nl, sink)) return false;
      start = nl + 1;
    }
    const last = buf.lastIndexOf(LF);
    if (last >= start) {
      if (!this.#decodeLines(buf, start, last + 1, sink)) return false;
      start = last + 1;
    }
    return start < buf.length ? this.#hold(buf.subarray(start), sink) : true;
  }

  end(sink: DecodeSink): void {
    if (this.#partLen === 0) return;
    this.#partLen = 0;
    if (this.#discarding) {
      this.#discarding = false;
      return;
    }
    this.#decodeLine(this.#held.bytes(), true, sink, this.#held);
    this.#held.clear();
  }

  /** Adds bytes of the unfinished line; past the limit the line is reported and dropped up to its LF. */
  #hold(buf: Buffer, sink: DecodeSink): boolean {
    const had = this.#partLen;
    this.#partLen += buf.length;
    if (this.#discarding) return true;
    if (this.#limit.heldTooLong(this.#partLen)) {
      const error = this.#tooLarge(this.#line, this.#offset, had > 0 ? this.#held.bytes() : buf);
      this.#discarding = true;
      this.#held.clear();
      return sink.invalid(error);
    }
    this.#held.append(buf);
    return true;
  }

  /** The held line ends at `nl` in `buf`. */
  #finishHeld(buf: Buffer, nl: number, sink: DecodeSink): boolean {
    const len = this.#partLen + nl;
    this.#partLen = 0;
    if (this.#discarding) {
      this.#discarding = false;
      this.#offset += len + 1;
      this.#line++;
      return true;
    }
    if (this.#limit.heldTooLong(len)) {
      const line = this.#line;
      const offset = this.#offset;
      this.#line++;
      this.#offset += len + 1;
      const error = this.#tooLarge(line, offset, this.#held.bytes());
      this.#held.clear();
      return sink.invalid(error);
    }
    this.#held.append(buf, 0, nl);
    const ok = this.#decodeLine(this.#held.bytes(), false, sink, this.#held);
    this.#held.clear();
    return ok;
  }

  /**
   * One line held whole in `buf` (without its LF): the path for lines that spanned chunks. `held`, when `buf` is
   * its bytes, is cleared once the line is text, so that the bytes are let go before the JSON is parsed.
   */
  #decodeLine(buf: Buffer, atEnd: boolean, sink: DecodeSink, held?: ByteAccumulator): boolean {
    const end = buf.length;
    const line = this.#line;
    const offset = this.#offset;
    this.#line++;
    this.#offset += end + 1;
    const start = line === 1 && startsWithBom(buf, 0, end) ? 3 : 0;
    if (this.#limit.over(withoutCR(buf, start, end) - start)) return sink.invalid(this.#tooLarge(line, offset, buf.subarray(start)));
    const large = end - start >= LARGE_FRAME && sink.textUnused === true ? parseLarge(buf.subarray(start, end)) : undefined;
    if (large !== undefined) {
      const problem = lineProblem(large.msg, large.skeleton, this.#maxDepth);
      const error = problem === undefined || problem === 'blank' ? undefined : lineError(problem, atEnd, { line, offset }, buf.subarray(start));
      held?.clear();
      if (error !== undefined) return sink.invalid(error);
      this.#delivered(line, offset);
      sink.message(large.msg, '');
      return true;
    }
    const text = decodeUtf8(buf, start, end);
    if (text === undefined) {
      return sink.invalid(new FrameError('INVALID_UTF8', 'line is not valid UTF-8', { line, offset }, preview(buf.subarray(start))));
    }
    held?.clear();
    const msg = tryParse(text);
    const problem = lineProblem(msg, text, this.#maxDepth);
    if (problem === 'blank') return true;
    if (problem !== undefined) return sink.invalid(lineError(problem, atEnd, { line, offset }, text));
    this.#delivered(line, offset);
    sink.message(msg, text);
    return true;
  }

  /** The line about to go to the sink, for lastPosition(). */
  #delivered(line: number, offset: number): void {
    this.#lastLine = line;
    this.#lastOffset = offset;
    this.#lastBlock = undefined;
  }

  /**
   * Complete lines `buf[start, end)`, the last byte being an LF. They are decoded to one string in one call and
   * split there: on streams of small messages a UTF-8 decode per line costs more than the parse. Byte offsets
   * are worked out only when a line is bad.
   */
  #decodeLines(buf: Buffer, start: number, end: number, sink: DecodeSink): boolean {
    // Invalid UTF-8 would be replaced in the decode, changing the text's byte length and every offset after it:
    // such a block goes line by line, each line checked on its own bytes.
    const text = decodeUtf8(buf, start, end);
    if (text === undefined) return this.#decodeEachLine(buf, start, end, sink);
    // No line in the block can be over the limit when the whole block is not.
    const checkSize = this.#limit.over(end - start);
    let line = this.#line;
    // Byte offset of the character at index `charMark`; advanced only when an error needs a position.
    let charMark = 0;
    let byteMark = this.#offset;
    const here = (pos: number): FrameErrorPosition => {
      byteMark += Buffer.byteLength(text.slice(charMark, pos));
      charMark = pos;
      return { line, offset: byteMark };
    };
    let pos = 0;
    while (pos < text.length) {
      const nl = text.indexOf('\n', pos);
      let from = pos;
      if (line === 1 && pos === 0 && text.charCodeAt(0) === 0xfeff) from = 1;
      const lineText = text.slice(from, nl);
      let error: FrameError | undefined;
      if (checkSize && this.#limit.over(Buffer.byteLength(text.slice(from, nl > from && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl)))) {
        error = this.#tooLarge(line, here(pos).offset!, lineText);
      } else {
        const msg = tryParse(lineText);
        const problem = lineProblem(msg, lineText, this.#maxDepth);
        if (problem === undefined) {
          this.#lastLine = line;
          this.#lastOffset = byteMark;
          this.#lastBlock = text;
          this.#lastFrom = charMark;
          this.#lastChar = pos;
          sink.message(msg, lineText);
        } else if (problem !== 'blank') {
          error = lineError(problem, false, here(pos), lineText);
        }
      }
      line++;
      pos = nl + 1;
      if (error !== undefined && !sink.invalid(error)) return false;
    }
    this.#line = line;
    this.#offset += end - start;
    return true;
  }

  /** Complete lines `buf[start, end)`, one at a time, each checked as bytes before it is decoded. */
  #decodeEachLine(buf: Buffer, start: number, end: number, sink: DecodeSink): boolean {
    let pos = start;
    while (pos < end) {
      const nl = buf.indexOf(LF, pos);
      if (!this.#decodeLine(buf.subarray(pos, nl), false, sink)) return false;
      pos = nl + 1;
    }
    return true;
  }

  #tooLarge(line: number, offset: number, head: string | Uint8Array): FrameError {
    return this.#limit.error('message', { line, offset }, head);
  }
}

/** Newline-delimited JSON, the framing of MCP's stdio transport. */
export const ndjson: Framing = {
  name: 'ndjson',
  createDecoder: (limits) => new NdjsonDecoder(limits),
  createEncoder: () => ({ encode: frame }),
};
