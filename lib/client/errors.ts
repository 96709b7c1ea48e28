/*
 * The client's errors: ConnectionError, thrown by connect(), Connection and the channels under it.
 */
import type { AuthChallenge } from '../protocol/www-authenticate.js';

export type { AuthChallenge };

/** Why a connection to a server failed or ended. Branch on `code`. */
export type ConnectionErrorCode =
  /** The command could not be started (not found, not executable, bad cwd). */
  | 'SPAWN_FAILED'
  /** The server process exited (before answering, or while a request was pending). */
  | 'EXITED'
  /** The server closed its output (a process its stdout) while a request was pending; no answer can come. */
  | 'ENDED'
  /** A request (or the handshake) took longer than its timeout. */
  | 'TIMEOUT'
  /** A request was aborted through its AbortSignal. */
  | 'ABORTED'
  /** The connection was closed by this side. */
  | 'CLOSED'
  /** The server did not read what was sent to it, and the send queue is full. */
  | 'SEND_QUEUE_FULL'
  /** A response that is not JSON-RPC 2.0 (an `error` that is not an error object, neither result nor error). */
  | 'INVALID_RESPONSE'
  /** An HTTP status the transport cannot go on from (with `status`), or a server that cannot be reached. */
  | 'HTTP_STATUS'
  /** A response stream broke before it carried an event id, so the request it owed cannot be resumed. */
  | 'STREAM_LOST'
  /** Resuming a stream failed `maxAttempts` times in a row; the connection is closed. */
  | 'GAVE_UP'
  /** The server ended the session (HTTP 404); requests in flight were not sent again. A new session follows. */
  | 'SESSION_EXPIRED'
  /** A modern server speaks none of this client's protocol versions (the message names both sides'). */
  | 'UNSUPPORTED_VERSION'
  /** Nothing answers on the local socket the config entry names. */
  | 'CONNECT_FAILED'
  /** The config entry names a transport this client does not speak. */
  | 'NOT_STDIO'
  /** The server answered the handshake (initialize) with an error. */
  | 'REFUSED'
  /** A modern server asks for input (sampling, elicitation, roots) that no onRequest handler answers. */
  | 'NO_HANDLER'
  /** A modern server still asked for input after MAX_INPUT_ROUNDS rounds of one request. */
  | 'INPUT_ROUNDS'
  /** The server requires authorization (HTTP 401) and no `auth` was given, or the flow cannot start (with `challenge`). */
  | 'AUTH_REQUIRED'
  /** The authorization server or the user refused the sign-in (an `error` in the redirect, a refused registration). */
  | 'AUTH_DENIED'
  /** The protected resource metadata names a resource that is not this server: refused before authorizing. */
  | 'AUTH_RESOURCE_MISMATCH'
  /** The authorization server's metadata or redirect names another issuer than the one asked. */
  | 'AUTH_ISSUER_MISMATCH'
  /** A request still refused after 3 sign-ins, or more sign-ins in a minute than allowed. */
  | 'AUTH_SCOPE_LOOP'
  /** The sign-in, or a request to the authorization server, took longer than allowed. */
  | 'AUTH_TIMEOUT'
  /** The token endpoint refused (invalid_grant, invalid_client, ...) or answered with no usable token. */
  | 'AUTH_TOKEN'
  /** The token endpoint could not refresh now (a 5xx, a 429, no OAuth error): the tokens are kept, with `status`. */
  | 'AUTH_UNAVAILABLE';

export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  readonly code: ConnectionErrorCode;
  /** The server's exit code and signal, for EXITED. */
  readonly exitCode: number | null | undefined;
  readonly signal: NodeJS.Signals | null | undefined;
  /** The last lines the server wrote to stderr, redacted and escaped for a terminal. */
  readonly stderr: string[];
  /** The HTTP status, for HTTP_STATUS and AUTH_REQUIRED. */
  readonly status: number | undefined;
  /** The server's Bearer challenge, for AUTH_REQUIRED. */
  readonly challenge: AuthChallenge | undefined;

  constructor(
    code: ConnectionErrorCode,
    message: string,
    details: {
      exitCode?: number | null;
      signal?: NodeJS.Signals | null;
      stderr?: string[];
      status?: number | undefined;
      challenge?: AuthChallenge | undefined;
      cause?: unknown;
    } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.stderr = details.stderr ?? [];
    this.status = details.status;
    this.challenge = details.challenge;
  }
}

/** How a channel ended: a process's exit code and signal; both null for a channel that is not a process. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}
