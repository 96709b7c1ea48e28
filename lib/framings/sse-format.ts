/*
 * Writing Server-Sent Events, on any runtime (no node: module, no Node global): the Node encoder and
 * mcp-frame/web's write the same bytes.
 */
import { serialize } from './json.js';

export interface SseEventFields {
  /** Event type; omitted, the reader takes it as `message`. */
  event?: string;
  data: string;
  id?: string | number;
  /** Reconnection time, in milliseconds. */
  retry?: number;
}

/** One event in the WHATWG event-stream format; each line of `data` becomes its own `data:` line. */
export function formatEvent({ event, data, id, retry }: SseEventFields): string {
  let out = '';
  if (id !== undefined) {
    const text = String(id);
    if (/[\r\n\0]/.test(text)) throw new TypeError('an SSE event id cannot hold CR, LF or NUL');
    out += `id: ${text}\n`;
  }
  if (event !== undefined) {
    if (/[\r\n]/.test(event)) throw new TypeError('an SSE event type cannot hold CR or LF');
    out += `event: ${event}\n`;
  }
  if (retry !== undefined) out += `retry: ${Math.floor(retry)}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** `event: message\ndata: <json>\n\n`, with an `id:` line first when an id is given. Compact JSON has no line breaks. */
export function frameSse(msg: unknown, id?: string | number): string {
  const json = serialize(msg);
  return id === undefined ? `event: message\ndata: ${json}\n\n` : formatEvent({ id, event: 'message', data: json });
}
