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
 * Parses the JSON text of one frame for a decoder: the message, or the FrameError to report. `null` is
 * INVALID_MESSAGE, since an object-mode stream cannot carry it. The engine's SyntaxError quotes the input,
 * secrets and all, so it is not passed on.
 */
export function parseBody(text: string): { ok: true; msg: unknown } | { ok: false; code: 'INVALID_JSON' | 'INVALID_MESSAGE' } {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { ok: false, code: 'INVALID_JSON' };
  }
  return msg === null ? { ok: false, code: 'INVALID_MESSAGE' } : { ok: true, msg };
}
