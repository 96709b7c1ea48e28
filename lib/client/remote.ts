/*
 * What the two HTTP channels share: their settings from options, and the wait before a reconnection.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { agentFor } from './proxy.js';
import { FrameError, redact, safeLine } from '../errors.js';
import { configuredSecrets, scrubber } from '../redaction.js';
import type { DecodeSink, FramedEvent } from '../framings/codec.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../framings/index.js';
import { SseDecoder } from '../framings/sse.js';
import type { AuthOptions } from './auth/types.js';
import { authChallenge } from '../protocol/www-authenticate.js';
import { MAX_SIGN_INS_PER_REQUEST, SignIn } from './sign-in.js';
import type { ToolPolicy } from './tool-policy.js';
import { ConnectionError } from './errors.js';

export interface ReconnectOptions {
  /** The wait before the first attempt, when the server sent no `retry:`. @defaultValue 1000 */
  initialDelayMs?: number;
  /** The longest wait between attempts. @defaultValue 30000 */
  maxDelayMs?: number;
  /** Each failed attempt multiplies the wait by this. @defaultValue 2 */
  factor?: number;
  /** Failed attempts in a row before the connection gives up (GAVE_UP). @defaultValue 8 */
  maxAttempts?: number;
  /**
   * Modern era: which requests whose response stream broke before their answer are sent again under a new id.
   * `'harmless'`: those that running twice cannot hurt (reading and listing methods, and tools the server's
   * tools/list annotated readOnlyHint or idempotentHint); any other fails with STREAM_LOST, saying it may have
   * run, and the caller decides. `'all'`: every request, as the 2026-07-28 revision's transport page says a
   * client MUST, accepting that a call the server had begun (a payment, a deploy) may run twice.
   * @defaultValue 'harmless'
   */
  resend?: 'harmless' | 'all';
}

export interface HttpChannelOptions {
  /** Modern era: what is learnt of the server's tools (which can run twice, which headers they take). @defaultValue a new ToolPolicy */
  toolPolicy?: ToolPolicy;
  /** A name for the server in error messages. @defaultValue the URL's host */
  name?: string;
  /** Sent on every request (Authorization, cookies, API keys); they appear nowhere else. */
  headers?: Record<string, string>;
  /** Sign in with the MCP authorization flow (OAuth 2.1) when the server asks for it. */
  auth?: AuthOptions;
  /** The bearer token of each request, asked for each time, in place of a sign-in (see ConnectOptions.bearer). */
  bearer?: () => Promise<string>;
  /** How dropped streams are resumed; `false` never resumes. */
  reconnect?: ReconnectOptions | false;
  /**
   * A stream that carries no bytes (keep-alive comments included) for this long is taken as broken and
   * resumed. It never fails a request by itself.
   * @defaultValue 300000 (5 minutes)
   */
  idleTimeoutMs?: number;
  /** @defaultValue 64 MiB */
  maxMessageBytes?: number;
  /**
   * POSTs in flight at once (each is a connection while its answer streams); more wait their turn. GET
   * streams are not counted.
   * @defaultValue 64
   */
  maxSockets?: number;
  /**
   * Reach the server through this Unix socket (a named pipe on Windows) instead of the URL's host and port: the
   * URL still names the path and the Host header (`http://localhost/mcp`). No proxy is used for it.
   */
  socketPath?: string;
}

/** How much of an error body is read for the message that quotes it. */
export const PREVIEW_BODY_BYTES = 4096;

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
  /** Replaces each configured secret (see configuredSecrets) and token in server text before it reaches an error, trace or log. */
  scrub: (text: string) => string;
  /** The sign-in state, when `auth` was given. */
  auth: SignIn | undefined;
  bearer: (() => Promise<string>) | undefined;
  /** The local socket requests go through, when not the URL's host and port. */
  socketPath: string | undefined;
}

/** A FrameError whose message and preview went through `scrub`: the same error when neither changed. */
export function scrubFrameError(error: FrameError, scrub: (text: string) => string): FrameError {
  const reason = scrub(error.reason);
  const preview = scrub(error.preview);
  if (reason === error.reason && preview === error.preview) return error;
  return new FrameError(error.code, reason, { offset: error.offset, line: error.line, index: error.index }, preview);
}

/** A URL's path, for a message: the query left out (it may carry a session id or a key). */
export function pathOf(url: URL): string {
  return safeLine(url.pathname);
}

export function remoteSettings(url: string | URL, options: HttpChannelOptions): RemoteSettings {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`not an http(s) URL: ${parsed.protocol}`);
  const auth = options.auth === undefined ? undefined : new SignIn(parsed, options.auth);
  const local = options.socketPath !== undefined;
  if (local && parsed.protocol !== 'http:')
    throw new TypeError(`a server reached through a socket is spoken to in plain http: (its url), got ${parsed.protocol}`);
  return {
    url: parsed,
    name: options.name ?? parsed.host,
    headers: { ...options.headers },
    reconnect:
      options.reconnect === false
        ? false
        : { initialDelayMs: 1000, maxDelayMs: 30_000, factor: 2, maxAttempts: 8, resend: 'harmless', ...options.reconnect },
    idleMs: options.idleTimeoutMs ?? 300_000,
    maxBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    agent: local
      ? new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 64 })
      : agentFor(parsed, { keepAlive: true, maxSockets: options.maxSockets ?? 64 }),
    streamAgent: local ? new http.Agent({ keepAlive: true }) : agentFor(parsed, { keepAlive: true }),
    scrub: withAuth(scrubber(configuredSecrets(parsed, options.headers ?? {})), auth),
    auth,
    bearer: options.bearer,
    socketPath: options.socketPath,
  };
}

function withAuth(scrub: (text: string) => string, auth: SignIn | undefined): (text: string) => string {
  return auth === undefined ? scrub : (text) => auth.scrub(scrub(text));
}

/**
 * The shortest wait a server's `retry:` can ask for: `retry: 0` would make a drop a busy loop of reconnections.
 * (The waits configured here are the caller's to choose.)
 */
export const MIN_RETRY_MS = 100;
/** The longest wait a timer takes: past 2^31-1 ms Node fires it after 1 ms, with a warning. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const clamp = (ms: number, floor: number): number => Math.min(MAX_TIMER_MS, Math.max(floor, Number.isFinite(ms) ? ms : MAX_TIMER_MS));

/**
 * The wait before the next attempt: the server's `retry:` when it sent one (at least MIN_RETRY_MS), else
 * initialDelayMs, times factor per attempt that failed already, capped at maxDelayMs, with jitter that only
 * lengthens it (the server's retry is a floor the spec says to respect). Never past the timer maximum.
 */
export function reconnectWait(
  policy: Required<Pick<ReconnectOptions, 'initialDelayMs' | 'maxDelayMs' | 'factor'>>,
  retry: number | undefined,
  failures: number,
): number {
  const base = retry === undefined ? clamp(policy.initialDelayMs, 0) : clamp(retry, MIN_RETRY_MS);
  const grown = Math.min(policy.maxDelayMs, base * policy.factor ** failures);
  return clamp(Math.max(base, Math.round(grown * (1 + Math.random() * 0.2))), 0);
}

/**
 * The event ids seen most recently, at most `capacity` of them, for dropping events a resumed stream replays:
 * a stream may live for days, so every id cannot be kept. The caller passes ids of its own (see ownCopy),
 * never slices of the event text that carried them (a slice keeps that whole text alive).
 */
export class RecentIds {
  readonly #capacity: number;
  readonly #ids = new Set<string>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#ids.size;
  }

  /** Records `id`; false when it was seen already (a duplicate). */
  add(id: string): boolean {
    if (this.#ids.has(id)) return false;
    this.#ids.add(id);
    // A Set iterates in insertion order: its first id is the oldest.
    if (this.#ids.size > this.#capacity) this.#ids.delete(this.#ids.values().next().value!);
    return true;
  }

  clear(): void {
    this.#ids.clear();
  }
}

/** A string that shares no memory with the text it was cut from (V8 makes slices of 13 characters or more). */
export function ownCopy(text: string): string {
  return text.length < 13 ? text : Buffer.from(text, 'utf8').toString('utf8');
}

interface EventStreamHandlers {
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
    // Whatever the handlers make of the server's bytes, a throw must fail this stream, never escape the
    // listener (it would end the process, and Node's report would print the configured URL).
    try {
      core.write(chunk, sink);
    } catch (err) {
      res.destroy(new Error(`the stream could not be read: ${redact((err as Error).message)}`));
    }
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

/** What remoteRequest sends. `longLived`: a POST whose response stays open (a listen stream), on the stream agent. */
interface RemoteRequest {
  method: string;
  url?: URL;
  headers: Record<string, string>;
  body?: string | undefined;
  longLived?: boolean;
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
 *
 * With `auth`, every request carries the session's token (and for a DPoP-bound one a fresh proof, the server's
 * nonce kept from its answers; a 401 use_dpop_nonce is sent once more with the new one); a 401 (or a 403
 * insufficient_scope) signs in (or refreshes) and the request is sent again, at most MAX_SIGN_INS_PER_REQUEST
 * times (then AUTH_SCOPE_LOOP).
 * Without it, a 401 is AUTH_REQUIRED with the server's challenge.
 */
export async function remoteRequest(
  remote: RemoteSettings,
  name: string,
  request: RemoteRequest,
  track?: (req: http.ClientRequest) => void,
): Promise<http.IncomingMessage> {
  // Credentials given in an Authorization header are the caller's: no sign-in takes their place, and a 401 says
  // they were refused (not that none were given).
  const given = Object.keys(request.headers).some((key) => key.toLowerCase() === 'authorization');
  const auth = given ? undefined : remote.auth;
  const url = request.url ?? remote.url;
  let nonceRetried = false;
  for (let signIns = 0; ; signIns++) {
    const headers = { ...request.headers };
    const sent = auth === undefined ? (given || remote.bearer === undefined ? undefined : `Bearer ${await remote.bearer()}`) : await auth.header();
    if (sent !== undefined) headers.authorization = sent;
    // A DPoP-bound token goes with a fresh proof of this request (RFC 9449 §7).
    const proof = auth?.proof(request.method, url);
    if (proof !== undefined) headers.dpop = proof;
    const res = await sendRequest(remote, name, { ...request, headers }, track);
    const fresh = proof !== undefined && auth!.noteNonce(url, res.headers['dpop-nonce']);
    const challenge = authChallenge(res.headers['www-authenticate']);
    // The server wants its nonce in the proof (RFC 9449 §9): once more with it, no sign-in.
    if (res.statusCode === 401 && fresh && challenge?.params.error === 'use_dpop_nonce' && !nonceRetried) {
      nonceRetried = true;
      res.resume();
      signIns--;
      continue;
    }
    const refused = res.statusCode === 401 || (res.statusCode === 403 && challenge?.params.error === 'insufficient_scope');
    if (!refused) return res;
    if (auth === undefined) {
      if (res.statusCode === 403) return res;
      res.resume();
      const why = given
        ? `"${name}" refused the credentials given in the Authorization header (HTTP 401); no sign-in is tried in their place`
        : `"${name}" requires authorization (HTTP 401): connect with \`auth\` to sign in`;
      throw new ConnectionError('AUTH_REQUIRED', why, { status: 401, challenge });
    }
    res.resume();
    if (signIns >= MAX_SIGN_INS_PER_REQUEST) {
      throw new ConnectionError(
        'AUTH_SCOPE_LOOP',
        `"${name}" still refused the request (HTTP ${res.statusCode}${challenge?.params.error ? ` ${challenge.params.error}` : ''}) after ${signIns} sign-ins`,
        { status: res.statusCode, challenge },
      );
    }
    await auth.refused(res.statusCode!, challenge, sent);
  }
}

/** One HTTP request of a remote channel, as remoteRequest describes, without the sign-in. */
function sendRequest(
  remote: RemoteSettings,
  name: string,
  request: RemoteRequest,
  track?: (req: http.ClientRequest) => void,
): Promise<http.IncomingMessage> {
  const url = request.url ?? remote.url;
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const send = (retried: boolean): void => {
      const agent = request.method === 'GET' || request.longLived === true ? remote.streamAgent : remote.agent;
      const req = transport.request(url, {
        method: request.method,
        headers: request.headers,
        agent,
        ...(remote.socketPath === undefined ? {} : { socketPath: remote.socketPath }),
      });
      if (request.method === 'GET') req.setTimeout(remote.idleMs, () => req.destroy(new Error(`no answer for ${remote.idleMs} ms`)));
      track?.(req);
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        resolve(res);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (!retried && !answered && req.reusedSocket && !req.destroyed && err.code === 'ECONNRESET') return send(true);
        reject(new ConnectionError('HTTP_STATUS', `cannot reach "${name}": ${remote.scrub(redact(err.message))}`, { cause: err }));
      });
      req.end(request.body);
    };
    send(false);
  });
}
