/*
 * What the three decoders share: byte constants, the BOM, line ends, UTF-8 to text (the one size rule and the
 * error it gives are limit.ts's, which runs anywhere). Each framing file keeps only what differs between framings.
 */
import { isAscii, isUtf8, transcode } from 'node:buffer';

export const LF = 0x0a;
export const CR = 0x0d;
export const COLON = 0x3a;

/** The chunk as a Buffer over the same memory (no copy). */
export function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
}

/**
 * Non-ASCII ranges under 1 KiB (a chunk that holds one event or one message, as a server that flushes each
 * writes them) go to UTF-16 through this decoder: on the bench's small MCP messages, one a range, it took 0.5-0.65x
 * Buffer#toString's time (ICU writes UTF-16 at once, where toString's UTF-8 reader reads each range twice), and
 * 1.5-2.7x less at every size from 128 bytes to 64 KiB; transcode, faster from 1 KiB on, costs more than the call
 * below it. Stream mode is that way in; a range is only given to it when it ends in an ASCII byte, so that no
 * partial character is ever held over to the next call. The BOM is kept, as toString keeps it.
 */
const toUtf16 = new TextDecoder('utf-8', { ignoreBOM: true });
const STREAM = { stream: true };

/**
 * `buf[start, end)` as text, or undefined when the bytes are not UTF-8.
 *
 * Non-ASCII ranges of 1 KiB to 1 MiB (a chunk's complete lines) are transcoded to UTF-16, which is then read as
 * a string: in Node 20 that transcode is a SIMD one that throws on bytes that are not UTF-8, and on the bench's
 * 28.8 MiB of MCP messages with non-ASCII text, in 64 KiB ranges, it decoded in 14 ms where a streaming
 * TextDecoder took 54-69 ms and Buffer#toString about 100. Smaller non-ASCII ranges go through toUtf16 (above).
 * ASCII, toString copies, as fast as anything; past 1 MiB the UTF-16 copy doubles what a range holds.
 * toString and toUtf16 replace bad bytes with U+FFFD, so only a text holding U+FFFD has its bytes checked: in the
 * usual one-byte (ASCII) string the search answers at once. Where transcode throws, or a Node built without ICU
 * has none, the range takes the toString way, so that the answer is always the one toString and isUtf8 give.
 */
export function decodeUtf8(buf: Buffer, start: number, end: number): string | undefined {
  const size = end - start;
  if (size <= 1024 * 1024) {
    const range = start === 0 && end === buf.length ? buf : buf.subarray(start, end);
    if (!isAscii(range)) {
      if (size < 1024 && buf[end - 1]! < 0x80) {
        const text = toUtf16.decode(range, STREAM);
        return text.includes('\uFFFD') && !isUtf8(range) ? undefined : text;
      }
      if (size >= 1024 && transcode !== undefined) {
        try {
          return transcode(range, 'utf8', 'utf16le').toString('utf16le');
        } catch {
          // Not UTF-8: the toString way below finds that and says so.
        }
      }
    }
  }
  const text = buf.toString('utf8', start, end);
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
