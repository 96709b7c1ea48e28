/*
 * Content-Length framing on any runtime: the decoder of mcp-frame/web, written on Uint8Array and TextDecoder
 * alone (no node: module, no Buffer), to the same rules as the Node decoder (framings/content-length.ts) and held
 * to them by the same fixtures and a differential test: a UTF-8 BOM at the start skipped, blank lines between
 * frames skipped, a header block read to its blank line (at most MAX_HEADER_BYTES, its Content-Length a plain
 * decimal, by the shared framings/headers.ts), the body taken by its length; a bad header block INVALID_HEADER,
 * after which the decoder resyncs at the next `Content-Length:` name; a body past maxMessageBytes
 * MESSAGE_TOO_LARGE and skipped by its length; a body that is not UTF-8, not JSON or not a message its own code;
 * input that ends inside a frame TRUNCATED; every error with the frame's number and the byte offset where it
 * starts.
 *
 * The Node decoder reads a usual header block straight from the bytes and parses large bodies from them, for
 * speed measured on Node; this one reads headers a byte at a time (they are short) and keeps an unfinished
 * body's pieces as they came, joined once when its last byte comes.
 */
import { FrameError, type FrameErrorPosition, preview } from '../errors.js';
import type { DecodeSink, DecoderLimits, FrameDecoderCore } from '../framings/codec.js';
import { contentLength, HeaderScan, MAX_HEADER_BYTES, NAME_AND_COLON } from '../framings/headers.js';
import { DEFAULT_MAX_DEPTH, mayBeTooDeep, NOT_JSON, problemOf, serialize, tryParse } from '../framings/json.js';
import { SizeLimit } from '../framings/limit.js';
import { joined } from './pieces.js';

const LF = 0x0a;
const CR = 0x0d;
const BOM = [0xef, 0xbb, 0xbf];
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const TO_BYTES = new TextEncoder();

/** Between frames or in a header block; in a body; dropping a body by its length; after a bad header block. */
const HEADER = 0;
const BODY = 1;
const SKIP_BODY = 2;
const RESYNC = 3;

/** `Content-Length: <UTF-8 byte length>\r\n\r\n<compact JSON>`, as bytes. */
export function frameContentLengthBytes(msg: unknown): Uint8Array {
  const body = TO_BYTES.encode(serialize(msg));
  const head = TO_BYTES.encode(`Content-Length: ${body.length}\r\n\r\n`);
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

export class WebContentLengthDecoder implements FrameDecoderCore {
  readonly #limit: SizeLimit;
  readonly #maxDepth: number;
  /** How many bytes of a BOM the stream has started with; -1 once past the start. */
  #bom = 0;
  #state = HEADER;
  /** The header block so far (at most MAX_HEADER_BYTES). */
  readonly #head = new Uint8Array(MAX_HEADER_BYTES);
  #headLength = 0;
  /** In a header block: the current line has had a byte other than CR. */
  #lineHasContent = false;
  /** The pieces of an unfinished body, as they came. */
  #pieces: Uint8Array[] = [];
  #bodyLength = 0;
  /** Body bytes still to come (BODY, SKIP_BODY). */
  #remaining = 0;
  /** RESYNC: the scan for the next header's name. */
  readonly #scan = new HeaderScan();
  /** Stream offset of the next byte; of the first byte of the chunk being read; where the current frame started. */
  #offset = 0;
  #base = 0;
  #frameOffset = 0;
  /** 1-based number of the current frame. */
  #index = 1;
  /** Where the last message delivered started (none yet: frame 0 at offset 0, as the Node decoder says). */
  #last: FrameErrorPosition = { index: 0, offset: 0 };

  constructor({ maxMessageBytes, maxDepth = DEFAULT_MAX_DEPTH }: DecoderLimits) {
    this.#limit = new SizeLimit(maxMessageBytes, 0);
    this.#maxDepth = maxDepth;
  }

  get partialBytes(): number {
    if (this.#state === HEADER) return this.#headLength;
    if (this.#state === RESYNC) return 0;
    return this.#offset - this.#frameOffset;
  }

  get bufferedBytes(): number {
    return this.#headLength + this.#pieces.reduce((sum, piece) => sum + piece.length, 0);
  }

  lastPosition(): FrameErrorPosition {
    return { ...this.#last };
  }

  abandonPartial(): FrameErrorPosition | undefined {
    const at = this.#position();
    if (this.#state === HEADER && this.#headLength > 0) {
      this.#startResync();
      return at;
    }
    if (this.#state === BODY) {
      this.#pieces = [];
      this.#state = SKIP_BODY;
      return at;
    }
    return undefined;
  }

  write(chunk: Uint8Array, sink: DecodeSink): boolean {
    this.#base = this.#offset;
    this.#offset += chunk.length;
    let pos = this.#bom >= 0 ? this.#skipBom(chunk) : 0;
    while (pos < chunk.length) {
      if (this.#state === HEADER) pos = this.#readHeader(chunk, pos, sink);
      else if (this.#state === BODY) pos = this.#readBody(chunk, pos, sink);
      else if (this.#state === SKIP_BODY) {
        const take = Math.min(this.#remaining, chunk.length - pos);
        this.#remaining -= take;
        pos += take;
        if (this.#remaining === 0) this.#nextFrame(this.#base + pos);
      } else pos = this.#resync(chunk, pos);
      if (pos < 0) return false;
    }
    return true;
  }

  end(sink: DecodeSink): void {
    if (this.#bom > 0) for (let i = 0; i < this.#bom; i++) this.#head[this.#headLength++] = BOM[i]!;
    this.#bom = -1;
    if (this.#state === HEADER && this.#headLength > 0) {
      sink.invalid(new FrameError('TRUNCATED', 'input ended inside a header block', this.#position(), preview(this.#headBytes())));
    } else if (this.#state === BODY) {
      const held = joined(this.#pieces);
      sink.invalid(new FrameError('TRUNCATED', `input ended inside a body of ${this.#bodyLength} bytes`, this.#position(), preview(held)));
    }
    this.#headLength = 0;
    this.#pieces = [];
    this.#state = HEADER;
  }

  /** A BOM at the very start, in however many chunks; bytes that began like one but were not go to the header. */
  #skipBom(buf: Uint8Array): number {
    let pos = 0;
    while (pos < buf.length && this.#bom < 3 && buf[pos] === BOM[this.#bom]) {
      this.#bom++;
      pos++;
    }
    if (this.#bom === 3) {
      this.#bom = -1;
      this.#frameOffset = 3;
    } else if (pos < buf.length) {
      for (let i = 0; i < this.#bom; i++) this.#head[this.#headLength++] = BOM[i]!;
      if (this.#bom > 0) this.#lineHasContent = true;
      this.#bom = -1;
    }
    return pos;
  }

  #position(): FrameErrorPosition {
    return { index: this.#index, offset: this.#frameOffset };
  }

  #headBytes(): Uint8Array {
    return this.#head.subarray(0, this.#headLength);
  }

  /** Header bytes from `pos`, to the blank line that ends the block; where it stopped, or -1 when the sink said stop. */
  #readHeader(buf: Uint8Array, pos: number, sink: DecodeSink): number {
    for (let i = pos; i < buf.length; i++) {
      const b = buf[i]!;
      if (this.#headLength === 0 && (b === CR || b === LF)) {
        // Blank lines between frames are tolerated.
        this.#frameOffset = this.#base + i + 1;
        continue;
      }
      if (this.#headLength >= MAX_HEADER_BYTES) return this.#badHeader(`header block over ${MAX_HEADER_BYTES} bytes`, sink) ? i : -1;
      this.#head[this.#headLength++] = b;
      if (b === LF) {
        if (!this.#lineHasContent) return this.#headersDone(sink, this.#base + i + 1) ? i + 1 : -1;
        this.#lineHasContent = false;
      } else if (b !== CR) this.#lineHasContent = true;
    }
    return buf.length;
  }

  /** The header block is complete; `end` is the stream offset just past it. */
  #headersDone(sink: DecodeSink, end: number): boolean {
    let block = '';
    for (let i = 0; i < this.#headLength; i += 4096) block += String.fromCharCode(...this.#head.subarray(i, Math.min(i + 4096, this.#headLength)));
    const parsed = contentLength(block);
    if ('problem' in parsed) return this.#badHeader(parsed.problem, sink);
    this.#headLength = 0;
    this.#lineHasContent = false;
    this.#bodyLength = this.#remaining = parsed.length;
    if (this.#limit.over(parsed.length)) {
      this.#state = SKIP_BODY;
      return sink.invalid(this.#limit.error(`Content-Length ${parsed.length}`, this.#position(), ''));
    }
    this.#state = BODY;
    return parsed.length === 0 ? this.#finishBody(new Uint8Array(0), sink, end) : true;
  }

  #badHeader(problem: string, sink: DecodeSink): boolean {
    const error = new FrameError('INVALID_HEADER', `bad header block: ${problem}`, this.#position(), preview(this.#headBytes()));
    this.#startResync();
    return sink.invalid(error);
  }

  #startResync(): void {
    this.#headLength = 0;
    this.#lineHasContent = false;
    this.#state = RESYNC;
    this.#scan.reset();
    this.#index++;
  }

  /** Drops bytes up to the next `Content-Length` name and its colon (see HeaderScan); a header block goes on from there. */
  #resync(buf: Uint8Array, pos: number): number {
    const end = this.#scan.find(buf, pos, this.#base);
    if (end === -1) return buf.length;
    this.#state = HEADER;
    this.#frameOffset = this.#scan.start;
    this.#head.set(NAME_AND_COLON);
    this.#headLength = NAME_AND_COLON.length;
    this.#lineHasContent = true;
    return end;
  }

  #readBody(buf: Uint8Array, pos: number, sink: DecodeSink): number {
    const take = Math.min(this.#remaining, buf.length - pos);
    this.#remaining -= take;
    if (this.#remaining > 0) {
      // A piece of a caller's chunk is copied: the caller may reuse its buffer once write() returns.
      this.#pieces.push(buf.slice(pos, pos + take));
      return pos + take;
    }
    this.#pieces.push(buf.subarray(pos, pos + take));
    const body = joined(this.#pieces);
    this.#pieces = [];
    return this.#finishBody(body, sink, this.#base + pos + take) ? pos + take : -1;
  }

  /** A complete body; `next` is the stream offset just past it. */
  #finishBody(body: Uint8Array, sink: DecodeSink, next: number): boolean {
    const at = this.#position();
    this.#nextFrame(next);
    let text: string;
    try {
      text = UTF8.decode(body);
    } catch {
      return sink.invalid(new FrameError('INVALID_UTF8', 'body is not valid UTF-8', at, preview(body)));
    }
    const msg = tryParse(text);
    if (msg === NOT_JSON || msg === null || mayBeTooDeep(text, this.#maxDepth)) {
      const problem = problemOf(msg, text, this.#maxDepth);
      if (problem !== undefined) {
        const what = problem.code === 'INVALID_JSON' ? `body ${problem.reason}` : problem.reason;
        return sink.invalid(new FrameError(problem.code, what, at, preview(text)));
      }
    }
    this.#last = at;
    sink.message(msg, text);
    return true;
  }

  /** The frame is over; the next one starts at stream offset `at`. */
  #nextFrame(at: number): void {
    this.#state = HEADER;
    this.#index++;
    this.#frameOffset = at;
  }
}
