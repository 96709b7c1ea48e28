/*
 * What every served session is given: the settings, the log, how its child is started, serve's events, and the
 * little state serve itself changes while it runs (closing, the last failed start). Made once, whole, before any
 * session: nothing is filled in later.
 */
import { StdioChannel } from '../../client/stdio.js';
import type { Logger } from '../../log.js';
import type { Caller } from '../../protocol/caller.js';
import type { RequestTap, Telemetry } from '../observe/index.js';
import type { Children, ServedChild } from './children.js';
import type { EventStreamOptions } from './event-stream.js';

/** The HTTP paths serve answers on (`serve({ paths })`, `--path`, `--sse-path`, `--messages-path`). */
export interface ServePaths {
  /** The Streamable HTTP endpoint. @defaultValue '/mcp' */
  mcp: string;
  /** The legacy HTTP+SSE transport's stream. @defaultValue '/sse' */
  sse: string;
  /** Where the legacy transport's clients post their messages. @defaultValue '/messages' */
  messages: string;
}

/** What serve changes while it runs, made before anything reads it. */
export interface Lifecycle {
  /** serve is closing: sessions and children ending now are its doing, not news for the log. */
  closing: boolean;
  /** Why the last child failed to start, until one starts (for /healthz). */
  startFailure: string | undefined;
}

export interface ServeContext {
  /** The HTTP paths of the endpoints. */
  readonly paths: ServePaths;
  readonly children: Children;
  readonly maxMessageBytes: number;
  readonly maxStreamsPerSession: number;
  readonly maxPendingPerSession: number;
  readonly stream: EventStreamOptions;
  /** Every message logged (redacted). */
  readonly trace: boolean;
  readonly log: Logger;
  readonly telemetry: Telemetry;
  /** Where requests to children are begun and ended (see RequestTap). */
  readonly requests: RequestTap;
  readonly lifecycle: Lifecycle;
  /** This replica's id in the store, when serve shares sessions with others (--store). */
  readonly replica: string | undefined;
}

/** A short, loggable form of a session id (the whole id would let a reader of the log use the session). */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

/**
 * Sends `msg` to the child, begun as a request (see RequestTap) when it is one; a gateway hears whose it is (one
 * gateway serves every caller).
 */
export function sendAs(ctx: ServeContext, child: ServedChild, msg: unknown, caller: Caller | undefined): Promise<void> {
  const out = ctx.requests.outgoing(child, msg, caller);
  if (child instanceof StdioChannel) return child.send(out);
  ctx.children.called?.(child, caller);
  return child.send(out, caller);
}
