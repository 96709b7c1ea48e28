import { FrameError, preview, type FrameErrorPosition } from '../errors.js';
import { ByteAccumulator } from './accumulator.js';
import { asBuffer, CR, decodeUtf8, LF } from './bytes.js';
import { contentLength, HeaderScan, MAX_HEADER_BYTES, NAME_AND_COLON } from './headers.js';
import { SizeLimit } from './limit.js';
import type { DecodeSink, DecoderLimits, FrameDecoderCore, Framing } from './codec.js';
import { LARGE_FRAME, parseLarge } from './large.js';
import { keepShape } from './shapes.js';
import { DEFAULT_MAX_DEPTH, mayBeTooDeep, NOT_JSON, problemOf, serialize, tryParse } from './json.js';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** The header as frameContentLength and LSP write it, read straight from the bytes. */
const PLAIN_HEADER = Buffer.from('Content-Length: ');

/** `Content-Length: <UTF-8 byte length>\r\n\r\n<compact JSON>`, as LSP frames its messages. */
export function frameContentLength(msg: unknown): string {
  const json = serialize(msg);
  return `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

/**
 * Just past the blank line that ends a header block starting at `pos` (a line end, then a line of nothing but
 * CRs and its LF), or -1 when it is not within MAX_HEADER_BYTES of this chunk. Hops from line end to line end,
 * so that it reads only the header's own bytes. The byte-by-byte reader takes the same lines as blank.
 */
function headerEnd(buf: Buffer, pos: number): number {
  const limit = Math.min(buf.length, pos + MAX_HEADER_BYTES);
  let lf = buf.indexOf(LF, pos);
  while (lf !== -1 && lf < limit) {
    let next = lf + 1;
    while (buf[next] === CR) next++;
    if (buf[next] === LF) return next + 1 <= limit ? next + 1 : -1;
    lf = buf.indexOf(LF, lf + 1);
  }
  return -1;
}

/**
 * The length in a header block `buf[pos, end)` of exactly the usual shape, `Content-Length: <1-15 digits>` and
 * CRLF CRLF, or -1 for any other block (which the general reader then takes). Most frames have that shape,
 * and reading it from the bytes skips a string and a split per message.
 */
function plainLength(buf: Buffer, pos: number, end: number): number {
  const digitsEnd = end - 4;
  const digits = digitsEnd - pos - PLAIN_HEADER.length;
  if (digits < 1 || digits > 15 || buf[digitsEnd] !== CR || buf[digitsEnd + 1] !== LF || buf[digitsEnd + 2] !== CR) return -1;
  if (buf.compare(PLAIN_HEADER, 0, PLAIN_HEADER.length, pos, pos + PLAIN_HEADER.length) !== 0) return -1;
  let n = 0;
  for (let i = digitsEnd - digits; i < digitsEnd; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

enum State {
  /** Between frames, or inside a header block. */
  Header,
  /** Inside a body of known length. */
  Body,
  /** Dropping a body of known length: too large, or abandoned. */
  SkipBody,
  /** After a bad header block: dropping bytes up to a line that starts a Content-Length header. */
  Resync,
}

/**
 * Content-Length framing. Headers are read byte by byte (they are short and capped at 8 KiB); a body's length is
 * known from its header, so its buffer is reserved once and filled in bulk, and a body that is complete inside
 * one chunk is decoded straight from it. A body that is not JSON, or too large, is dropped by its known length
 * and the stream stays in sync. After a bad header block the length is unknown: under 'skip' the decoder
 * resyncs at the next Content-Length header (a reader that goes on from the bad block instead reads garbage
 * from then on).
 */
export class ContentLengthDecoder implements FrameDecoderCore {
  /** A body's length is known before it arrives, so the check is exact and nothing else is held beside it. */
  readonly #limit: SizeLimit;
  readonly #maxDepth: number;
  /** How many bytes of a BOM the stream has started with; -1 once past the start. */
  #bom = 0;
  #state = State.Header;
  readonly #head = new ByteAccumulator(MAX_HEADER_BYTES);
  /** In a header block: the current line has had a byte other than CR. */
  #lineHasContent = false;
  readonly #body: ByteAccumulator;
  #bodyLength = 0;
  /** Body bytes still to come (Body, SkipBody). */
  #remaining = 0;
  /** Resync: the scan for the next header's name. */
  readonly #scan = new HeaderScan();
  /** Stream offset of the next byte; of the first byte of the chunk being read; where the current frame started. */
  #offset = 0;
  #base = 0;
  #frameOffset = 0;
  /** 1-based number of the current frame. */
  #index = 1;
  #lastIndex = 0;
  #lastOffset = 0;

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#maxDepth = maxDepth;
    this.#limit = new SizeLimit(maxMessageBytes, 0);
    this.#body = new ByteAccumulator(this.#limit.holdCap);
    keepShape(ContentLengthDecoder, () => new ContentLengthDecoder({ maxMessageBytes, maxDepth }));
  }

  get partialBytes(): number {
    if (this.#state === State.Header) return this.#head.length;
    if (this.#state === State.Resync) return 0;
    return this.#offset - this.#frameOffset;
  }

  get bufferedBytes(): number {
    return this.#head.length + this.#body.length;
  }

  lastPosition(): FrameErrorPosition {
    return { index: this.#lastIndex, offset: this.#lastOffset };
  }

  abandonPartial(): FrameErrorPosition | undefined {
    const at = this.#position();
    if (this.#state === State.Header && this.#head.length > 0) {
      this.#startResync();
      return at;
    }
    if (this.#state === State.Body) {
      this.#body.clear();
      this.#state = State.SkipBody;
      return at;
    }
    return undefined;
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    const buf = asBuffer(chunk);
    this.#base = this.#offset;
    this.#offset += buf.length;
    let pos = this.#bom >= 0 ? this.#skipBom(buf) : 0;
    while (pos < buf.length) {
      switch (this.#state) {
        case State.Header:
          pos = this.#readHeader(buf, pos, sink);
          break;
        case State.Body:
          pos = this.#readBody(buf, pos, sink);
          break;
        case State.SkipBody: {
          const take = Math.min(this.#remaining, buf.length - pos);
          this.#remaining -= take;
          pos += take;
          if (this.#remaining === 0) this.#nextFrame(this.#base + pos);
          break;
        }
        case State.Resync:
          pos = this.#resync(buf, pos);
          break;
      }
      if (pos < 0) return false;
    }
    return true;
  }

  end(sink: DecodeSink): void {
    if (this.#bom > 0) this.#head.append(BOM, 0, this.#bom);
    this.#bom = -1;
    if (this.#state === State.Header && this.#head.length > 0) {
      sink.invalid(new FrameError('TRUNCATED', 'input ended inside a header block', this.#position(), preview(this.#head.bytes())));
    } else if (this.#state === State.Body) {
      sink.invalid(
        new FrameError('TRUNCATED', `input ended inside a body of ${this.#bodyLength} bytes`, this.#position(), preview(this.#body.bytes())),
      );
    }
    this.#head.clear();
    this.#body.clear();
    this.#state = State.Header;
  }

  /**
   * A UTF-8 BOM at the very start of the stream is not part of the first header; its bytes may come in more
   * than one chunk. Returns how many bytes of `buf` it took. Bytes that began like a BOM but were not one are
   * given back to the header.
   */
  #skipBom(buf: Buffer): number {
    let pos = 0;
    while (pos < buf.length && this.#bom < 3 && buf[pos] === BOM[this.#bom]) {
      this.#bom++;
      pos++;
    }
    if (this.#bom === 3) {
      this.#bom = -1;
      this.#frameOffset = 3;
    } else if (pos < buf.length) {
      if (this.#bom > 0) {
        this.#head.append(BOM, 0, this.#bom);
        this.#lineHasContent = true;
      }
      this.#bom = -1;
    }
    return pos;
  }

  #position(): FrameErrorPosition {
    return { index: this.#index, offset: this.#frameOffset };
  }

  /** Header bytes from `pos`; returns where it stopped, or -1 when the sink said stop. */
  #readHeader(buf: Buffer, pos: number, sink: DecodeSink): number {
    // The usual case, a whole header block at the start of what is left of the chunk, is found with two
    // native searches; anything else (a block split across chunks, blank lines first) goes byte by byte.
    if (this.#head.length === 0 && buf[pos] !== CR && buf[pos] !== LF) {
      const end = headerEnd(buf, pos);
      if (end !== -1 && end - pos <= MAX_HEADER_BYTES) {
        const length = plainLength(buf, pos, end);
        if (length !== -1) return this.#lengthKnown(length, sink, this.#base + end) ? end : -1;
        this.#head.append(buf, pos, end);
        return this.#headersDone(sink, this.#base + end) ? end : -1;
      }
    }
    for (let i = pos; i < buf.length; i++) {
      const b = buf[i]!;
      if (this.#head.length === 0 && (b === CR || b === LF)) {
        // Blank lines between frames are tolerated.
        this.#frameOffset = this.#base + i + 1;
        continue;
      }
      if (this.#head.length >= MAX_HEADER_BYTES) {
        return this.#badHeader(`header block over ${MAX_HEADER_BYTES} bytes`, sink) ? i : -1;
      }
      this.#head.append(buf, i, i + 1);
      if (b === LF) {
        if (!this.#lineHasContent) return this.#headersDone(sink, this.#base + i + 1) ? i + 1 : -1;
        this.#lineHasContent = false;
      } else if (b !== CR) {
        this.#lineHasContent = true;
      }
    }
    return buf.length;
  }

  /** The header block is complete; `end` is the stream offset just past it. */
  #headersDone(sink: DecodeSink, end: number): boolean {
    const parsed = contentLength(this.#head.bytes().toString('latin1'));
    if ('problem' in parsed) return this.#badHeader(parsed.problem, sink);
    this.#head.clear();
    this.#lineHasContent = false;
    return this.#lengthKnown(parsed.length, sink, end);
  }

  /** A header block gave the body's `length`; `end` is the stream offset just past the block. */
  #lengthKnown(length: number, sink: DecodeSink, end: number): boolean {
    this.#bodyLength = this.#remaining = length;
    if (this.#limit.over(length)) {
      this.#state = State.SkipBody;
      return sink.invalid(this.#limit.error(`Content-Length ${length}`, this.#position(), ''));
    }
    this.#state = State.Body;
    if (length === 0) return this.#finishBody(Buffer.alloc(0), 0, 0, sink, end);
    return true;
  }

  #badHeader(problem: string, sink: DecodeSink): boolean {
    const error = new FrameError('INVALID_HEADER', `bad header block: ${problem}`, this.#position(), preview(this.#head.bytes()));
    this.#startResync();
    return sink.invalid(error);
  }

  #startResync(): void {
    this.#head.clear();
    this.#lineHasContent = false;
    this.#state = State.Resync;
    this.#scan.reset();
    this.#index++;
  }

  /** Drops bytes up to the next `Content-Length` name and its colon (see HeaderScan); a header block goes on from there. */
  #resync(buf: Buffer, pos: number): number {
    const end = this.#scan.find(buf, pos, this.#base);
    if (end === -1) return buf.length;
    this.#state = State.Header;
    this.#frameOffset = this.#scan.start;
    this.#head.append(NAME_AND_COLON);
    this.#lineHasContent = true;
    return end;
  }

  #readBody(buf: Buffer, pos: number, sink: DecodeSink): number {
    const take = Math.min(this.#remaining, buf.length - pos);
    if (take === this.#bodyLength) {
      // The whole body is in this chunk: decode it in place.
      this.#remaining = 0;
      return this.#finishBody(buf, pos, pos + take, sink, this.#base + pos + take) ? pos + take : -1;
    }
    if (this.#body.length === 0) this.#body.reserve(this.#bodyLength);
    this.#body.append(buf, pos, pos + take);
    this.#remaining -= take;
    if (this.#remaining > 0) return pos + take;
    const body = this.#body.bytes();
    const ok = this.#finishBody(body, 0, body.length, sink, this.#base + pos + take, this.#body);
    this.#body.clear();
    return ok ? pos + take : -1;
  }

  /**
   * A complete body in `buf[start, end)`; `next` is the stream offset just past it. `held`, when `buf` is its
   * bytes, is cleared once the body is text, so that the bytes are let go before the JSON is parsed.
   */
  #finishBody(buf: Buffer, start: number, end: number, sink: DecodeSink, next: number, held?: ByteAccumulator): boolean {
    const at = this.#position();
    this.#nextFrame(next);
    this.#state = State.Header;
    const large = end - start >= LARGE_FRAME && sink.textUnused === true ? parseLarge(buf.subarray(start, end)) : undefined;
    if (large !== undefined) {
      const error = this.#problem(large.msg, large.skeleton, at, buf.subarray(start, end));
      held?.clear();
      return error === undefined ? this.#deliver(large.msg, '', at, sink) : sink.invalid(error);
    }
    const text = decodeUtf8(buf, start, end);
    if (text === undefined) return sink.invalid(new FrameError('INVALID_UTF8', 'body is not valid UTF-8', at, preview(buf.subarray(start, end))));
    held?.clear();
    const msg = tryParse(text);
    const error = this.#problem(msg, text, at, text);
    return error === undefined ? this.#deliver(msg, text, at, sink) : sink.invalid(error);
  }

  /** What is wrong with the body that parsed to `msg` (its text, or a skeleton as long), or undefined. */
  #problem(msg: unknown, text: string, at: FrameErrorPosition, head: string | Uint8Array): FrameError | undefined {
    if (msg !== NOT_JSON && msg !== null && !mayBeTooDeep(text, this.#maxDepth)) return undefined;
    const problem = problemOf(msg, text, this.#maxDepth);
    if (problem === undefined) return undefined;
    const what = problem.code === 'INVALID_JSON' ? `body ${problem.reason}` : problem.reason;
    return new FrameError(problem.code, what, at, preview(head));
  }

  #deliver(msg: unknown, text: string, at: FrameErrorPosition, sink: DecodeSink): boolean {
    this.#lastIndex = at.index!;
    this.#lastOffset = at.offset!;
    sink.message(msg, text);
    return true;
  }

  /** The frame is over; the next one starts at stream offset `at`. */
  #nextFrame(at: number): void {
    this.#state = State.Header;
    this.#index++;
    this.#frameOffset = at;
  }
}

/** Content-Length framing, as LSP and some MCP tools use it. */
export const contentLengthFraming: Framing = {
  name: 'content-length',
  createDecoder: (limits) => new ContentLengthDecoder(limits),
  createEncoder: () => ({ encode: frameContentLength }),
};
