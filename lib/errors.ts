/*
 * FrameError, the one error type for bad input and unframeable messages, and the redacted previews it carries.
 */

/** What is wrong with a frame. Callers branch on the code, never on the text. */
export type FrameErrorCode =
  /** A frame's bytes are not one JSON value. */
  | 'INVALID_JSON'
  /** A frame is longer than `maxMessageBytes`. */
  | 'MESSAGE_TOO_LARGE'
  /** The input ended inside a frame. */
  | 'TRUNCATED'
  /** A frame parsed but is not a message: JSON `null`, nested past maxDepth, or (with validation) not JSON-RPC 2.0. */
  | 'INVALID_MESSAGE'
  /** A frame's bytes are not valid UTF-8 (MCP messages must be). */
  | 'INVALID_UTF8'
  /** A Content-Length header block is malformed (missing, non-numeric or partly numeric length, over 8 KiB). */
  | 'INVALID_HEADER'
  /** Part of a message sat buffered with no new bytes for longer than partialTimeoutMs. */
  | 'PARTIAL_TIMEOUT'
  /** `frame()` was given a value with no single-line JSON form (undefined, a function, a cycle, a BigInt). */
  | 'NOT_SERIALIZABLE';

export interface FrameErrorPosition {
  /** Byte offset in the stream where the offending frame starts. */
  offset?: number;
  /** 1-based line number of the frame's first line, for line-based framings. */
  line?: number;
  /** 1-based number of the frame in the stream, for framings that count frames rather than lines. */
  index?: number;
}

/**
 * A bad frame, or a message that cannot be framed: a `code` to branch on, where it was (byte offset, line,
 * frame number) and a short redacted preview of it.
 *
 * @example
 * ```ts
 * const decoder = new FrameDecoder({ onInvalid: 'skip' });
 * decoder.on('invalid', (err: FrameError) => {
 *   if (err.code === 'MESSAGE_TOO_LARGE') metrics.oversized++;
 *   console.warn(`${err.code} at line ${err.line}, byte ${err.offset}: ${err.preview}`);
 * });
 * ```
 */
export class FrameError extends Error {
  override readonly name = 'FrameError';
  readonly code: FrameErrorCode;
  readonly offset: number | undefined;
  readonly line: number | undefined;
  readonly index: number | undefined;
  /** A short, redacted preview of the offending input (at most about 80 characters). */
  readonly preview: string;
  /** What is wrong, without the position that `message` adds. */
  readonly reason: string;

  constructor(code: FrameErrorCode, reason: string, position: FrameErrorPosition = {}, preview = '') {
    const where = describePosition(position);
    super(where ? `${reason} (${where})` : reason);
    this.reason = reason;
    this.code = code;
    this.offset = position.offset;
    this.line = position.line;
    this.index = position.index;
    this.preview = preview;
  }
}

function describePosition({ line, offset, index }: FrameErrorPosition): string {
  const parts: string[] = [];
  if (index !== undefined) parts.push(`message ${index}`);
  if (line !== undefined) parts.push(`line ${line}`);
  if (offset !== undefined) parts.push(`byte ${offset}`);
  return parts.join(', ');
}

export const PREVIEW_CHARS = 80;
/**
 * How much of a frame the preview looks at. Redaction runs before the cut, on this much, so a secret that
 * starts inside the first 80 characters is hidden even when its value runs past them.
 */
const PREVIEW_SCAN_BYTES = 4096;

const SECRET_KEY = String.raw`[^"\\]*(?:authorization|token|password|passwd|secret|api[_-]?key|cookie|credential)[^"\\]*`;
/** A JSON member whose key looks secret; the value is a string (possibly cut off) or a bare scalar. */
const SECRET_MEMBER = new RegExp(String.raw`("${SECRET_KEY}"\s*:\s*)(?:"(?:[^"\\]|\\.)*(?:"|\\?$)|[^\s,}\]]+)`, 'gi');
const BEARER = /\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi;

/** Hides the values of keys that look secret (tokens, passwords, API keys, cookies) and bearer credentials. */
export function redact(text: string): string {
  return text.replace(SECRET_MEMBER, '$1"[REDACTED]"').replace(BEARER, '$1 [REDACTED]');
}

/**
 * A short, printable, redacted preview of some input: control characters escaped, at most PREVIEW_CHARS
 * characters, with an ellipsis when cut.
 */
export function preview(input: string | Uint8Array): string {
  let text: string;
  let cut = false;
  if (typeof input === 'string') {
    cut = input.length > PREVIEW_SCAN_BYTES;
    text = cut ? input.slice(0, PREVIEW_SCAN_BYTES) : input;
  } else {
    cut = input.length > PREVIEW_SCAN_BYTES;
    text = Buffer.from(input.buffer, input.byteOffset, Math.min(input.length, PREVIEW_SCAN_BYTES)).toString('utf8');
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes.
  text = redact(text.trim()).replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, escapeControl);
  if (text.length > PREVIEW_CHARS) {
    text = text.slice(0, PREVIEW_CHARS);
    cut = true;
  }
  return cut ? `${text}…` : text;
}

function escapeControl(ch: string): string {
  switch (ch) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    default:
      return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  }
}
