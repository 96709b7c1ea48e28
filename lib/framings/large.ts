/*
 * Large frames whose bulk is a few long string literals: an image, audio or a file carried as base64 or plain
 * text, as nearly every MCP message of megabytes is. Decoding such a frame whole and handing the text to
 * JSON.parse makes every byte twice, once as the text and once as the literal's value, and the text is garbage
 * as soon as the parse is done. Here each long literal's value is made straight from its bytes, once, and the
 * rest of the frame (its skeleton, a few hundred bytes) is parsed with a short marker where each literal stood.
 * The result is the value JSON.parse gives for the whole text; anything this way does not take (an escape or a
 * control character in a long literal, bytes that are not UTF-8, a skeleton that is not short, a marker that
 * the frame itself holds) returns undefined, and the caller decodes and parses as usual, which also reports
 * whatever is wrong.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { decodeUtf8 } from './bytes.js';

/** Frames of at least this many bytes are tried this way; smaller ones parse faster than they are scanned. */
export const LARGE_FRAME = 1024 * 1024;
/** A literal at least this long is made from its bytes; shorter ones stay in the skeleton. */
const LONG_LITERAL = 64 * 1024;
/** The most bytes the skeleton may have: past it the frame is not of this shape, and the scan stops. */
const SKELETON_MAX = 64 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Where each long literal stood in the skeleton: a NUL and a number, which no frame of this shape holds twice. */
export const LITERAL_MARK = '\u0000mcp-frame literal ';

/** A frame parsed this way: its value, and its skeleton (the text's length bound for the nesting check). */
export interface LargeParse {
  msg: unknown;
  skeleton: string;
}

/** `bytes` parsed as JSON.parse would parse their UTF-8 text, or undefined where this way does not apply. */
export function parseLarge(bytes: Buffer): LargeParse | undefined {
  const parts: string[] = [];
  const literals: string[] = [];
  let skeletonBytes = 0;
  // The skeleton's current stretch starts at `from`; the next string literal is looked for from `pos`.
  let from = 0;
  let pos = 0;
  for (;;) {
    const open = bytes.indexOf(QUOTE, pos);
    if (open === -1) break;
    const close = closingQuote(bytes, open);
    if (close === -1) return undefined;
    pos = close + 1;
    if (close - open - 1 < LONG_LITERAL) {
      if (skeletonBytes + (pos - from) > SKELETON_MAX) return undefined;
      continue;
    }
    if (skeletonBytes + (open - from) > SKELETON_MAX) return undefined;
    const value = literalValue(bytes.subarray(open + 1, close));
    if (value === undefined) return undefined;
    const stretch = decodeUtf8(bytes, from, open);
    if (stretch === undefined) return undefined;
    skeletonBytes += open - from;
    parts.push(stretch, JSON.stringify(LITERAL_MARK + literals.length));
    literals.push(value);
    from = pos;
  }
  if (literals.length === 0 || skeletonBytes + (bytes.length - from) > SKELETON_MAX) return undefined;
  const last = decodeUtf8(bytes, from, bytes.length);
  if (last === undefined) return undefined;
  parts.push(last);
  const skeleton = parts.join('');
  const placed = new Array<boolean>(literals.length).fill(false);
  let clash = false;
  let msg: unknown;
  try {
    msg = JSON.parse(skeleton, (_key, value: unknown) => {
      if (typeof value !== 'string' || !value.startsWith(LITERAL_MARK)) return value;
      const i = Number(value.slice(LITERAL_MARK.length));
      // A string of the frame's own that reads like a marker: the literals cannot be told from it.
      if (!Number.isInteger(i) || i >= literals.length || placed[i] || String(i) !== value.slice(LITERAL_MARK.length)) {
        clash = true;
        return value;
      }
      placed[i] = true;
      return literals[i];
    });
  } catch {
    return undefined;
  }
  // A literal that stood as a key, not a value, was never placed; nor is a frame with a marker of its own taken.
  if (clash || placed.includes(false)) return undefined;
  return { msg, skeleton };
}

/** The quote that ends the string literal opened at `open`, or -1 when there is none. */
function closingQuote(bytes: Buffer, open: number): number {
  let at = open + 1;
  for (;;) {
    const quote = bytes.indexOf(QUOTE, at);
    if (quote === -1) return -1;
    // Escaped when an odd number of backslashes stand before it (`\"` is escaped, `\\"` is not).
    let slashes = 0;
    while (quote - 1 - slashes > open && bytes[quote - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * The value of a literal whose content is `content`, when it holds no escape and no control character (then
 * its value is its text), and its bytes are UTF-8; else undefined.
 */
function literalValue(content: Buffer): string | undefined {
  if (content.indexOf(BACKSLASH) !== -1 || hasControl(content)) return undefined;
  // ASCII goes through latin1, a copy; other text through the UTF-8 decode, once its bytes are known to be UTF-8.
  if (isAscii(content)) return content.toString('latin1');
  return isUtf8(content) ? content.toString('utf8') : undefined;
}

/** The high bit of each byte of a 32-bit word, as an int32. */
const HIGH_BITS = 0x80808080 | 0;
/** 0x20 in each byte of a 32-bit word. */
const SPACES = 0x20202020;

/** How much of a resizable buffer's bytes hasControl copies into plain memory at a time. */
const SCAN_BLOCK = 64 * 1024;
let scanBlock: Buffer | undefined;

/** `bytes` holds a byte under 0x20 (a control character, which JSON does not allow unescaped in a string). */
export function hasControl(bytes: Buffer): boolean {
  if (!(bytes.buffer as { resizable?: boolean }).resizable) return hasControlPlain(bytes);
  // A frame past 16 MiB is held in a resizable ArrayBuffer (accumulator.ts), whose views the engine reads on a
  // slower path: this loop took twice as long over one. A block at a time, its bytes are copied into plain
  // memory (a native copy, in cache) and read there.
  scanBlock ??= Buffer.allocUnsafeSlow(SCAN_BLOCK);
  for (let at = 0; at < bytes.length; at += SCAN_BLOCK) {
    const end = Math.min(at + SCAN_BLOCK, bytes.length);
    scanBlock.set(bytes.subarray(at, end));
    if (hasControlPlain(scanBlock.subarray(0, end - at))) return true;
  }
  return false;
}

function hasControlPlain(bytes: Buffer): boolean {
  const end = bytes.length;
  // Bytes one by one up to a 4-byte boundary, then four words at a time, then the last words and bytes.
  const head = (4 - (bytes.byteOffset % 4)) % 4;
  if (end < head + 16) return bytes.some((b) => b < 0x20);
  for (let i = 0; i < head; i++) if (bytes[i]! < 0x20) return true;
  // Int32Array, not Uint32Array: the words stay 32-bit integers in the engine, where unsigned ones past 2^31
  // become doubles (the loop took 23 ms for 32 MiB that way, 15 ms this way).
  const words = new Int32Array(bytes.buffer, bytes.byteOffset + head, (end - head) >>> 2);
  const n = words.length;
  // Some byte of `x` is under 0x20 exactly when (x - SPACES) & ~x has a high bit set (a byte of 0x80 or more
  // never sets its own); OR-ing four words' terms asks that of all four at once.
  let k = 0;
  for (; k + 4 <= n; k += 4) {
    const a = words[k]!;
    const b = words[k + 1]!;
    const c = words[k + 2]!;
    const d = words[k + 3]!;
    const any = ((a - SPACES) & ~a) | ((b - SPACES) & ~b) | ((c - SPACES) & ~c) | ((d - SPACES) & ~d);
    if ((any & HIGH_BITS) !== 0) return true;
  }
  for (; k < n; k++) {
    const x = words[k]!;
    if (((x - SPACES) & ~x & HIGH_BITS) !== 0) return true;
  }
  for (let i = head + n * 4; i < end; i++) if (bytes[i]! < 0x20) return true;
  return false;
}
