// What serve shows of itself: Prometheus metrics scraped before and after calls, OpenTelemetry spans (the SDK's
// in-memory exporter) from a host through serve and a gateway into a server that echoes the _meta it got, and
// the JSON log, every line of it parsed.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { checkOptions } from '../../lib/serve/options.js';
import type { ServerConfig } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import type { Connection } from '../../lib/client/connection.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { MCP_HEADERS, rawRequest } from '../helpers/raw-http.js';
import { INIT } from '../helpers/served.js';
import { within } from '../helpers/poll.js';

const PEER = (name: string): ServerConfig => ({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name] });
const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };
const ONE = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, 'solo'] };

/** The value of one sample of a Prometheus text scrape (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) got[k!] = v!;
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return 0;
}

describe('serve: metrics, traces and logs', function () {
  this.timeout(30_000);
  let served: ServeHandle | undefined;
  const clients: Connection[] = [];
  let log: string[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await served?.close();
    served = undefined;
  });

  async function start(target: Record<string, ServerConfig> | ServerConfig, options: ServeOptions = {}): Promise<ServeHandle> {
    log = [];
    served = await serve(target as never, { log: (line) => log.push(line), ...options });
    return served;
  }

  async function client(url: string, protocolVersion = '2025-11-25', headers?: Record<string, string>): Promise<Connection> {
    const c = await connect({ type: 'http', url, ...(headers === undefined ? {} : { headers }) }, { protocolVersion });
    clients.push(c);
    return c;
  }

  const scrape = async (url: string, headers: Record<string, string> = {}): Promise<string> => {
    const res = await rawRequest(url, { headers });
    expect(res.status, res.body).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  it('counts requests by method, tool, era and outcome, per server behind a gateway, with histograms that match', async () => {
    const g = await start({ a: PEER('a'), b: PEER('b') }, { metrics: true });
    const metrics = g.url!.replace('/mcp', '/metrics');
    const before = await scrape(metrics);
    expect(sample(before, 'mcp_frame_requests_total', { method: 'tools/call', tool: 'a__echo' })).to.equal(0);
    const c = await client(g.url!);
    // Names are labels once the server listed them (a host lists before it calls).
    await c.request('tools/list');
    for (let i = 0; i < 3; i++) await c.request('tools/call', { name: 'a__echo', arguments: { text: String(i) } });
    await c.request('tools/call', { name: 'made-up-name', arguments: {} }).catch(() => undefined);
    const modern = await client(g.url!, '2026-07-28');
    await modern.request('tools/call', { name: 'b__echo', arguments: { text: 'm' } });
    const after = await scrape(metrics);
    const echo = { method: 'tools/call', tool: 'a__echo', era: 'legacy', outcome: 'ok' };
    expect(sample(after, 'mcp_frame_requests_total', echo)).to.equal(3);
    expect(sample(after, 'mcp_frame_request_duration_seconds_count', echo)).to.equal(3);
    expect(sample(after, 'mcp_frame_request_duration_seconds_bucket', { ...echo, le: '+Inf' })).to.equal(3);
    // A name the client made up is no label: it counts under tool "".
    expect(sample(after, 'mcp_frame_requests_total', { method: 'tools/call', tool: '', era: 'legacy', outcome: 'error' })).to.equal(1);
    expect(after).to.not.include('made-up-name');
    expect(sample(after, 'mcp_frame_requests_total', { method: 'tools/call', tool: 'b__echo', era: 'modern', outcome: 'ok' })).to.equal(1);
    expect(sample(after, 'mcp_frame_upstream_requests_total', { upstream: 'a', method: 'tools/call', outcome: 'ok' })).to.equal(3);
    expect(sample(after, 'mcp_frame_upstream_requests_total', { upstream: 'b', method: 'tools/call', outcome: 'ok' })).to.equal(1);
    expect(sample(after, 'mcp_frame_upstream_request_duration_seconds_count', { upstream: 'a', method: 'tools/call', outcome: 'ok' })).to.equal(3);
    expect(sample(after, 'mcp_frame_sessions_open', { transport: 'streamable' })).to.equal(1);
    expect(sample(after, 'mcp_frame_sessions_opened_total', { transport: 'streamable' })).to.equal(1);
    // Two servers, each run once for the session and the modern requests alike.
    expect(sample(after, 'mcp_frame_children_alive')).to.equal(2);
    expect(sample(after, 'mcp_frame_upstream_up', { upstream: 'a' })).to.equal(1);
    expect(sample(after, 'mcp_frame_http_bytes_total', { direction: 'in' })).to.be.greaterThan(
      sample(before, 'mcp_frame_http_bytes_total', { direction: 'in' }),
    );
    expect(sample(after, 'mcp_frame_http_bytes_total', { direction: 'out' })).to.be.greaterThan(0);
    // A server that dies: its children and restarts count.
    await c.request('tools/call', { name: 'a__die', arguments: {} }).catch(() => undefined);
    await within(5000, 'the restart counted', async () =>
      sample(await scrape(metrics), 'mcp_frame_upstream_restarts_total', { upstream: 'a' }) === 0 ? undefined : true,
    );
    const died = await scrape(metrics);
    expect(sample(died, 'mcp_frame_children_ended_total', { how: 'died' })).to.equal(1);
    expect(sample(died, 'mcp_frame_upstream_restarts_total', { upstream: 'a' })).to.equal(1);
    // No session id, token or argument in any label.
    const ids = /[0-9a-f]{8}-[0-9a-f]{4}-/;
    expect(died).to.not.match(ids);
  });

  it('keeps /metrics behind the token, counts refusals by reason, and serves it on a loopback port of its own without one', async () => {
    const token = 'metrics-token-0123456789abcdef';
    const s = await start(ONE, { metrics: true, token });
    const metrics = s.url!.replace('/mcp', '/metrics');
    expect((await rawRequest(metrics)).status).to.equal(401);
    expect((await rawRequest(metrics, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status).to.equal(401);
    const text = await scrape(metrics, { authorization: `Bearer ${token}` });
    expect(sample(text, 'mcp_frame_auth_refusals_total', { reason: 'missing' })).to.equal(1);
    expect(sample(text, 'mcp_frame_auth_refusals_total', { reason: 'invalid' })).to.equal(1);
    expect(text).to.not.include(token);
    await s.close();
    const own = await start(ONE, { metricsPort: 0, metrics: true, token });
    expect(own.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const c = await client(own.url!, '2025-11-25', { Authorization: `Bearer ${token}` });
    await c.request('tools/list');
    await c.request('tools/call', { name: 'echo', arguments: { text: 'x' } });
    const counted = await scrape(own.metricsUrl!);
    // The Host rule of /mcp: a DNS-rebound name is refused, the loopback names are not.
    const port = new URL(own.metricsUrl!).port;
    const rebound = await rawRequest(own.metricsUrl!, { headers: { host: `rebind.example:${port}` } });
    expect(rebound.status).to.equal(403);
    expect(rebound.body).to.not.include('mcp_frame_');
    expect((await rawRequest(own.metricsUrl!, { headers: { host: `localhost:${port}` } })).status).to.equal(200);
    expect(sample(counted, 'mcp_frame_requests_total', { method: 'tools/call', tool: 'echo', era: 'legacy', outcome: 'ok' })).to.equal(1);
    expect(sample(counted, 'mcp_frame_children_alive')).to.equal(1);
  });

  it('serves the metrics port on the address --metrics-host names, with the process and runtime metrics, behind the Host check', async () => {
    const s = await start(ONE, { metricsPort: 0, metricsHost: '127.0.0.2', metrics: true });
    expect(s.metricsUrl).to.match(/^http:\/\/127\.0\.0\.2:\d+\/metrics$/);
    const text = await scrape(s.metricsUrl!);
    // prom-client's default collectors, beside serve's own.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'mcp_frame_sessions_open'])
      expect(text, name).to.match(new RegExp(`^${name}(\\{[^}]*\\})? `, 'm'));
    const port = new URL(s.metricsUrl!).port;
    expect((await rawRequest(s.metricsUrl!, { headers: { host: `scraper.example:${port}` } })).status).to.equal(403);
    await s.close();
    // A registry given is the host's: serve adds no collector of its own to it.
    const { Registry } = await import('prom-client');
    const given = new Registry();
    const mine = await start(ONE, { metrics: given });
    expect(await given.metrics()).to.include('mcp_frame_sessions_open');
    expect(await given.metrics()).to.not.include('process_cpu_user_seconds_total');
    await mine.close();
    expect(() => checkOptions({ metricsHost: '0.0.0.0' })).to.throw(TypeError, /metricsHost is the address of the metricsPort listener/);
  });

  it("takes a tool label only from the server's list: made-up names the MCP SDK answers with isError are no labels, nor log lines", async () => {
    const g = await start(EVERYTHING, { metrics: true, logLevel: 'debug' });
    const c = await client(g.url!);
    const listed = ((await c.request('tools/list')) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    await c.request('tools/call', { name: 'echo', arguments: { message: 'hi' } });
    for (let i = 0; i < 200; i++) {
      const answer = (await c.request('tools/call', { name: `made-up-${i}\nforged log line`, arguments: {} }).catch((e: Error) => e)) as {
        isError?: boolean;
      };
      if (i === 0) expect(answer.isError, 'the SDK answers an unknown tool as a tool error').to.equal(true);
    }
    const text = await scrape(g.url!.replace('/mcp', '/metrics'));
    const labels = new Set([...text.matchAll(/^mcp_frame_requests_total\{[^}]*tool="([^"]*)"/gm)].map((m) => m[1]));
    expect([...labels].filter((l) => l !== '' && !listed.includes(l!))).to.deep.equal([]);
    expect(labels.has('echo')).to.equal(true);
    expect(sample(text, 'mcp_frame_requests_total', { method: 'tools/call', tool: '', outcome: 'tool_error' })).to.equal(200);
    expect(log.filter((l) => l.includes('\nforged'))).to.deep.equal([]);
  });

  it('logs one JSON object a line, a line per request at debug, redacted', async () => {
    const token = 'json-log-token-0123456789abcdef';
    const s = await start({ a: PEER('a'), b: PEER('b') }, { logFormat: 'json', logLevel: 'debug', token });
    const c = await client(s.url!, '2025-11-25', { Authorization: `Bearer ${token}` });
    await c.request('tools/list');
    await c.request('tools/call', { name: 'a__echo', arguments: { text: `the token is ${token}` } });
    await rawRequest(s.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    await c.close();
    clients.length = 0;
    await s.close();
    const lines = log.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of lines) {
      expect(line.time).to.match(/^\d{4}-\d\d-\d\dT/);
      expect(['debug', 'info', 'warn', 'error']).to.include(line.level);
      expect(line.event).to.be.a('string');
      expect(line.msg).to.be.a('string');
    }
    const request = lines.find((l) => l.event === 'request' && l.tool === 'a__echo');
    expect(request).to.deep.include({ level: 'debug', method: 'tools/call', era: 'legacy', outcome: 'ok' });
    expect(request!.duration_ms).to.be.a('number');
    expect(request!.session).to.match(/^[0-9a-f]{8}$/);
    expect(lines.find((l) => l.event === 'upstream.request' && l.upstream === 'a')).to.deep.include({ method: 'tools/call', outcome: 'ok' });
    expect(lines.find((l) => l.event === 'refused')).to.deep.include({ level: 'info' });
    expect(lines.some((l) => l.event === 'session.started')).to.equal(true);
    expect(log.join('\n')).to.not.include(token);
  });

  describe('traces', () => {
    const exporter = new InMemorySpanExporter();
    before(() => {
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      trace.setGlobalTracerProvider(provider);
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    });
    after(() => {
      trace.disable();
      context.disable();
      propagation.disable();
    });
    beforeEach(() => exporter.reset());

    it('carries one trace from a host span through serve and the gateway into the server, in _meta', async () => {
      const g = await start({ a: PEER('a'), b: PEER('b') });
      const c = await client(g.url!);
      const tracer = trace.getTracer('host');
      const { traceId, text } = await tracer.startActiveSpan('host work', async (span) => {
        const result = (await c.request('tools/call', { name: 'a__meta', arguments: { secret: 'argument-value' } })) as {
          content: Array<{ text: string }>;
        };
        span.end();
        return { traceId: span.spanContext().traceId, text: result.content[0]!.text };
      });
      const meta = JSON.parse(text) as { traceparent?: string };
      expect(meta.traceparent).to.match(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      const spans = exporter.getFinishedSpans();
      const byName = new Map(spans.map((s) => [s.name, s]));
      const host = byName.get('host work')!;
      const server = byName.get('tools/call a__meta')!;
      const upstream = byName.get('tools/call meta')!;
      expect(server.kind).to.equal(1); // SERVER
      expect(upstream.kind).to.equal(2); // CLIENT
      expect(server.parentSpanContext?.spanId).to.equal(host.spanContext().spanId);
      expect(upstream.parentSpanContext?.spanId).to.equal(server.spanContext().spanId);
      // The server got the gateway's call span as its parent.
      expect(meta.traceparent!.split('-')[2]).to.equal(upstream.spanContext().spanId);
      for (const s of [server, upstream]) expect(s.spanContext().traceId).to.equal(traceId);
      expect(server.attributes).to.deep.include({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'a__meta', 'mcp.protocol.era': 'legacy' });
      expect(upstream.attributes).to.deep.include({ 'gen_ai.tool.name': 'meta', 'mcp.server.name': 'a' });
      expect(JSON.stringify(spans.map((s) => s.attributes))).to.not.include('argument-value');
    });

    it('takes the trace from an HTTP traceparent header, and marks a failed call an error', async () => {
      const s = await start(ONE);
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const init = await rawRequest(s.url!, { method: 'POST', headers: MCP_HEADERS, body: INIT });
      const session = init.headers['mcp-session-id'] as string;
      const res = await rawRequest(s.url!, {
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-session-id': session, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'no-such-tool', arguments: {} } }),
      });
      expect(res.status).to.equal(200);
      const span = exporter.getFinishedSpans().find((x) => x.name === 'tools/call no-such-tool')!;
      expect(span.spanContext().traceId).to.equal(traceId);
      expect(span.parentSpanContext?.spanId).to.equal('00f067aa0ba902b7');
      expect(span.status.code).to.equal(2); // ERROR
      expect(span.attributes['rpc.jsonrpc.error_code']).to.equal(-32602);
    });
  });
});
