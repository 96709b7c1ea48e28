/*
 * The 2026-07-28 revision (the "modern" era): no handshake, no session; every request carries its protocol
 * version, the client's identity and capabilities in `_meta`, and over HTTP mirrors its method and name in
 * headers. What the session and the HTTP channel need of it lives here.
 */
import { isObject } from '../jsonrpc.js';
import { CODES } from './codes.js';

/** The modern revisions this client speaks, newest first. */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];

/** Which era a server speaks: `modern` (2026-07-28 on, per-request metadata) or `legacy` (the initialize handshake). */
export type ProtocolEra = 'modern' | 'legacy';

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
/** Which subscriptions/listen stream a notification belongs to: the id of the request that opened it. */
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** The log level a modern request asks for (the modern era has no logging/setLevel). */
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

/**
 * The requests a server may ask a client (a legacy server as its own requests, a modern one as inputRequests),
 * and the client capability that says it can answer each.
 */
export const INPUT_CAPABILITIES: Readonly<Record<string, string>> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

/** JSON-RPC error codes only a modern server sends: each one says the server is modern. */
export const MODERN_ERRORS = {
  headerMismatch: CODES.headerMismatch,
  missingRequiredClientCapability: CODES.missingRequiredClientCapability,
  unsupportedProtocolVersion: CODES.unsupportedProtocolVersion,
} as const;

export function isModernError(code: unknown): boolean {
  return (
    code === MODERN_ERRORS.headerMismatch ||
    code === MODERN_ERRORS.missingRequiredClientCapability ||
    code === MODERN_ERRORS.unsupportedProtocolVersion
  );
}

/** True for a revision of the modern era. */
export function isModernVersion(version: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= '2026-07-28';
}

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * True when a request is written the modern way: its `_meta` names a protocol version (whatever its value; no
 * legacy request carries that key), or its MCP-Protocol-Version header names a modern revision.
 */
export function isEnvelopeRequest(msg: unknown, header: unknown): boolean {
  const params = isObject(msg) ? msg.params : undefined;
  const meta = isObject(params) ? params._meta : undefined;
  return (isObject(meta) && META_PROTOCOL_VERSION in meta) || (typeof header === 'string' && isModernVersion(header));
}

/**
 * Why a modern request's `_meta` envelope is malformed (the revision's -32602), or undefined: `_meta` must be an
 * object with a protocol version string and a client capabilities object; client info, when present, an object;
 * a log level, when present, one of the levels.
 */
export function envelopeProblem(msg: unknown): string | undefined {
  const params = isObject(msg) ? msg.params : undefined;
  if (params !== undefined && !isObject(params)) return 'params is not an object';
  const meta = isObject(params) ? params._meta : undefined;
  if (meta === undefined) return `params._meta is missing (a modern request carries ${META_PROTOCOL_VERSION} and ${META_CLIENT_CAPABILITIES} there)`;
  if (!isObject(meta)) return 'params._meta is not an object';
  if (typeof meta[META_PROTOCOL_VERSION] !== 'string') return `_meta["${META_PROTOCOL_VERSION}"] is missing or not a string`;
  if (!isObject(meta[META_CLIENT_CAPABILITIES])) return `_meta["${META_CLIENT_CAPABILITIES}"] is missing or not an object`;
  if (META_CLIENT_INFO in meta && !isObject(meta[META_CLIENT_INFO])) return `_meta["${META_CLIENT_INFO}"] is not an object`;
  if (META_LOG_LEVEL in meta && !LOG_LEVELS.includes(meta[META_LOG_LEVEL] as string)) return `_meta["${META_LOG_LEVEL}"] is not a log level`;
  return undefined;
}

/** The newest of `offered` this client speaks, or undefined. */
export function pickModernVersion(offered: unknown): string | undefined {
  if (!Array.isArray(offered)) return undefined;
  return MODERN_PROTOCOL_VERSIONS.find((v) => offered.includes(v));
}

export interface ClientMeta {
  protocolVersion: string;
  clientInfo: Record<string, unknown>;
  capabilities: Record<string, unknown>;
  /** The log level asked for on each request, when one was set. */
  logLevel?: string;
}

/**
 * `params` with the modern request metadata in its `_meta`: the caller's own `_meta` members are kept (a
 * progress token, trace context), and the three protocol keys are ours. Params that are not an object are
 * returned as they are.
 */
export function withModernMeta(params: unknown, meta: ClientMeta): unknown {
  if (params !== undefined && !isObject(params)) return params;
  const own = params === undefined ? {} : params;
  const userMeta = isObject(own._meta) ? own._meta : {};
  return {
    ...own,
    _meta: {
      ...userMeta,
      [META_PROTOCOL_VERSION]: meta.protocolVersion,
      [META_CLIENT_INFO]: meta.clientInfo,
      [META_CLIENT_CAPABILITIES]: meta.capabilities,
      ...(meta.logLevel === undefined ? {} : { [META_LOG_LEVEL]: meta.logLevel }),
    },
  };
}

/** A header value as the spec's Value Encoding has it: plain visible ASCII as is, anything else `=?base64?...?=`. */
export function headerValue(value: string): string {
  const plain = /^[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?$/.test(value) && !(value.startsWith('=?base64?') && value.endsWith('?='));
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** The methods whose `Mcp-Name` header mirrors a param, and which param (the tasks extension's, SEP-2663, its task's id). */
const NAMED: Record<string, 'name' | 'uri' | 'taskId'> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** The request headers a modern POST carries for `msg`: MCP-Protocol-Version, Mcp-Method and, where it applies, Mcp-Name. */
export function modernHeaders(msg: unknown, version: string): Record<string, string> {
  const headers: Record<string, string> = { 'mcp-protocol-version': version };
  if (!isObject(msg) || typeof msg.method !== 'string') return headers;
  headers['mcp-method'] = headerValue(msg.method);
  const key = NAMED[msg.method];
  const value = key !== undefined && isObject(msg.params) ? msg.params[key] : undefined;
  if (typeof value === 'string') headers['mcp-name'] = headerValue(value);
  return headers;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A header value back from the Base64 form (or as it is); undefined for a Base64 form that is malformed: not
 * padded, not canonical (stray bits), or not UTF-8 once decoded. Node's own decoder takes all of those silently,
 * and two spellings of one value must not pass a check that compares them.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (!value.startsWith('=?base64?') || !value.endsWith('?=') || value.length < 11) return value;
  const payload = value.slice(9, -2);
  if (payload.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(payload)) return undefined;
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.toString('base64') !== payload) return undefined;
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** The protocol version a request's `_meta` names, or undefined. */
export function metaVersion(msg: unknown): string | undefined {
  const params = isObject(msg) ? msg.params : undefined;
  const meta = isObject(params) ? params._meta : undefined;
  const version = isObject(meta) ? meta[META_PROTOCOL_VERSION] : undefined;
  return typeof version === 'string' ? version : undefined;
}

/**
 * Why a modern request's headers do not match its body (the spec's HeaderMismatch), or undefined: the
 * protocol version, the method and, for the named methods, the name, after Base64 decoding.
 */
export function headerMismatch(msg: Record<string, unknown>, headers: Record<string, string | string[] | undefined>): string | undefined {
  const expected = modernHeaders(msg, metaVersion(msg) ?? '');
  for (const [name, value] of Object.entries(expected)) {
    const got = headers[name];
    if (typeof got !== 'string') return `the ${name} header is missing`;
    const decoded = name === 'mcp-name' ? decodeHeaderValue(got) : got;
    const wanted = name === 'mcp-name' ? decodeHeaderValue(value)! : value;
    if (decoded === undefined) return `the ${name} header's Base64 form is malformed (it must be padded, canonical Base64 of UTF-8)`;
    if (decoded !== wanted)
      return `the ${name} header (${JSON.stringify(decoded.slice(0, 60))}) does not match the body (${JSON.stringify(wanted.slice(0, 60))})`;
  }
  return undefined;
}

/** The methods the 2026-07-28 revision removed: a modern request of one is answered -32601 (HTTP 404). */
export const REMOVED_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
]);

/**
 * What a server that answers modern clients for legacy servers declares to those servers: the questions it relays
 * to a modern client as input_required.
 */
export const RELAYED_CAPABILITIES: Readonly<Record<string, Record<string, never>>> = Object.freeze({ elicitation: {}, sampling: {}, roots: {} });

/** The modern keys of a request's `_meta`: what a legacy server is not sent. */
const MODERN_META_KEYS = [META_PROTOCOL_VERSION, META_CLIENT_INFO, META_CLIENT_CAPABILITIES, META_LOG_LEVEL];

/**
 * A modern request's metadata read, and its params without it (a `_meta` left with nothing is left out): the
 * client capabilities it declared, and whether it asked for log messages. Undefined for a request of the legacy
 * era (no protocol version in its `_meta`).
 */
export function takeModernMeta(
  params: unknown,
): { params: Record<string, unknown>; capabilities: Record<string, unknown>; logs: boolean } | undefined {
  if (!isObject(params) || !isObject(params._meta) || typeof params._meta[META_PROTOCOL_VERSION] !== 'string') return undefined;
  const meta = { ...params._meta };
  const capabilities = isObject(meta[META_CLIENT_CAPABILITIES]) ? (meta[META_CLIENT_CAPABILITIES] as Record<string, unknown>) : {};
  const logs = meta[META_LOG_LEVEL] !== undefined;
  for (const key of MODERN_META_KEYS) delete meta[key];
  const { _meta: _, ...rest } = params;
  return { params: Object.keys(meta).length === 0 ? rest : { ...rest, _meta: meta }, capabilities, logs };
}

/** Methods whose 2026-07-28 results carry cache hints. */
const CACHEABLE = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'server/discover']);

/**
 * A legacy result as the 2026-07-28 revision has results: `resultType: 'complete'`, and for the cacheable methods
 * the most careful cache hints (`ttlMs: 0`, `cacheScope: 'private'`) where it gives none.
 */
export function modernResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...result, resultType: result.resultType ?? 'complete' };
  if (CACHEABLE.has(method)) {
    out.ttlMs ??= 0;
    out.cacheScope ??= 'private';
  }
  return out;
}

/** A DiscoverResult made from an initialize result (a legacy server's, or a gateway's own). */
export function discoverFrom(init: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = {
    supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
    capabilities: isObject(init.capabilities) ? init.capabilities : {},
  };
  if (typeof init.instructions === 'string') result.instructions = init.instructions;
  if (isObject(init.serverInfo)) result._meta = { 'io.modelcontextprotocol/serverInfo': init.serverInfo };
  return modernResult('server/discover', result);
}
