/*
 * What HttpChannel (http.ts) keeps and reads of a Streamable HTTP server's responses: the record of an event
 * stream (a POST's answer or the GET stream) while it is read and resumed, and a JSON body read within the message
 * limit and checked as a frame is.
 */
import type * as http from 'node:http';
import { FrameError, preview, reasonText } from '../errors.js';
import { decodeUtf8 } from '../framings/bytes.js';
import { DEFAULT_MAX_DEPTH } from '../framings/index.js';
import { problemOf, tryParse } from '../framings/json.js';
import { readCapped } from '../protocol/body.js';
import { isObject } from '../jsonrpc.js';
import { ConnectionError } from './errors.js';
import { PREVIEW_BODY_BYTES, RecentIds } from './remote.js';

type Id = string | number;

/** How many recent event ids a stream keeps to drop replayed duplicates. */
export const SEEN_IDS = 4096;

/** A stream of events from the server: a POST's answer, or the GET stream. */
export interface EventStream {
  kind: 'post' | 'get';
  /** Requests whose responses this stream still owes. */
  owed: Set<Id>;
  /** The last event id seen on it, for Last-Event-ID. */
  lastEventId: string | undefined;
  /** Modern era (no session): event ids this stream delivered already, the most recent of them. */
  seen: RecentIds;
  /** The server's `retry:`, in ms. */
  retry: number | undefined;
  /** Failed reconnection attempts in a row. */
  failures: number;
  response: http.IncomingMessage | undefined;
  /** Stops the idle watchdog of the response being read. */
  stopWatch: (() => void) | undefined;
}

export function newEventStream(kind: EventStream['kind'], owed: Set<Id>): EventStream {
  return {
    kind,
    owed,
    lastEventId: undefined,
    seen: new RecentIds(SEEN_IDS),
    retry: undefined,
    failures: 0,
    response: undefined,
    stopWatch: undefined,
  };
}

/** Stops reading the stream's response (it may be resumed later). */
export function stopStream(stream: EventStream): void {
  stream.stopWatch?.();
  stream.stopWatch = undefined;
  stream.response?.destroy();
  stream.response = undefined;
}

/**
 * A JSON body: one message or a batch, read within `maxBytes` and checked as a frame is (UTF-8, the nesting limit).
 * Returns the value and its text, or the problem when it is not one (its preview scrubbed with `scrub`).
 */
export async function readJsonBody(
  res: http.IncomingMessage,
  maxBytes: number,
  scrub: (text: string) => string,
): Promise<{ value: unknown; text: string } | FrameError> {
  const { body, over } = await readCapped(res, maxBytes);
  if (over) {
    res.destroy();
    return new FrameError('MESSAGE_TOO_LARGE', `a response body larger than maxMessageBytes (${maxBytes})`, {}, '');
  }
  const text = decodeUtf8(body, 0, body.length);
  if (text === undefined) return new FrameError('INVALID_UTF8', 'a response body that is not valid UTF-8', {}, preview(scrub(body.toString('utf8'))));
  const value = tryParse(text);
  const problem = problemOf(value, text, DEFAULT_MAX_DEPTH);
  if (problem === undefined) return { value, text };
  const what = problem.code === 'INVALID_JSON' ? 'a response body that is not valid JSON' : `a response body that is no message: ${problem.reason}`;
  return new FrameError(problem.code, what, {}, preview(scrub(text)));
}

/**
 * Legacy era: the initialize request as the session sent it, to start a new session with once when the server
 * forgets this one (a 404 on a request that carried its id); sends wait for the new one. A second 404 in a row,
 * with no success between, is an error, not a new session.
 */
export class SessionRenewal {
  #initialize: Record<string, unknown> | undefined;
  #initializeId: Id | undefined;
  #renewing: Promise<void> | undefined;
  #expiredOnce = false;

  /** A message the session sends: an initialize request is kept. */
  sent(msg: unknown): void {
    if (!isObject(msg) || msg.method !== 'initialize' || !('id' in msg)) return;
    this.#initialize = msg;
    this.#initializeId = msg.id as Id;
  }

  /** Whether `id` is the session's initialize request's. */
  isInitialize(id: Id): boolean {
    return id === this.#initializeId;
  }

  /** Settles once a renewal under way is over, unless `msg` is the initialize that the renewal is for. */
  async before(msg: unknown): Promise<void> {
    if (this.#renewing === undefined || this.#initializeId === undefined) return;
    if (!isObject(msg) || msg.method !== 'initialize') await this.#renewing;
  }

  /** A request succeeded: the next 404 starts a new session again. */
  succeeded(): void {
    this.#expiredOnce = false;
  }

  /** A 404: whether this is the first in a row (a new session is to be started). */
  expired(): boolean {
    if (this.#expiredOnce) return false;
    this.#expiredOnce = true;
    return true;
  }

  /** Starts the new session with `start` (once, however many requests saw the 404) and waits for it. */
  async renew(start: (initialize: Record<string, unknown>) => Promise<void>): Promise<void> {
    const init = this.#initialize;
    if (init === undefined) return;
    this.#renewing ??= start(init).finally(() => {
      this.#renewing = undefined;
    });
    await this.#renewing.catch(() => undefined);
  }
}

/**
 * The body of a POST that failed with an HTTP status: a JSON-RPC error response to one of the requests it carried
 * (`owed`) is that request's answer (returned with its text); anything else is an HTTP_STATUS error whose message
 * starts with `what` and quotes the body's start, scrubbed.
 */
export async function errorAnswer(
  res: http.IncomingMessage,
  owed: Set<Id>,
  what: string,
  scrub: (text: string) => string,
): Promise<{ value: Record<string, unknown>; text: string } | ConnectionError> {
  const { body, over } = await readCapped(res, PREVIEW_BODY_BYTES * 16);
  if (over) res.destroy();
  const text = body.toString('utf8');
  const value = tryParse(text);
  if (isObject(value) && isObject(value.error) && owed.has(value.id as Id)) return { value, text };
  const reason = reasonText(scrub(body.subarray(0, PREVIEW_BODY_BYTES).toString('utf8')));
  return new ConnectionError('HTTP_STATUS', `${what} with HTTP ${res.statusCode}${reason ? `: ${reason}` : ''}`, { status: res.statusCode });
}
