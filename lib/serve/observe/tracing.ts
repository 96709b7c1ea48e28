/*
 * A span per request to a served child, through @opentelemetry/api (loaded before serve starts; a no-op until the
 * host registers an SDK): begun when the request goes, its context put in the request's `_meta` for the server,
 * ended with the request's outcome (its error code, never its message).
 */
import { type RequestSpan, startRequestSpan } from '../../protocol/trace.js';
import type { RequestStart, Telemetry } from './events.js';

export function traceRequests(telemetry: Telemetry): void {
  const spans = new WeakMap<RequestStart, RequestSpan>();
  telemetry.subscribe('request:start', (start) => {
    const span = startRequestSpan(start.method, start.params, 'server', { 'mcp.protocol.era': start.era });
    // None when no SDK is registered: the request goes on as it came.
    if (span === undefined) return;
    spans.set(start, span);
    start.params = span.params;
  });
  telemetry.subscribe('request:end', (end) => {
    const span = spans.get(end.start);
    if (span === undefined) return;
    spans.delete(end.start);
    if (end.outcome === 'ok' || end.outcome === 'tool_error') span.end();
    else span.end({ ...(end.code === undefined ? {} : { code: end.code }), ...(end.outcome === 'gone' ? { type: 'gone' } : {}) });
  });
}
