/*
 * JSON for the framings: compact serialisation, and the parse of one frame's text with the checks every
 * framing makes after it (null, nesting depth).
 */
import { FrameError } from '../errors.js';

/** Compact JSON for one message, or FrameError(NOT_SERIALIZABLE) for a value with no JSON text. */
export function serialize(msg: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(msg);
  } catch (err) {
    // Cycles and BigInt land here; the engine's message names the problem, never the data.
    throw new FrameError('NOT_SERIALIZABLE', `cannot frame message: ${(err as Error).message}`);
  }
  if (json === undefined) {
    throw new FrameError('NOT_SERIALIZABLE', `cannot frame message: a ${typeof msg} has no JSON form`);
  }
  return json;
}

/** Why a frame holding JSON `null` is rejected, in every framing. */
export const NULL_MESSAGE = 'null is not a message (an object stream cannot carry it)';

/**
 * How deeply a message may nest objects and arrays by default. JSON.parse itself takes any depth, but
 * JSON.stringify, structured clone and every recursive walk in a host overflow the stack somewhere past a few
 * thousand levels (measured here: fine at 1,000, RangeError at 5,000), and no real MCP message comes near.
 */
export const DEFAULT_MAX_DEPTH = 1000;

/** True when `value` nests objects and arrays more than `max` levels deep (`{}` is one level). Not recursive. */
export function deeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: object[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const depth = depths.pop()!;
    if (depth > max) return true;
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        stack.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** JSON's own whitespace: space, tab, LF and CR, and nothing else (not U+00A0, U+2028 or a BOM). */
export function isJsonBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return true;
}

export type ParsedFrame = { ok: true; msg: unknown } | { ok: false; code: 'INVALID_JSON' | 'INVALID_MESSAGE'; reason: string };

/**
 * Parses the JSON text of one frame for a decoder: the message, or what to report. `null` is INVALID_MESSAGE,
 * since an object-mode stream cannot carry it, and so is a message nested deeper than `maxDepth`. The engine's
 * SyntaxError quotes the input, secrets and all, so it is not passed on.
 */
export function parseBody(text: string, maxDepth: number): ParsedFrame {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { ok: false, code: 'INVALID_JSON', reason: 'is not valid JSON' };
  }
  return checkParsed(msg, text.length, maxDepth);
}

/** The checks after a successful parse of `length` characters of JSON text. */
export function checkParsed(msg: unknown, length: number, maxDepth: number): ParsedFrame {
  if (msg === null) return { ok: false, code: 'INVALID_MESSAGE', reason: NULL_MESSAGE };
  // Each level takes two characters at least, so only a text that long can be too deep.
  if (length > 2 * maxDepth && deeperThan(msg, maxDepth)) {
    return { ok: false, code: 'INVALID_MESSAGE', reason: `message nests deeper than maxDepth (${maxDepth})` };
  }
  return { ok: true, msg };
}
