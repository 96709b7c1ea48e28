/*
 * What a gateway reports of the calls it sends on (to serve's metrics, request log and audit trail), and the span
 * of each: kept apart from the routing (gateway.ts), which calls observeCall() once per call and ends it once.
 */
import { RpcError } from '../protocol/rpc-error.js';
import type { Caller } from '../protocol/caller.js';
import { startRequestSpan } from '../protocol/trace.js';

type Json = Record<string, unknown>;

/** How a call sent on ended: answered, a JSON-RPC error, a tool's own error result, or never (its server went away). */
type CallOutcome = 'ok' | 'error' | 'tool_error' | 'gone';

/** A call a gateway sent on to one of its servers, once it ended. */
export interface UpstreamRecord {
  upstream: string;
  method: string;
  outcome: CallOutcome;
  seconds: number;
  /** The tool or prompt, by the name the client used, or the resource's URI: what the call was for. */
  name?: string;
  /** Who called, when signed in. */
  caller?: Caller;
  /** The session it came in, when there is one (see Call.session). */
  session?: string;
}

/** What a gateway reports (to serve's metrics, request log and audit trail). */
export interface GatewayObserver {
  upstreamRequest?(record: UpstreamRecord): void;
  upstreamRestart?(upstream: string): void;
  /** A call refused before any server saw it: the policy does not let its caller call it, or the filters leave it out. */
  refused?(record: { method: string; name: string; why: 'policy' | 'filter'; caller: Caller | undefined; session?: string | undefined }): void;
}

/**
 * The span (with `tracing`) and the clock of one call sent on to `upstream`: `params` as they go (the span's
 * context in `_meta`), and `end`, which ends the span and reports the call to `observer`.
 */
export function observeCall(
  observer: GatewayObserver | undefined,
  tracing: boolean,
  call: { upstream: string; method: string; params: Json; name: string | undefined; caller: Caller | undefined; session?: string | undefined },
): { params: Json; end(outcome: CallOutcome, err?: unknown): void } {
  // One span per call to a server, a child of the caller's (in _meta), whose context goes on to the server.
  const span = tracing ? startRequestSpan(call.method, call.params, 'client', { 'mcp.server.name': call.upstream }) : undefined;
  const start = observer?.upstreamRequest === undefined ? 0n : process.hrtime.bigint();
  return {
    params: span?.params ?? call.params,
    end(outcome, err) {
      if (err === undefined) span?.end();
      else span?.end(err instanceof RpcError ? { code: err.code } : { type: (err as { code?: string }).code ?? 'error' });
      if (observer?.upstreamRequest === undefined) return;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const { upstream, method, name, caller, session } = call;
      observer.upstreamRequest({
        upstream,
        method,
        outcome,
        seconds,
        ...(name === undefined ? {} : { name }),
        ...(caller === undefined ? {} : { caller }),
        ...(session === undefined ? {} : { session }),
      });
    },
  };
}
