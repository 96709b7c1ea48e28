// The pieces SseDecoder (sse.ts) reads with: the data of the event being read and the size the limit counts, the
// line that spans chunks, and a region of decoded lines with its byte offsets worked out only when asked for.
import { ByteAccumulator } from './accumulator.js';
import type { LargeParse } from './large.js';

/** `buf[start, end)` holds exactly the ASCII `word`, compared as bytes. */
export function isWord(buf: Buffer, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false;
  for (let i = 0; i < word.length; i++) if (buf[start + i] !== word.charCodeAt(i)) return false;
  return true;
}

/**
 * The data lines of the event being read. Its size as bytes counts each line's bytes and one for its LF, except
 * for the lines the fast path added as UTF-16 units: at most 3 bytes each, so that the limit needs no measuring
 * until 3 times the units could pass it (then `measure()` measures them, and the rest of the event is measured).
 */
export class EventData {
  lines: string[] = [];
  /**
   * The event's one data line, parsed from its bytes (see parseLarge) when it was large, a message, and its blank
   * line came with it; `lines` then holds '' for it.
   */
  parsed: LargeParse | undefined;
  #bytes = 0;
  #units = 0;
  #measured = false;

  /** What the lines hold, as bytes and units: for bufferedBytes. */
  get held(): number {
    return this.#bytes + this.#units;
  }

  /** A line decoded as text (`ascii`: one byte per unit); returns the event's size in bytes, at most. */
  addText(value: string, ascii: boolean): number {
    this.lines.push(value);
    if (ascii) this.#bytes += value.length + 1;
    else if (this.#measured) this.#bytes += Buffer.byteLength(value) + 1;
    else this.#units += value.length + 1;
    return this.#bytes + 3 * this.#units - 1;
  }

  /** The event's size in bytes, the lines counted as units measured first (and every line from now on). */
  measure(): number {
    if (this.#units > 0) {
      this.#bytes = Buffer.byteLength(this.lines.join('\n')) + 1;
      this.#units = 0;
      this.#measured = true;
    }
    return this.#bytes - 1;
  }

  /** A line of `bytes` bytes to come (added with `lines.push` once decoded): the event's size with it. */
  reserve(bytes: number): number {
    this.measure();
    this.#bytes += bytes + 1;
    return this.#bytes - 1;
  }

  /** The event's one line, parsed from its `bytes` bytes. */
  addParsed(parsed: LargeParse, bytes: number): void {
    this.parsed = parsed;
    this.lines.push('');
    this.#bytes += bytes + 1;
  }

  /** The lines joined with LF, as the event's data. */
  text(): string {
    return this.lines.length === 1 ? this.lines[0]! : this.lines.join('\n');
  }

  reset(): void {
    this.lines = [];
    this.parsed = undefined;
    this.#bytes = 0;
    this.#units = 0;
    this.#measured = false;
  }
}

/**
 * A line that spans chunks: its bytes, or, once it shows itself a data line, its value's bytes only (a message's
 * bytes are held, not the framing's, so that an event's data of a given size takes a buffer of that size).
 */
export class HeldLine {
  readonly bytes: ByteAccumulator;
  /** The line is over the limit: its bytes are dropped up to its end. */
  tooLong = false;
  /** The bytes held are a data line's value, without its `data: `. */
  value = false;

  constructor(cap: number) {
    this.bytes = new ByteAccumulator(cap);
  }

  get length(): number {
    return this.bytes.length;
  }

  /** Nothing is held (a line's dropping, `tooLong`, is left as it is). */
  clear(): void {
    this.bytes.clear();
    this.value = false;
  }

  /**
   * Where the bytes of `buf[start, end)` that the line holds start: past `data:` and its blank once the line
   * shows itself a data line, however it is split. At least one byte of the value is held, so that the line is
   * known to be pending.
   */
  valueStart(buf: Buffer, start: number, end: number): number {
    if (!this.value && this.bytes.length > 0 && this.bytes.length <= 6) start = this.#heldToValue(buf, start, end);
    if (this.bytes.length === 0 && end - start > 5 && isWord(buf, start, start + 5, 'data:')) {
      const value = buf[start + 5] === 0x20 ? start + 6 : start + 5;
      if (value < end) {
        this.value = true;
        start = value;
      }
    }
    return start;
  }

  /** A line begun in an earlier chunk whose first bytes, with these, show a data field: only its value is kept. */
  #heldToValue(buf: Buffer, start: number, end: number): number {
    const held = this.bytes.length;
    const head = Buffer.concat([this.bytes.bytes(), buf.subarray(start, Math.min(end, start + 7))]);
    if (head.length <= 5 || !isWord(head, 0, 5, 'data:')) return start;
    const value = head[5] === 0x20 ? 6 : 5;
    if (value >= head.length) return start;
    this.value = true;
    if (value >= held) {
      this.bytes.clear();
      return start + (value - held);
    }
    const rest = Buffer.from(this.bytes.bytes().subarray(value));
    this.bytes.clear();
    this.bytes.append(rest, 0, rest.length);
    return start;
  }
}

/** The fast path's decoded lines, and a known point (a character and its byte offset) to measure from. */
export class Region {
  /** One byte per character: offsets need no measuring. */
  readonly ascii: boolean;
  #char = 0;
  #byte: number;

  constructor(
    readonly text: string,
    readonly byteStart: number,
    readonly byteEnd: number,
  ) {
    this.ascii = text.length === byteEnd - byteStart;
    this.#byte = byteStart;
  }

  /** The byte offset in the stream of character `char`, measured from the nearer known point. */
  byteAt(char: number): number {
    if (this.ascii) return this.byteStart + char;
    if (char < this.#char || this.text.length - char < char - this.#char) return this.byteEnd - Buffer.byteLength(this.text.slice(char));
    this.#byte += Buffer.byteLength(this.text.slice(this.#char, char));
    this.#char = char;
    return this.#byte;
  }
}
