/*
 * JSON for the framings: compact serialisation, and the parse of one frame's text with the checks every
 * framing makes after it (null, nesting depth).
 */
import { FrameError, type FrameErrorPosition, preview } from '../errors.js';

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
const NULL_MESSAGE = 'null is not a message (an object stream cannot carry it)';

/**
 * How deeply a message may nest objects and arrays by default. JSON.parse itself takes any depth, but
 * JSON.stringify, structured clone and every recursive walk in a host overflow the stack somewhere past a few
 * thousand levels (measured here: fine at 1,000, RangeError at 5,000), and no real MCP message comes near.
 */
export const DEFAULT_MAX_DEPTH = 1000;

/** How deep deeperThan recurses; a message that nests deeper (with a larger maxDepth) is walked on with a stack. */
const RECURSION = 1000;

/**
 * True when `value` nests objects and arrays more than `max` levels deep (`{}` is one level). Recursive to
 * RECURSION levels: for a message of many small objects that is 3-5 times faster than a walk with a stack of its
 * own, and a message of megabytes of them is walked in full.
 */
export function deeperThan(value: unknown, max: number): boolean {
  return typeof value === 'object' && value !== null && deeper(value, 1, max);
}

function deeper(node: object, depth: number, max: number): boolean {
  if (depth > max) return true;
  if (depth >= RECURSION) return deeperByStack(node, depth, max);
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (typeof child === 'object' && child !== null && deeper(child, depth + 1, max)) return true;
    }
    return false;
  }
  const keys = Object.keys(node);
  for (let i = 0; i < keys.length; i++) {
    const child: unknown = (node as Record<string, unknown>)[keys[i]!];
    if (typeof child === 'object' && child !== null && deeper(child, depth + 1, max)) return true;
  }
  return false;
}

/** deeperThan for `node` at level `depth`, with a stack of its own: any depth, no recursion. */
function deeperByStack(node: object, depth: number, max: number): boolean {
  const stack: object[] = [node];
  const depths: number[] = [depth];
  while (stack.length > 0) {
    const next = stack.pop()!;
    const level = depths.pop()!;
    if (level > max) return true;
    for (const child of Array.isArray(next) ? next : Object.values(next)) {
      if (typeof child === 'object' && child !== null) {
        stack.push(child);
        depths.push(level + 1);
      }
    }
  }
  return false;
}

/** JSON's own whitespace: space, tab, LF and CR, and nothing else (not U+00A0, U+2028 or a BOM). */
function isJsonBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return true;
}

/** What tryParse returns for a text that is not JSON. */
export const NOT_JSON: unique symbol = Symbol('not JSON');

/**
 * JSON.parse, or NOT_JSON for a text that is not JSON. The engine's SyntaxError quotes the input, secrets and
 * all, so it is not passed on.
 */
export function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

interface FrameProblem {
  code: 'INVALID_JSON' | 'INVALID_MESSAGE';
  reason: string;
}

/**
 * What is wrong with the result of tryParse on `text`, or undefined when it is a message. `null` is
 * INVALID_MESSAGE, since an object-mode stream cannot carry it, and so is a message nested deeper than
 * `maxDepth`. Only a text longer than twice `maxDepth` can be that deep (each level takes two characters), so
 * `mayBeTooDeep` lets the hot paths skip the call for every shorter message that parsed.
 */
export function problemOf(msg: unknown, text: string, maxDepth: number): FrameProblem | undefined {
  if (msg === NOT_JSON) return { code: 'INVALID_JSON', reason: 'is not valid JSON' };
  if (msg === null) return { code: 'INVALID_MESSAGE', reason: NULL_MESSAGE };
  if (mayBeTooDeep(text, maxDepth) && deeperThan(msg, maxDepth)) {
    return { code: 'INVALID_MESSAGE', reason: `message nests deeper than maxDepth (${maxDepth})` };
  }
  return undefined;
}

export function mayBeTooDeep(text: string, maxDepth: number): boolean {
  return text.length > 2 * maxDepth;
}

/** What is wrong with a line that tryParse gave `msg` for: nothing, 'blank' (JSON whitespace only), or a problem. */
export function lineProblem(msg: unknown, text: string, maxDepth: number): FrameProblem | 'blank' | undefined {
  if (msg !== NOT_JSON && msg !== null && !mayBeTooDeep(text, maxDepth)) return undefined;
  const problem = problemOf(msg, text, maxDepth);
  return problem?.code === 'INVALID_JSON' && isJsonBlank(text) ? 'blank' : problem;
}

/** The error for a line that did not parse to a message; at the end of the input, a line cut off is TRUNCATED. */
export function lineError(parsed: FrameProblem, atEnd: boolean, at: FrameErrorPosition, text: string | Uint8Array): FrameError {
  if (parsed.code === 'INVALID_JSON') {
    return atEnd
      ? new FrameError('TRUNCATED', 'input ended inside a message', at, preview(text))
      : new FrameError('INVALID_JSON', `line ${parsed.reason}`, at, preview(text));
  }
  return new FrameError(parsed.code, parsed.reason, at, preview(text));
}
