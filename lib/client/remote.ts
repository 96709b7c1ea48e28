/*
 * What the two HTTP channels share: their settings from options, and the wait before a reconnection.
 */
import http from 'node:http';
import https from 'node:https';
import type { Writable } from 'node:stream';
import { redact } from '../errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../framings/index.js';
import type { HttpChannelOptions, ReconnectOptions } from './http.js';

export interface RemoteSettings {
  url: URL;
  name: string;
  headers: Record<string, string>;
  reconnect: Required<ReconnectOptions> | false;
  idleMs: number;
  maxBytes: number;
  /** Keeps connections alive between requests; destroyed on close, so that no socket keeps the process alive. */
  agent: http.Agent;
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
    agent: new (parsed.protocol === 'https:' ? https.Agent : http.Agent)({ keepAlive: true }),
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
 * Feeds an event-stream response to `decoder`, with an idle watchdog: a response silent for `idleMs` (no bytes,
 * keep-alive comments included) is destroyed as broken. Calls `ended(reason)` once, when the response ends or
 * breaks, after the decoder has ended. Returns a function that stops the watchdog.
 */
export function readEventStream(res: http.IncomingMessage, decoder: Writable, idleMs: number, ended: (reason: string) => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const idle = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => res.destroy(new Error(`no bytes for ${idleMs} ms`)), idleMs);
  };
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  idle();
  res.on('data', (chunk: Buffer) => {
    idle();
    decoder.write(chunk);
  });
  let done = false;
  const finish = (reason: string): void => {
    if (done) return;
    done = true;
    stop();
    decoder.end();
    ended(reason);
  };
  res.on('end', () => finish('the stream ended'));
  res.on('error', (err) => finish(redact(err.message)));
  res.on('close', () => finish('the connection closed'));
  return stop;
}
