/*
 * What the two HTTP channels share: their settings from options, and the wait before a reconnection.
 */
import http from 'node:http';
import https from 'node:https';
import { type FrameError, redact } from '../errors.js';
import type { DecodeSink, FramedEvent } from '../framings/codec.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../framings/index.js';
import { SseDecoder } from '../framings/sse.js';
import { ConnectionError } from './errors.js';
import type { HttpChannelOptions, ReconnectOptions } from './http.js';

export interface RemoteSettings {
  url: URL;
  name: string;
  headers: Record<string, string>;
  reconnect: Required<ReconnectOptions> | false;
  idleMs: number;
  maxBytes: number;
  /**
   * Keeps connections alive between POSTs, at most maxSockets at once: a thousand concurrent requests over a
   * thousand fresh connections took 3x as long as over 64. Destroyed on close, so no socket keeps the process
   * alive.
   */
  agent: http.Agent;
  /** For GET streams, which live long and are few: no cap, so that they never wait behind POSTs. */
  streamAgent: http.Agent;
}

export function remoteSettings(url: string | URL, options: HttpChannelOptions): RemoteSettings {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`not an http(s) URL: ${parsed.protocol}`);
  return {
    url: parsed,
    name: options.name ?? parsed.host,
    headers: { ...options.headers },
    reconnect: options.reconnect === false ? false : { initialDelayMs: 1000, maxDelayMs: 30_000, factor: 2, maxAttempts: 8, ...options.reconnect },
    idleMs: options.idleTimeoutMs ?? 300_000,
    maxBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    agent: new (parsed.protocol === 'https:' ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: options.maxSockets ?? 64 }),
    streamAgent: new (parsed.protocol === 'https:' ? https.Agent : http.Agent)({ keepAlive: true }),
  };
}

/**
 * The wait before the next attempt: the server's `retry:` when it sent one, else initialDelayMs, times factor
 * per attempt that failed already, capped at maxDelayMs, with jitter that only lengthens it (the server's retry
 * is a floor the spec says to respect).
 */
export function reconnectWait(policy: Required<ReconnectOptions>, retry: number | undefined, failures: number): number {
  const base = retry ?? policy.initialDelayMs;
  const grown = Math.min(policy.maxDelayMs, base * policy.factor ** failures);
  return Math.max(base, Math.round(grown * (1 + Math.random() * 0.2)));
}

/**
 * A body read to its end, or until it passes `cap` bytes: then reading stops (the stream is paused, not
 * destroyed, so that a server can still answer on the connection) and `over` is true. Rejects when the body
 * is cut off before its end.
 */
export function readCapped(stream: NodeJS.ReadableStream, cap: number): Promise<{ body: Buffer; over: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: { body: Buffer; over: boolean } | Error): void => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= cap) return void chunks.push(chunk);
      stream.pause();
      settle({ body: Buffer.concat(chunks), over: true });
    };
    stream.on('data', onData);
    stream.once('end', () => settle({ body: Buffer.concat(chunks), over: false }));
    stream.once('error', (err: Error) => settle(err));
    stream.once('close', () => settle(new Error('the body was cut off before its end')));
  });
}

export interface EventStreamHandlers {
  /** A frame's JSON text, before its message (for a trace); '' for a large frame when `tracing` said no. */
  frame?(text: string): void;
  /** Whether frame() uses its text now; when it does not, a large frame is parsed without making its text. */
  tracing?(): boolean;
  /** A message (a batch arrives as its elements), with the id of the event that carried it ('' for none). */
  message(msg: unknown, eventId: string): void;
  invalid(error: FrameError): void;
  /** An event of another type than `message` (the legacy transport's `endpoint`). */
  event?(event: FramedEvent): void;
  /** Once, when the response ends or breaks: why, the last event id dispatched, and the server's retry:. */
  ended(reason: string, lastEventId: string, retry: number | undefined): void;
}

/**
 * Reads an event-stream response through the pure SSE decoder (no stream object per response: a POST's answer
 * is often one event), with an idle watchdog: a response silent for `idleMs` (no bytes, keep-alive comments
 * included) is destroyed as broken. Returns a function that stops the watchdog.
 */
export function readEventStream(res: http.IncomingMessage, maxMessageBytes: number, idleMs: number, on: EventStreamHandlers): () => void {
  const core = new SseDecoder({ maxMessageBytes });
  const sink: DecodeSink = {
    get textUnused() {
      return on.frame === undefined || on.tracing?.() === false;
    },
    message: (msg, text) => {
      on.frame?.(text);
      const id = core.lastEventId;
      if (Array.isArray(msg)) for (const element of msg) on.message(element, id);
      else on.message(msg, id);
    },
    invalid: (error) => {
      on.invalid(error);
      return true;
    },
    event: (event) => on.event?.(event),
  };
  const timer = setTimeout(() => res.destroy(new Error(`no bytes for ${idleMs} ms`)), idleMs);
  const stop = (): void => clearTimeout(timer);
  res.on('data', (chunk: Buffer) => {
    timer.refresh();
    core.write(chunk, sink);
  });
  let done = false;
  const finish = (reason: string): void => {
    if (done) return;
    done = true;
    stop();
    core.end(sink);
    on.ended(reason, core.lastEventId, core.retry);
  };
  res.on('end', () => finish('the stream ended'));
  res.on('error', (err) => finish(redact(err.message)));
  res.on('close', () => finish('the connection closed'));
  return stop;
}

/**
 * One HTTP request of a remote channel: its agent (GET streams on their own), the headers given, and a GET that
 * gets no answer at all taken as silent as a stream that stops (the idle watchdog; a POST may take long to
 * answer, as a slow tool's one JSON body, and is never timed out here). A network error names the server, never
 * the configured headers. `track` sees each request sent, for a channel that aborts its requests on close.
 *
 * A request sent on a kept-alive socket that the server resets before any answer is sent once more, on a new
 * socket: the server closed the idle socket just as the request went out on it (the keep-alive race Node's
 * docs describe under `request.reusedSocket`), so it never read the request. Only once, and never on a fresh
 * socket or when the request was destroyed here (a channel closing), where the reset says something else.
 */
export function remoteRequest(
  remote: RemoteSettings,
  name: string,
  request: { method: string; url?: URL; headers: Record<string, string>; body?: string | undefined },
  track?: (req: http.ClientRequest) => void,
): Promise<http.IncomingMessage> {
  const url = request.url ?? remote.url;
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const send = (retried: boolean): void => {
      const agent = request.method === 'GET' ? remote.streamAgent : remote.agent;
      const req = transport.request(url, { method: request.method, headers: request.headers, agent });
      if (request.method === 'GET') req.setTimeout(remote.idleMs, () => req.destroy(new Error(`no answer for ${remote.idleMs} ms`)));
      track?.(req);
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        resolve(res);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (!retried && !answered && req.reusedSocket && !req.destroyed && err.code === 'ECONNRESET') return send(true);
        reject(new ConnectionError('HTTP_STATUS', `cannot reach "${name}": ${redact(err.message)}`, { cause: err }));
      });
      req.end(request.body);
    };
    send(false);
  });
}
