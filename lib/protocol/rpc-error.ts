/* A JSON-RPC error response as a rejection: what a client's request rejects with, and what a handler throws to answer with an error. */

/** A JSON-RPC error response, as a rejection: the response's code, message and data. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}
