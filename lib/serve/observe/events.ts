/*
 * What serve tells whoever listens, published on node:diagnostics_channel as undici publishes its requests: each
 * request to a served child (begun, ended), each request a gateway sends on, sessions, children, HTTP bytes, bad
 * frames, refused callers and carried requests. serve's metrics, traces and request log subscribe, and so may a
 * host's own instrumentation (`diagnostics_channel.subscribe('mcp-frame:serve:request:end', ...)`). The channels
 * are the process's: every message names the serve that published it (`source`, its Telemetry), so that two
 * serves in one process count apart. With no subscriber, a publish costs one property read.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Caller } from '../../protocol/caller.js';

/** How a request ended: answered, answered with a JSON-RPC error, a tool's own error result, or never (its child went away). */
export type Outcome = 'ok' | 'error' | 'tool_error' | 'gone';

/**
 * A request going to a served child. A subscriber may replace `params` (tracing puts its span's context in
 * `_meta`): the request goes on with what `params` holds once every subscriber has run.
 */
export interface RequestStart {
  readonly source: Telemetry;
  /** The session's label (`session 1a2b3c4d`, `modern requests`, `socket connection 3`). */
  readonly label: string;
  readonly era: 'legacy' | 'modern';
  readonly method: string;
  params: Record<string, unknown> | undefined;
  /** The signed-in caller's subject (for the log; never a metric label). */
  readonly caller: string | undefined;
  /** performance.now() when it went. */
  readonly at: number;
}

export interface RequestEnd {
  readonly source: Telemetry;
  readonly start: RequestStart;
  readonly outcome: Outcome;
  /** The JSON-RPC error code, for an error. */
  readonly code: number | undefined;
  readonly seconds: number;
  /**
   * The tool or prompt named: only one the server listed (and answered), never a name a client made up, which
   * the MCP SDK answers as a tool error (`isError`) like any other: '' otherwise.
   */
  readonly tool: string;
}

/** Each channel's message (`source` added by publish). */
export interface ServeEvents {
  'request:start': RequestStart;
  'request:end': RequestEnd;
  /** `name`: the tool or prompt (as the client named it) or the resource URI; `caller`: who, when signed in. */
  'upstream:request': {
    source: Telemetry;
    upstream: string;
    method: string;
    outcome: Outcome;
    seconds: number;
    name?: string;
    caller?: Caller;
    session?: string;
  };
  /** A call a gateway refused before any server saw it: the policy does not let its caller call it, or the filters leave it out. */
  'gateway:refused': {
    source: Telemetry;
    method: string;
    name: string;
    why: 'policy' | 'filter' | 'rate';
    caller: Caller | undefined;
    session?: string | undefined;
  };
  'upstream:restart': { source: Telemetry; upstream: string };
  'session:open': { source: Telemetry; transport: 'streamable' | 'legacy' | 'socket' };
  'child:start': { source: Telemetry };
  'child:end': { source: Telemetry; how: 'closed' | 'died' };
  'http:bytes': { source: Telemetry; direction: 'in' | 'out'; bytes: number };
  'frame:bad': { source: Telemetry; from: 'server' | 'client' };
  'auth:refused': { source: Telemetry; reason: 'missing' | 'invalid' | 'insufficient_scope' };
  'tunnel:request': { source: Telemetry };
}

export type ServeEventName = keyof ServeEvents;

/** The name of a serve channel in node:diagnostics_channel. */
export const channelName = (event: ServeEventName): string => `mcp-frame:serve:${event}`;

const CHANNELS = new Map<ServeEventName, diagnostics.Channel>();
const channelOf = (event: ServeEventName): diagnostics.Channel => {
  let channel = CHANNELS.get(event);
  if (channel === undefined) {
    channel = diagnostics.channel(channelName(event));
    CHANNELS.set(event, channel);
  }
  return channel;
};

/** One serve's events: what it publishes, and its own subscribers (which hear only it), removed by close(). */
export class Telemetry {
  readonly #subscriptions: Array<[string, (message: unknown, name: string | symbol) => void]> = [];

  /** Whether anyone listens to `event` (this serve's subscribers, or anyone's): work for no listener can be skipped. */
  listened(event: ServeEventName): boolean {
    return channelOf(event).hasSubscribers;
  }

  publish<E extends ServeEventName>(event: E, message: Omit<ServeEvents[E], 'source'>): void {
    const channel = channelOf(event);
    if (channel.hasSubscribers) channel.publish(Object.assign(message, { source: this }));
  }

  /** Calls `listener` with each message this serve publishes on `event`. */
  subscribe<E extends ServeEventName>(event: E, listener: (message: ServeEvents[E]) => void): void {
    const name = channelName(event);
    const own = (message: unknown): void => {
      if ((message as { source?: unknown }).source === this) listener(message as ServeEvents[E]);
    };
    diagnostics.subscribe(name, own);
    this.#subscriptions.push([name, own]);
  }

  /** Removes every subscriber of this serve's. */
  close(): void {
    for (const [name, listener] of this.#subscriptions.splice(0)) diagnostics.unsubscribe(name, listener);
  }
}
