/* A debug line per request (`--log-level debug`): method, tool, outcome and time, and the caller when signed in. */
import { safeLine } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Telemetry } from './events.js';
import { methodLabel } from './requests.js';

/** Logs each request to a served child, and each a gateway sends on, at debug level. */
export function logRequests(telemetry: Telemetry, log: Logger): void {
  telemetry.subscribe('request:end', (r) => {
    const ms = Math.round(r.seconds * 1e4) / 10;
    const method = methodLabel(r.start.method);
    const session = /^session ([0-9a-f]{8})$/.exec(r.start.label)?.[1];
    log.debug(
      'request',
      `${r.start.label} ${method}${r.tool === '' ? '' : ` ${safeLine(r.tool)}`}: ${r.outcome}${r.code === undefined ? '' : ` ${r.code}`} in ${ms} ms`,
      {
        ...(session === undefined ? { label: r.start.label } : { session }),
        method,
        ...(r.tool === '' ? {} : { tool: r.tool }),
        era: r.start.era,
        outcome: r.outcome,
        ...(r.code === undefined ? {} : { code: r.code }),
        duration_ms: ms,
        ...(r.start.caller === undefined ? {} : { caller: r.start.caller }),
      },
    );
  });
  telemetry.subscribe('upstream:request', (r) => {
    const ms = Math.round(r.seconds * 1e4) / 10;
    log.debug('upstream.request', `server "${r.upstream}" ${r.method}: ${r.outcome} in ${ms} ms`, {
      upstream: r.upstream,
      method: r.method,
      outcome: r.outcome,
      duration_ms: ms,
    });
  });
}
