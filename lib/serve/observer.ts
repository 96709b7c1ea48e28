/*
 * What serve tells its metrics, its traces and its request log: each request to a served child (method, tool,
 * era, outcome, time), each request a gateway sends on to a server, sessions, children, bytes, bad frames and
 * refused callers. serve calls an Observer at those places; without --metrics, tracing or a debug log, there is
 * none and nothing is counted.
 */
import { idKey, isObject, isRequest, isResponse } from '../jsonrpc.js';
import { type RequestSpan, startRequestSpan } from '../protocol/trace.js';

/** How a request ended: answered, answered with a JSON-RPC error, a tool's own error result, or never (its child went away). */
export type Outcome = 'ok' | 'error' | 'tool_error' | 'gone';

export interface RequestRecord {
  method: string;
  /**
   * The tool or prompt named: only one the server listed (and answered), never a name a client made up, which
   * the MCP SDK answers as a tool error (`isError`) like any other: '' otherwise.
   */
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

/** Names of one child's listed tools and prompts kept as labels at most (a server could list endless ones too). */
const MAX_LISTED_NAMES = 2000;
/** The lists whose names may be labels, and the key of their items. */
const LISTS: Record<string, string> = { 'tools/list': 'tools', 'prompts/list': 'prompts' };

interface Open {
  method: string;
  name: string;
  /** performance.now() when the request went to the child. */
  start: number;
  span: RequestSpan | undefined;
  caller: string | undefined;
}

/** The child a session, the modern hub or a socket talks to: what observe() needs of it. */
interface Observed {
  send(msg: unknown, caller?: never): Promise<void>;
  on(event: 'message', listener: (msg: unknown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
}

/**
 * Watches the requests sent to `child` and their answers: each gets a record (and, with tracing, a span whose
 * context the request carries on to the child in `_meta`). Requests still open when the child closes end `gone`.
 * The work per request is kept to a Map entry and a clock read: bench/observe.ts measures it against serve's own.
 */
export function observe(child: Observed, observer: Observer | undefined, era: 'legacy' | 'modern', label: string, tracing: boolean): void {
  const record = observer?.request?.bind(observer);
  if (record === undefined && !tracing) return;
  const open = new Map<string, Open>();
  /** The tool and prompt names the child listed (to serve or to a client): the only names that are labels. */
  const listed = new Set<string>();
  /** Lists asked of the child and not answered yet: the key of their items, by request id. */
  const lists = new Map<string, string>();
  const send = child.send.bind(child) as (msg: unknown, caller?: unknown) => Promise<void>;
  (child as unknown as { send: (msg: unknown, caller?: unknown) => Promise<void> }).send = (msg: unknown, caller?: unknown) => {
    if (isRequest(msg) && LISTS[msg.method] !== undefined) lists.set(idKey(msg.id), LISTS[msg.method]!);
    // serve's own requests (the era probe, the translated initialize) are no client's.
    if (!isRequest(msg) || (typeof msg.id === 'string' && msg.id.startsWith('mcp-frame-'))) return send(msg, caller);
    const params = isObject(msg.params) ? msg.params : undefined;
    const span = tracing ? startRequestSpan(msg.method, params, 'server', { 'mcp.protocol.era': era }) : undefined;
    // Nothing to record and no span (no SDK registered): the request goes on as it came.
    if (record === undefined && span === undefined) return send(msg, caller);
    const name = (msg.method === 'tools/call' || msg.method === 'prompts/get') && typeof params?.name === 'string' ? params.name : '';
    const subject = (caller as { subject?: unknown } | undefined)?.subject;
    open.set(idKey(msg.id), {
      method: methodLabel(msg.method),
      name,
      start: performance.now(),
      span,
      caller: typeof subject === 'string' ? subject : undefined,
    });
    // A new params only when the span put its context in them: a request without params stays without.
    return send(span === undefined || span.params === params ? msg : { ...msg, params: span.params }, caller);
  };
  const finish = (entry: Open, outcome: Outcome, code?: number): void => {
    if (outcome === 'ok' || outcome === 'tool_error') entry.span?.end();
    else entry.span?.end({ ...(code === undefined ? {} : { code }), ...(outcome === 'gone' ? { type: 'gone' } : {}) });
    if (record === undefined) return;
    const r: RequestRecord = {
      method: entry.method,
      // A name is a label only when the server listed it and took it: an unknown name a client sent is not.
      tool: (outcome === 'ok' || outcome === 'tool_error') && listed.has(entry.name) ? entry.name : '',
      era,
      outcome,
      seconds: (performance.now() - entry.start) / 1000,
    };
    if (code !== undefined) r.code = code;
    if (entry.caller !== undefined) r.caller = entry.caller;
    record(r, label);
  };
  const learn = (result: unknown, key: string): void => {
    const items = isObject(result) ? result[key] : undefined;
    if (!Array.isArray(items)) return;
    for (const item of items) {
      if (listed.size >= MAX_LISTED_NAMES) return;
      if (isObject(item) && typeof item.name === 'string' && item.name.length <= 200) listed.add(item.name);
    }
  };
  child.on('message', (msg: unknown) => {
    if (!isResponse(msg)) return;
    const key = idKey(msg.id);
    const list = lists.get(key);
    if (list !== undefined) {
      lists.delete(key);
      learn((msg as { result?: unknown }).result, list);
    }
    const entry = open.get(key);
    if (entry === undefined) return;
    open.delete(key);
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
