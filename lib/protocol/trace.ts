/*
 * W3C trace context in MCP requests: the 2026-07-28 revision carries `traceparent`, `tracestate` and `baggage` in
 * a request's `_meta` (SEP-414), so that a trace runs from a host through serve into a server. Spans go through
 * @opentelemetry/api, an optional peer: loaded once when something asks for tracing and installed, a no-op when
 * the host registers no SDK, and nothing at all (no import, no cost) when it is not installed.
 */
import { isObject } from '../jsonrpc.js';

type Api = typeof import('@opentelemetry/api');
type Span = import('@opentelemetry/api').Span;

/** The trace context members of `_meta` (and their HTTP headers, of the same names). */
const TRACE_KEYS = ['traceparent', 'tracestate', 'baggage'] as const;

let loaded: Promise<Api | undefined> | undefined;
let api: Api | undefined;

/** Loads @opentelemetry/api once; undefined when it is not installed. */
export function loadTraceApi(): Promise<Api | undefined> {
  loaded ??= import('@opentelemetry/api').then(
    (module) => {
      api = module;
      return module;
    },
    () => undefined,
  );
  return loaded;
}

/** The API once loaded (see loadTraceApi), else undefined. */
export function traceApi(): Api | undefined {
  return api;
}

type Json = Record<string, unknown>;

const getter = {
  keys: (carrier: Json) => Object.keys(carrier),
  get: (carrier: Json, key: string) => (typeof carrier[key] === 'string' ? (carrier[key] as string) : undefined),
};
const setter = {
  set: (carrier: Json, key: string, value: string) => {
    carrier[key] = value;
  },
};

/**
 * `params` with the active context's trace headers in its `_meta` (when a span is active and `_meta` has no
 * traceparent of its own); `params` itself otherwise.
 */
export function withActiveTrace(params: unknown): unknown {
  if (api === undefined || (params !== undefined && !isObject(params))) return params;
  const active = api.context.active();
  if (api.trace.getSpanContext(active) === undefined) return params;
  const own = (params ?? {}) as Json;
  const meta: Json = isObject(own._meta) ? { ...own._meta } : {};
  if (typeof meta.traceparent === 'string') return params;
  api.propagation.inject(active, meta, setter);
  return { ...own, _meta: meta };
}

/**
 * Whether a host has registered a tracer provider (an SDK). Without one every span is the API's no-op and
 * carries its parent's context unchanged, so none is made: the request goes on as it came, for no work.
 */
function recording(spanApi: Api): boolean {
  const provider = spanApi.trace.getTracerProvider();
  return !(provider instanceof spanApi.ProxyTracerProvider) || provider.getDelegateTracer('mcp-frame') !== undefined;
}

/** A span begun for one request, and the request's params with the span's context in `_meta` for the next hop. */
export interface RequestSpan {
  params: Json | undefined;
  end(error?: { code?: number; type?: string }): void;
}

/**
 * Begins a span for request `method` (a child of the context in `params._meta`, else of the active one), with the
 * attributes OpenTelemetry's semantic conventions give MCP, and puts its context in the params it returns.
 * Undefined when no API is loaded. No argument, result or header value becomes an attribute.
 */
export function startRequestSpan(
  method: string,
  params: Json | undefined,
  kind: 'server' | 'client',
  attributes: Record<string, string | number | undefined>,
): RequestSpan | undefined {
  if (api === undefined || !recording(api)) return undefined;
  const meta: Json = params !== undefined && isObject(params._meta) ? { ...params._meta } : {};
  const parent = typeof meta.traceparent === 'string' ? api.propagation.extract(api.context.active(), meta, getter) : api.context.active();
  const tool = method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined;
  const prompt = method === 'prompts/get' && typeof params?.name === 'string' ? params.name : undefined;
  const target = tool ?? prompt;
  const attrs: Record<string, string | number> = { 'mcp.method.name': method };
  if (tool !== undefined) {
    attrs['gen_ai.tool.name'] = tool;
    attrs['gen_ai.operation.name'] = 'execute_tool';
  }
  if (prompt !== undefined) attrs['gen_ai.prompt.name'] = prompt;
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) attrs[key] = value;
  // Got for each span, never kept: a proxy tracer keeps the provider it first found, and a host may register another.
  const span: Span = api.trace
    .getTracer('mcp-frame')
    .startSpan(
      target === undefined ? method : `${method} ${target}`,
      { kind: kind === 'server' ? api.SpanKind.SERVER : api.SpanKind.CLIENT, attributes: attrs },
      parent,
    );
  // The span's context replaces the caller's for the next hop; with no propagator registered (no SDK), nothing is
  // injected and the caller's own trace headers go on as they came.
  const carrier: Json = {};
  api.propagation.inject(api.trace.setSpan(parent, span), carrier, setter);
  let out = params;
  if (typeof carrier.traceparent === 'string') {
    for (const key of TRACE_KEYS) delete meta[key];
    Object.assign(meta, carrier);
    out = params === undefined ? { _meta: meta } : { ...params, _meta: meta };
  }
  const spanApi = api;
  return {
    params: out,
    end(error) {
      // The code and a type, never the message (a server's text may quote the arguments).
      if (error !== undefined) {
        if (error.code !== undefined) span.setAttribute('rpc.jsonrpc.error_code', error.code);
        span.setAttribute('error.type', error.type ?? (error.code === undefined ? 'error' : String(error.code)));
        span.setStatus({ code: spanApi.SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}
