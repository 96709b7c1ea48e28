/* JSON-RPC 2.0 message types, type guards and the validation FrameDecoder runs with `validate: true`. */

/** A request's id. */

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown> | unknown[];
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown> | unknown[];
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  result: unknown;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcErrorResponse;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;
export type JsonRpcBatch = JsonRpcMessage[];

type Obj = Record<string, unknown>;
/** A JSON object: not null, not an array. */
/** A request id (or progress token) as a map key: `1` and `"1"` are different ids. */
export const idKey = (id: unknown): string => `${typeof id}:${String(id)}`;

export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Obj, key: string): boolean => Object.hasOwn(o, key);
const isId = (v: unknown): v is JsonRpcId => typeof v === 'string' || typeof v === 'number';

/**
 * Why `msg` is not a JSON-RPC 2.0 request, notification or response, or undefined when it is one. A request has
 * a string `method` and a string or number `id`; a notification a `method` and no `id`; a response an `id`
 * (string, number or null) and exactly one of `result` and `error`, an `error` with an integer `code` and a
 * string `message`. `params`, where present, is an object or an array.
 */
export function jsonRpcProblem(msg: unknown): string | undefined {
  if (!isObject(msg)) return Array.isArray(msg) ? 'a batch inside a batch' : `not an object but ${msg === null ? 'null' : typeof msg}`;
  if (msg.jsonrpc !== '2.0') return '"jsonrpc" is not "2.0"';
  if (has(msg, 'method')) {
    if (typeof msg.method !== 'string') return '"method" is not a string';
    if (has(msg, 'id') && !isId(msg.id)) return 'a request\'s "id" is not a string or number';
    if (has(msg, 'params') && typeof msg.params !== 'object') return '"params" is not an object or array';
    if (msg.params === null) return '"params" is null';
    return undefined;
  }
  if (!has(msg, 'id')) return 'neither "method" nor "id"';
  if (!isId(msg.id) && msg.id !== null) return 'a response\'s "id" is not a string, number or null';
  const hasResult = has(msg, 'result');
  const hasError = has(msg, 'error');
  if (hasResult === hasError) return hasResult ? 'both "result" and "error"' : 'neither "result" nor "error"';
  if (hasError) {
    const error = msg.error;
    if (!isObject(error)) return '"error" is not an object';
    if (!Number.isInteger(error.code)) return '"error.code" is not an integer';
    if (typeof error.message !== 'string') return '"error.message" is not a string';
  }
  return undefined;
}

export function isJsonRpcMessage(msg: unknown): msg is JsonRpcMessage {
  return jsonRpcProblem(msg) === undefined;
}

export function isRequest(msg: unknown): msg is JsonRpcRequest {
  return isJsonRpcMessage(msg) && 'method' in msg && 'id' in msg;
}

export function isNotification(msg: unknown): msg is JsonRpcNotification {
  return isJsonRpcMessage(msg) && 'method' in msg && !('id' in msg);
}

export function isResponse(msg: unknown): msg is JsonRpcResponse {
  return isJsonRpcMessage(msg) && !('method' in msg);
}

export function isErrorResponse(msg: unknown): msg is JsonRpcErrorResponse {
  return isResponse(msg) && 'error' in msg;
}

/** Why a frame (one message, or a batch of them) is not JSON-RPC 2.0; a batch must not be empty. */
export function frameProblem(frame: unknown): string | undefined {
  if (!Array.isArray(frame)) return jsonRpcProblem(frame);
  if (frame.length === 0) return 'an empty batch';
  for (let i = 0; i < frame.length; i++) {
    const problem = jsonRpcProblem(frame[i]);
    if (problem !== undefined) return `batch element ${i}: ${problem}`;
  }
  return undefined;
}

/** A JSON-RPC error response (a null id when the request's is not known). */
export function rpcError(
  id: unknown,
  code: number,
  message: string,
  data?: unknown,
): { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string; data?: unknown } } {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message, ...(data === undefined ? {} : { data }) } };
}
