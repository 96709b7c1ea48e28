/*
 * A long tool call where a human waits: `mcp-frame call` asks for progress and shows it on stderr, one line
 * redrawn in place (a bar when the server gives a total, a spinner when it does not, with its message). Only
 * on a terminal: piped or redirected, nothing is asked and nothing is drawn.
 */
import { randomUUID } from 'node:crypto';
import type { Connection } from '../client/connection.js';
import { safeLine } from '../errors.js';
import { isObject } from '../jsonrpc.js';

/** What the view draws on: stderr, or a stand-in in tests. */
export interface ProgressStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): unknown;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Streams a view has drawn a line on that is still there (no newline after it). */
const drawnOn = new Set<ProgressStream>();

/**
 * Clears a progress line drawn on `stream`, if one is there: what is written next (an interruption's message)
 * starts at the line's beginning instead of after the bar.
 */
export function clearProgressLine(stream: ProgressStream = process.stderr): void {
  if (!drawnOn.delete(stream)) return;
  stream.write('\r\x1b[2K');
}
const BAR = 20;

/** One line of the view: `⠋ [#####-----] 3/10 message`, cut to the terminal's width. */
export function progressLine(frame: number, progress: number, total: number | undefined, message: string | undefined, width = 80): string {
  let line: string;
  if (total !== undefined && total > 0) {
    const filled = Math.max(0, Math.min(BAR, Math.round((progress / total) * BAR)));
    line = `${SPINNER[frame % SPINNER.length]} [${'#'.repeat(filled)}${'-'.repeat(BAR - filled)}] ${progress}/${total}`;
  } else {
    line = `${SPINNER[frame % SPINNER.length]} ${progress}`;
  }
  if (message !== undefined && message !== '') line += ` ${safeLine(message)}`;
  return line.length >= width ? line.slice(0, Math.max(1, width - 1)) : line;
}

/**
 * `params` of a tools/call with a progress token of its own, and the view of its progress on `stream` until
 * done() (which clears the line); on a stream that is not a terminal, `params` as they are and no view.
 */
export function withProgressView(
  connection: Connection,
  params: Record<string, unknown>,
  stream: ProgressStream = process.stderr,
): { params: Record<string, unknown>; done(): void } {
  if (stream.isTTY !== true) return { params, done: () => undefined };
  const token = `mcp-frame-call-${randomUUID()}`;
  let frame = 0;
  let drawn = false;
  const listener = (msg: Record<string, unknown>): void => {
    if (msg.method !== 'notifications/progress' || !isObject(msg.params) || msg.params.progressToken !== token) return;
    const { progress, total, message } = msg.params;
    if (typeof progress !== 'number') return;
    stream.write(
      `\r\x1b[2K${progressLine(frame++, progress, typeof total === 'number' ? total : undefined, typeof message === 'string' ? message : undefined, stream.columns ?? 80)}`,
    );
    drawn = true;
    drawnOn.add(stream);
  };
  connection.on('notification', listener);
  const meta = isObject(params._meta) ? params._meta : {};
  return {
    params: { ...params, _meta: { ...meta, progressToken: token } },
    done() {
      connection.off('notification', listener);
      if (drawn) clearProgressLine(stream);
    },
  };
}
