/*
 * serve's Prometheus metrics (`--metrics`): a subscriber of serve's events that counts into a prom-client
 * registry, the field's client, an optional peer loaded only then. Names carry their unit and counters end in `_total`; every label
 * set is bounded: methods outside MCP's are `other`, a tool is named only once a server answered it as its own,
 * and never a session id, a token or an argument.
 */
import { missingPeer } from '../../errors.js';
import type { Telemetry } from './events.js';
import { methodLabel } from './requests.js';

/** A prom-client Registry, as serve uses one. */
export interface MetricsRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
}

type PromClient = typeof import('prom-client');
type Registry = import('prom-client').Registry;

/** prom-client, loaded now: a clear error naming it when it is not installed. */
async function loadPromClient(): Promise<PromClient> {
  return import('prom-client').catch((err: unknown) => {
    throw missingPeer('serve --metrics counts', 'prom-client', err);
  });
}

/** Seconds: from a fast in-process answer to a long tool call. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export interface MetricsSources {
  /** Sessions open now, by transport. */
  sessions(): Record<'streamable' | 'legacy' | 'socket', number>;
  /** Each server's state behind a gateway (1 up, 0 not), when there is one. */
  upstreams?(): Record<string, string>;
  /** Whether the store answers, with --store. */
  storeUp?(): Promise<boolean>;
}

/** The gauges read at each scrape from what serve knows now: sessions, the servers behind a gateway, the store. */
function sourceGauges(prom: PromClient, on: { registers: Registry[] }, sources: MetricsSources): void {
  new prom.Gauge({
    name: 'mcp_frame_sessions_open',
    help: 'Sessions open now, by transport.',
    labelNames: ['transport'],
    ...on,
    collect() {
      for (const [transport, n] of Object.entries(sources.sessions())) this.set({ transport }, n);
    },
  });
  if (sources.upstreams !== undefined) {
    const upstreams = sources.upstreams;
    new prom.Gauge({
      name: 'mcp_frame_upstream_up',
      help: 'Whether each server behind the gateway is up (1) or not (0), as last seen.',
      labelNames: ['upstream'],
      ...on,
      collect() {
        for (const [name, state] of Object.entries(upstreams())) this.set({ upstream: name }, state === 'up' ? 1 : 0);
      },
    });
  }
  if (sources.storeUp !== undefined) {
    const storeUp = sources.storeUp;
    new prom.Gauge({
      name: 'mcp_frame_store_up',
      help: 'Whether the replicas’ store answers (1) or not (0).',
      ...on,
      async collect() {
        this.set((await storeUp()) ? 1 : 0);
      },
    });
  }
}

/** Counts `telemetry`'s events into `given` (a new registry when not given): the registry to scrape. */
export async function prometheusMetrics(telemetry: Telemetry, sources: MetricsSources, given?: MetricsRegistry): Promise<MetricsRegistry> {
  const prom = await loadPromClient();
  const registry = (given as Registry | undefined) ?? new prom.Registry();
  // A registry of serve's own also holds the process's and the runtime's (memory, CPU, event loop lag, handles):
  // prom-client's default collectors, as every Node service exports them. A registry given is the host's to fill.
  if (given === undefined) prom.collectDefaultMetrics({ register: registry });
  const on = { registers: [registry] };
  sourceGauges(prom, on, sources);
  const counter = (name: string, help: string, labelNames: string[] = []) => new prom.Counter({ name, help, labelNames, ...on });
  const histogram = (name: string, help: string, labelNames: string[]) => new prom.Histogram({ name, help, labelNames, buckets: BUCKETS, ...on });
  const requests = counter('mcp_frame_requests_total', 'Requests answered (or lost) by the served server, by method, tool, era and outcome.', [
    'method',
    'tool',
    'era',
    'outcome',
  ]);
  const duration = histogram('mcp_frame_request_duration_seconds', 'Time from a request reaching the served server to its answer.', [
    'method',
    'tool',
    'era',
    'outcome',
  ]);
  const upstream = counter('mcp_frame_upstream_requests_total', 'Requests a gateway sent on to a server behind it, by server, method and outcome.', [
    'upstream',
    'method',
    'outcome',
  ]);
  const upstreamDuration = histogram('mcp_frame_upstream_request_duration_seconds', 'Time a server behind the gateway took to answer.', [
    'upstream',
    'method',
    'outcome',
  ]);
  const restarts = counter('mcp_frame_upstream_restarts_total', 'Servers behind the gateway started again after they failed or died.', ['upstream']);
  const opened = counter('mcp_frame_sessions_opened_total', 'Sessions opened, by transport.', ['transport']);
  const alive = new prom.Gauge({ name: 'mcp_frame_children_alive', help: 'Server processes serve has started that are running.', ...on });
  const started = new prom.Counter({ name: 'mcp_frame_children_started_total', help: 'Server processes started.', ...on });
  const ended = counter('mcp_frame_children_ended_total', 'Server processes ended: closed by serve, or died on their own.', ['how']);
  const bytes = counter('mcp_frame_http_bytes_total', 'HTTP body bytes, received and sent.', ['direction']);
  const badFrames = counter('mcp_frame_bad_frames_total', 'Frames that were not JSON-RPC messages, skipped and reported, by who sent them.', [
    'from',
  ]);
  const refusals = counter('mcp_frame_auth_refusals_total', 'Requests refused for their credentials, by reason.', ['reason']);
  const tunnel = counter('mcp_frame_tunnel_requests_total', 'Requests carried to the replica that owns their session (--store).');
  for (const direction of ['in', 'out']) bytes.inc({ direction }, 0);
  telemetry.subscribe('request:end', (r) => {
    const labels = { method: methodLabel(r.start.method), tool: r.tool, era: r.start.era, outcome: r.outcome };
    requests.inc(labels);
    duration.observe(labels, r.seconds);
  });
  telemetry.subscribe('upstream:request', (r) => {
    const labels = { upstream: r.upstream, method: r.method, outcome: r.outcome };
    upstream.inc(labels);
    upstreamDuration.observe(labels, r.seconds);
  });
  telemetry.subscribe('upstream:restart', (r) => restarts.inc({ upstream: r.upstream }));
  telemetry.subscribe('session:open', (r) => opened.inc({ transport: r.transport }));
  telemetry.subscribe('child:start', () => {
    started.inc();
    alive.inc();
  });
  telemetry.subscribe('child:end', (r) => {
    alive.dec();
    ended.inc({ how: r.how });
  });
  telemetry.subscribe('http:bytes', (r) => bytes.inc({ direction: r.direction }, r.bytes));
  telemetry.subscribe('frame:bad', (r) => badFrames.inc({ from: r.from }));
  telemetry.subscribe('auth:refused', (r) => refusals.inc({ reason: r.reason }));
  telemetry.subscribe('tunnel:request', () => tunnel.inc());
  return registry;
}
