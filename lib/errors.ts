/*
 * FrameError, the one error type for bad input and unframeable messages, and the redacted previews it carries
 * (made in redaction.ts, re-exported here for the modules that have always taken them from here).
 */
export {
  isSecretKey,
  PREVIEW_CHARS,
  preview,
  printable,
  printableJson,
  REASON_CHARS,
  reasonText,
  redact,
  redactMessage,
  safeLine,
} from './redaction.js';

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
  offset?: number | undefined;
  /** 1-based line number of the frame's first line, for line-based framings. */
  line?: number | undefined;
  /** 1-based number of the frame in the stream, for framings that count frames rather than lines. */
  index?: number | undefined;
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

/**
 * The error for an optional peer package a feature needs and cannot find (`import()` failed for `pkg`): says the
 * feature, the package and how to install it, with code MISSING_PEER. Any other failure (`cause` names another
 * module, or the package is there but broken) is given back as it is.
 */
export function missingPeer(feature: string, pkg: string, cause: unknown): unknown {
  const err = cause as NodeJS.ErrnoException;
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes(pkg)) return cause;
  return Object.assign(new Error(`${feature} with the ${pkg} package, which is not installed (npm install ${pkg})`, { cause }), {
    code: 'MISSING_PEER',
  });
}

/** A skipped frame as a log line says it: its code, its message and, when there is one, its redacted preview. */
export function frameProblem(err: FrameError): string {
  return `${err.code}: ${err.message}${err.preview === '' ? '' : `: ${err.preview}`}`;
}
