/*
 * A request refused: the HTTP status to answer with, why, and the JSON-RPC error its body carries. One type for
 * every refusal of serve's (the guard's, the sign-in's, a session's, the start gate's, the front's), thrown or
 * returned, and written in one place.
 */
import { rpcError } from '../jsonrpc.js';
import { CODES } from './codes.js';

interface RefusalOptions {
  /** Headers of the answer (`Allow`, `Retry-After`, `WWW-Authenticate`). */
  headers?: Record<string, string>;
  /** The JSON-RPC error code of the body. @defaultValue CODES.serverError */
  code?: number;
  /** The id of the request refused, when the body parsed as one. */
  id?: unknown;
  /** The JSON-RPC error's data. */
  data?: unknown;
}

export class Refusal extends Error {
  override readonly name = 'Refusal';
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly code: number;
  readonly id: unknown;
  readonly data: unknown;

  constructor(status: number, reason: string, options: RefusalOptions = {}) {
    super(reason);
    this.status = status;
    this.headers = options.headers ?? {};
    this.code = options.code ?? CODES.serverError;
    this.id = options.id;
    this.data = options.data;
  }

  /** Why, as the answer's error message says it. */
  get reason(): string {
    return this.message;
  }

  /** The same refusal, of request `id`. */
  of(id: unknown): Refusal {
    return new Refusal(this.status, this.message, { headers: { ...this.headers }, code: this.code, id, data: this.data });
  }

  /** The answer's body: a JSON-RPC error response. */
  body(): ReturnType<typeof rpcError> {
    return rpcError(this.id, this.code, this.message, this.data);
  }
}
