/*
 * Content-Length header blocks read, on any runtime (no node: module, no Node global): the Node decoder
 * (content-length.ts) and mcp-frame/web's take a block by the same rules.
 */

/** A header block longer than this is INVALID_HEADER. */
export const MAX_HEADER_BYTES = 8 * 1024;

/** Headers as text, one line each; the length when it is a plain decimal number, otherwise why not. */
export function contentLength(block: string): { length: number } | { problem: string } {
  let length: number | undefined;
  for (const raw of block.split('\n')) {
    // A line's CRs at its end are part of its line end: a line of only CRs is blank.
    let end = raw.length;
    while (end > 0 && raw.charCodeAt(end - 1) === 0x0d) end--;
    const line = end === raw.length ? raw : raw.slice(0, end);
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return { problem: `a header line without a name and colon` };
    if (line.slice(0, colon).trim().toLowerCase() !== 'content-length') continue;
    const value = line.slice(colon + 1).trim();
    // Only a plain decimal: parseInt would take "12x" as 12 and "-1" or "1e3" would slip through Number().
    if (!/^[0-9]{1,15}$/.test(value)) return { problem: `Content-Length is not a plain decimal number` };
    const n = Number(value);
    if (length !== undefined && length !== n) return { problem: 'two different Content-Length headers' };
    length = n;
  }
  return length === undefined ? { problem: 'no Content-Length header' } : { length };
}

const HEADER_NAME = new TextEncoder().encode('content-length');
/** What a header block resumed by a resync starts with: the name found, and its colon. */
export const NAME_AND_COLON = new TextEncoder().encode('content-length:');

/**
 * After a bad header block the length is unknown: a resync drops bytes up to the next `Content-Length` name (any
 * case) followed by optional blanks and a colon, and a header block goes on from there. The name is looked for
 * anywhere, not only at a line start, because a body has no line end after it: the next frame's header follows
 * its last byte directly. The match may span chunks.
 */
export class HeaderScan {
  /** How much of the name has matched. */
  #match = 0;
  /** The stream offset where the match started: the resumed frame's. */
  start = 0;

  reset(): void {
    this.#match = 0;
  }

  /** Scans `buf` from `pos` (`base`: the stream offset of `buf[0]`): the index just past the colon, or -1 when it is not in `buf`. */
  find(buf: Uint8Array, pos: number, base: number): number {
    for (let i = pos; i < buf.length; i++) {
      const b = buf[i]!;
      if (this.#match === HEADER_NAME.length) {
        if (b === 0x20 || b === 0x09) continue;
        if (b === 0x3a) return i + 1;
        this.#match = 0;
      }
      const lower = b >= 0x41 && b <= 0x5a ? b + 0x20 : b;
      if (lower === HEADER_NAME[this.#match]) {
        if (this.#match === 0) this.start = base + i;
        this.#match++;
      } else if (lower === HEADER_NAME[0]) {
        this.start = base + i;
        this.#match = 1;
      } else this.#match = 0;
    }
    return -1;
  }
}
