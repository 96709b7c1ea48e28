/*
 * What the three decoders share: byte constants, the BOM, line ends, the one size rule and the error it gives.
 * Each framing file keeps only what differs between framings.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { FrameError, preview, type FrameErrorPosition } from '../errors.js';

export const LF = 0x0a;
export const CR = 0x0d;
export const COLON = 0x3a;

/** The chunk as a Buffer over the same memory (no copy). */
export function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
}

const UTF8 = new TextDecoder();

/**
 * `buf[start, end)` as text, or undefined when the bytes are not UTF-8. The decode replaces bad bytes with
 * U+FFFD, so only a text holding U+FFFD has its bytes checked: in the usual one-byte (ASCII) string the search
 * answers at once, and valid text costs no second pass.
 *
 * Non-ASCII ranges of 1 KiB to 1 MiB (a chunk's complete lines) go through a TextDecoder in streaming mode,
 * flushed after each call: there it decodes MCP messages with non-ASCII text in about half the time of
 * Buffer#toString or of a non-streaming decode (56 ms against 104-132 ms for 28.8 MiB in 64 KiB ranges, Node
 * 20). Elsewhere toString is faster: ASCII it copies (6x faster at 64 KiB), tiny ranges cost less than the
 * call, and one 32 MiB range took it 130 ms against 530 ms. The flush returns what a range cut off inside a
 * character left pending, which makes it invalid. The decoder drops a BOM that starts a stream, so a range
 * that starts with one goes to toString, which keeps it.
 */
export function decodeUtf8(buf: Buffer, start: number, end: number): string | undefined {
  const size = end - start;
  let text: string;
  if (size < 1024 || size > 1024 * 1024 || startsWithBom(buf, start, end) || isAscii(buf.subarray(start, end))) {
    text = buf.toString('utf8', start, end);
  } else {
    text = UTF8.decode(buf.subarray(start, end), { stream: true });
    if (UTF8.decode() !== '') return undefined;
  }
  return text.includes('\uFFFD') && !isUtf8(buf.subarray(start, end)) ? undefined : text;
}

/** `buf[start, end)` starts with the UTF-8 byte order mark. */
export function startsWithBom(buf: Uint8Array, start: number, end: number): boolean {
  return end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf;
}

/** Where a line's content ends: before its CR when it ends in CR (the CR of a CRLF whose LF was cut off). */
export function withoutCR(buf: Uint8Array, start: number, end: number): number {
  return end > start && buf[end - 1] === CR ? end - 1 : end;
}

/**
 * The size rule, the same for every framing: a message's body may hold `max` bytes; one byte more is
 * MESSAGE_TOO_LARGE. While a frame is still arriving its bytes also hold framing that is not message (a BOM,
 * a CR, a field name), known only when the frame ends; so an unfinished frame is rejected early only once it
 * passes `max + slack`, and the exact check runs when it ends. `slack` is the most framing bytes a framing
 * holds beside a message.
 */
export class SizeLimit {
  constructor(
    readonly max: number,
    readonly slack: number,
  ) {}

  /** Bytes of an unfinished frame (framing included) that can no longer hold a message within the limit. */
  heldTooLong(bytes: number): boolean {
    return bytes > this.max + this.slack;
  }

  /** A complete message body of `bytes` is over the limit. */
  over(bytes: number): boolean {
    return bytes > this.max;
  }

  /** The most bytes a decoder ever holds for one frame. */
  get holdCap(): number {
    return this.max + this.slack;
  }

  error(what: string, position: FrameErrorPosition, head: string | Uint8Array): FrameError {
    return new FrameError('MESSAGE_TOO_LARGE', `${what} is larger than maxMessageBytes (${this.max})`, position, preview(head));
  }
}
