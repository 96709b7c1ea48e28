/*
 * The observe room: serve's events (on node:diagnostics_channel), the tap that begins and ends each request to a
 * served child, and the subscribers serve attaches: Prometheus metrics, spans, the debug request log and the audit trail.
 */
export { channelName, type Outcome, type RequestEnd, type RequestStart, type ServeEventName, type ServeEvents, Telemetry } from './events.js';
export { type MetricsRegistry, type MetricsSources, prometheusMetrics } from './metrics.js';
export { auditTrail } from './audit.js';
export { logRequests } from './request-log.js';
export { type Heard, methodLabel, RequestTap } from './requests.js';
export { traceRequests } from './tracing.js';
