/*
 * Diagnostics for operators: `NODE_DEBUG=mcp-frame` prints bad frames (code, position, redacted preview),
 * reconnections (reason and wait) and serve's session starts and ends to stderr, through Node's
 * util.debuglog. Unset, a call costs one property read, and calls stand only on rare paths (a bad frame, a
 * reconnection, a session event), never on a message's way.
 */
import { debuglog } from 'node:util';
import type { FrameError } from './errors.js';

const log = debuglog('mcp-frame');

/** One diagnostic line (text already redacted), when NODE_DEBUG names mcp-frame. */
export function debug(line: string): void {
  if (log.enabled) log('%s', line);
}

/** A bad frame as a diagnostic line: where it was read, its code, message (with its position) and preview. */
export function debugFrameError(where: string, error: FrameError): void {
  if (log.enabled) log('%s: %s: %s: %s', where, error.code, error.message, error.preview);
}
