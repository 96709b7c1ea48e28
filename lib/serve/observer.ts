/*
 * What serve tells its metrics, its traces and its request log: each request to a served child (method, tool,
 * era, outcome, time), each request a gateway sends on to a server, sessions, children, bytes, bad frames and
 * refused callers. serve calls an Observer at those places; without --metrics, tracing or a debug log, there is
 * none and nothing is counted.
 */
import { idKey, isObject, isRequest, isResponse } from '../jsonrpc.js';
import { type RequestSpan, startRequestSpan, traceApi } from '../protocol/trace.js';

/** How a request ended: answered, answered with a JSON-RPC error, a tool's own error result, or never (its child went away). */
export type Outcome = 'ok' | 'error' | 'tool_error' | 'gone';

export interface RequestRecord {
  method: string;
  /** The tool or prompt named (only once the server has answered it as one it has: never a name a client made up). */
  tool: string;
  era: 'legacy' | 'modern';
  outcome: Outcome;
  seconds: number;
  /** The JSON-RPC error code, for an error. */
  code?: number;
  /** The signed-in caller's subject (for the log; never a metric label). */
  caller?: string;
}

/** A prom-client Registry, as serve uses one. */
export interface MetricsRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface Observer {
  request?(record: RequestRecord, label: string): void;
  upstreamRequest?(record: { upstream: string; method: string; outcome: Outcome; seconds: number }): void;
  upstreamRestart?(upstream: string): void;
  sessionOpened?(transport: 'streamable' | 'legacy' | 'socket'): void;
  childStarted?(): void;
  childEnded?(how: 'closed' | 'died'): void;
  bytes?(direction: 'in' | 'out', n: number): void;
  badFrame?(from: 'server' | 'client'): void;
  authRefused?(reason: 'missing' | 'invalid' | 'insufficient_scope'): void;
  tunnel?(): void;
}

/** The methods that are their own label value; any other is `other` (a client could make up endless ones). */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'server/discover',
  'subscriptions/listen',
]);

const methodLabel = (method: string): string => (KNOWN_METHODS.has(method) ? method : 'other');

interface Open {
  method: string;
  name: string;
  start: bigint;
  span: RequestSpan | undefined;
  caller?: string;
}

/** The child a session, the modern hub or a socket talks to: what observe() needs of it. */
interface Observed {
  send(msg: unknown, ...rest: never[]): Promise<void>;
  on(event: 'message', listener: (msg: unknown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
}

/**
 * Watches the requests sent to `child` and their answers: each gets a record (and, with tracing, a span whose
 * context the request carries on to the child in `_meta`). Requests still open when the child closes end `gone`.
 */
export function observe(child: Observed, observer: Observer | undefined, era: 'legacy' | 'modern', label: string, tracing: boolean): void {
  if (observer?.request === undefined && !tracing) return;
  const open = new Map<string, Open>();
  const send = child.send.bind(child) as (msg: unknown, ...rest: unknown[]) => Promise<void>;
  (child as unknown as { send: (msg: unknown, ...rest: unknown[]) => Promise<void> }).send = (msg: unknown, ...rest: unknown[]) => {
    // serve's own requests (the era probe, the translated initialize) are no client's.
    if (!isRequest(msg) || (typeof msg.id === 'string' && msg.id.startsWith('mcp-frame-'))) return send(msg, ...rest);
    const params = isObject(msg.params) ? msg.params : undefined;
    const span = tracing && traceApi() !== undefined ? startRequestSpan(msg.method, params, 'server', { 'mcp.protocol.era': era }) : undefined;
    const name = (msg.method === 'tools/call' || msg.method === 'prompts/get') && typeof params?.name === 'string' ? params.name : '';
    const caller = (rest[0] as { subject?: unknown } | undefined)?.subject;
    open.set(idKey(msg.id), {
      method: methodLabel(msg.method),
      name,
      start: process.hrtime.bigint(),
      span,
      ...(typeof caller === 'string' ? { caller } : {}),
    });
    // A new params only when the span put its context in them: a request without params stays without.
    return send(span === undefined || span.params === params ? msg : { ...msg, params: span.params }, ...rest);
  };
  const finish = (entry: Open, outcome: Outcome, code?: number): void => {
    if (outcome === 'ok' || outcome === 'tool_error') entry.span?.end();
    else entry.span?.end({ ...(code === undefined ? {} : { code }), ...(outcome === 'gone' ? { type: 'gone' } : {}) });
    const seconds = Number(process.hrtime.bigint() - entry.start) / 1e9;
    // A name is a label only when the server took it as one of its tools: an unknown name a client sent is not.
    const tool = outcome === 'ok' || outcome === 'tool_error' ? entry.name : '';
    observer?.request?.(
      {
        method: entry.method,
        tool,
        era,
        outcome,
        seconds,
        ...(code === undefined ? {} : { code }),
        ...(entry.caller === undefined ? {} : { caller: entry.caller }),
      },
      label,
    );
  };
  child.on('message', (msg: unknown) => {
    if (!isResponse(msg)) return;
    const entry = open.get(idKey(msg.id));
    if (entry === undefined) return;
    open.delete(idKey(msg.id));
    const error =
      isObject(msg) && isObject((msg as { error?: unknown }).error)
        ? ((msg as { error: { code?: unknown } }).error as { code?: unknown })
        : undefined;
    const result = isObject(msg) ? (msg as { result?: unknown }).result : undefined;
    if (error !== undefined) finish(entry, 'error', typeof error.code === 'number' ? error.code : undefined);
    else finish(entry, isObject(result) && result.isError === true ? 'tool_error' : 'ok');
  });
  child.on('close', () => {
    for (const entry of open.values()) finish(entry, 'gone');
    open.clear();
  });
}
