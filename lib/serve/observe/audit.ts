/*
 * The audit trail: one record per tools/call, prompts/get and resources/read a gateway sends on to a server, and per
 * one it refuses before any server sees it (by the policy, or the filters), at the default log level: the time,
 * the caller (issuer and subject when signed in; never a token or a claim's value beyond those), the server, the
 * tool, prompt or resource, the outcome and the time it took. In JSON logs a record is an object with
 * `"event": "audit"`; with a file it is also appended there, one JSON object a line, the file made readable by its
 * owner only (0600).
 */
import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';
import { safeLine } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Caller } from '../../protocol/caller.js';
import type { Telemetry } from './events.js';

/** The methods a record is kept for: what a caller does with a server's tools, prompts and resources. */
const AUDITED = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Who called, as a record names them: the token's issuer and subject, nothing else of it. */
function who(caller: Caller | undefined): { issuer?: string; subject: string } | undefined {
  if (caller === undefined) return undefined;
  // Caller.subject is the issuer and the subject in one (unique across issuers); a record names them apart.
  const issuer = caller.claims.iss;
  const subject = typeof caller.claims.sub === 'string' ? caller.claims.sub : caller.subject;
  return typeof issuer === 'string' ? { issuer, subject } : { subject };
}

/** The session a record names: the session's short id (its label without `session `), when there is one. */
function sessionOf(label: string | undefined): { session?: string } {
  return label === undefined ? {} : { session: label.replace(/^session /, '') };
}

/** Subscribes the audit trail to `telemetry`: records to `log`, and appended to `file` when one is given. */
export function auditTrail(telemetry: Telemetry, log: Logger, file: string | undefined): { close(): void } {
  let fd: number | undefined;
  if (file !== undefined) {
    try {
      fd = openSync(file, 'a', 0o600);
      // A file that existed already is made the owner's alone too.
      fchmodSync(fd, 0o600);
    } catch (err) {
      throw Object.assign(new Error(`audit log ${file}: cannot open it: ${(err as Error).message}`), { code: 'CONFIG' });
    }
  }
  const record = (fields: Record<string, unknown>): void => {
    const caller = fields.caller as { issuer?: string; subject: string } | undefined;
    const text = `audit: ${caller === undefined ? '-' : safeLine(caller.subject)} ${fields.method} ${safeLine(`${fields.server}/${fields.name}`)}: ${fields.outcome}${fields.why === undefined ? '' : ` (${fields.why})`}${fields.duration_ms === undefined ? '' : ` in ${fields.duration_ms} ms`}`;
    log.info('audit', text, fields);
    if (fd !== undefined) writeSync(fd, `${JSON.stringify({ time: new Date().toISOString(), event: 'audit', ...fields })}\n`);
  };
  telemetry.subscribe('upstream:request', (r) => {
    if (!AUDITED.has(r.method)) return;
    const caller = who(r.caller);
    const ms = Math.round(r.seconds * 1e4) / 10;
    record({
      ...(caller === undefined ? {} : { caller }),
      ...sessionOf(r.session),
      method: r.method,
      server: r.upstream,
      name: r.name ?? '',
      outcome: r.outcome,
      duration_ms: ms,
    });
  });
  telemetry.subscribe('gateway:refused', (r) => {
    const caller = who(r.caller);
    record({
      ...(caller === undefined ? {} : { caller }),
      ...sessionOf(r.session),
      method: r.method,
      server: '-',
      name: r.name,
      outcome: 'refused',
      why: r.why,
    });
  });
  return {
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
