// What seeing costs per call through `serve`: the work --metrics (prom-client) and tracing add, measured
// directly, against what a call costs. A call's cost is measured end to end: server-everything behind serve, in
// a process of its own (bench/observe-serve.ts), driven by connect() from this one, serve's own CPU time per call
// read from that process. The added work is measured on its own (serve's request tap and the subscribers, over a
// channel that answers at once, with and without each feature, and the HTTP byte count), because two identical
// serves measured end to end differ by more than the 5% the goal allows (the table shows two): on a 2-core machine
// running client, serve and server at once, the run-to-run spread of a whole call hides a few microseconds.
// npm run bench runs it; `node dist/bench/observe.js` runs it alone.
import { type ChildProcess, fork } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { type Connection, connect } from '../lib/client/index.js';
import { loadTraceApi } from '../lib/protocol/trace.js';
import { prometheusMetrics, RequestTap, Telemetry, traceRequests } from '../lib/serve/observe/index.js';
import { CALLS } from './http.js';

const RUNS = 5;
/** Requests through observe() per direct measurement. */
const DIRECT = 200_000;

interface Served {
  proc: ChildProcess;
  client: Connection;
  cpu(): Promise<number>;
}

/** A process with two identical serves (the spread between them is the end-to-end noise), and a client of each. */
async function served(): Promise<Served[]> {
  const setups = { a: { tracing: false }, b: { tracing: false } };
  const proc = fork(fileURLToPath(new URL('./observe-serve.js', import.meta.url)), [JSON.stringify({ setups })], { stdio: 'inherit' });
  const [first] = (await once(proc, 'message')) as [{ urls: Record<string, string> }];
  const cpu = async (): Promise<number> => {
    const answer = once(proc, 'message') as Promise<[{ cpu: number }]>;
    proc.send('cpu');
    return (await answer)[0].cpu;
  };
  return Promise.all(
    Object.keys(setups).map(async (n) => ({
      proc,
      cpu,
      client: await connect({ type: 'http', url: first.urls[n]! }, { protocolVersion: '2025-11-25' }),
    })),
  );
}

async function run(s: Served, concurrent: boolean): Promise<{ cpu: number; wall: number }> {
  const call = (i: number) => s.client.request('tools/call', { name: 'echo', arguments: { message: `message ${i}` } });
  const cpu0 = await s.cpu();
  const t0 = process.hrtime.bigint();
  if (concurrent) await Promise.all(Array.from({ length: CALLS }, (_, i) => call(i)));
  else for (let i = 0; i < CALLS; i++) await call(i);
  const wall = Number(process.hrtime.bigint() - t0) / 1e3 / CALLS;
  return { cpu: ((await s.cpu()) - cpu0) / CALLS, wall };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A call end to end, µs: serve's CPU time and the call's wall time, medians of RUNS, for each of two identical serves. */
export interface CallRow {
  label: string;
  cpu: [number, number];
  wall: [number, number];
}

async function callCost(): Promise<CallRow[]> {
  const both = await served();
  try {
    const rows: CallRow[] = [];
    for (const concurrent of [false, true]) {
      const cpu: [number[], number[]] = [[], []];
      const wall: [number[], number[]] = [[], []];
      for (const s of both) await run(s, concurrent); // warm-up
      for (let r = 0; r < RUNS; r++) {
        for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) {
          const m = await run(both[i]!, concurrent);
          cpu[i]!.push(m.cpu);
          wall[i]!.push(m.wall);
        }
      }
      rows.push({
        label: `${CALLS.toLocaleString('en')} ${concurrent ? 'concurrent' : 'sequential'} tools/call`,
        cpu: [median(cpu[0]), median(cpu[1])],
        wall: [median(wall[0]), median(wall[1])],
      });
    }
    return rows;
  } finally {
    for (const s of both) await s.client.close();
    const gone = once(both[0]!.proc, 'exit');
    both[0]!.proc.disconnect();
    await gone;
  }
}

/** µs per request that serve's request tap takes over a channel that answers at once, with the subscribers `setup` attaches. */
async function watched(setup: (telemetry: Telemetry) => unknown): Promise<number> {
  const telemetry = new Telemetry();
  await setup(telemetry);
  const tap = new RequestTap(telemetry);
  const child = Object.assign(new EventEmitter(), { send: async (_msg: unknown) => undefined });
  tap.watch(child, 'legacy', 'bench');
  const times: number[] = [];
  try {
    for (let r = 0; r < RUNS; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < DIRECT; i++) {
        const msg = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { message: `message ${i}` } } };
        void child.send(tap.outgoing(child, msg, undefined));
        child.emit('message', { jsonrpc: '2.0', id: i, result: { content: [{ type: 'text', text: 'Echo' }] } });
      }
      times.push(Number(process.hrtime.bigint() - t0) / 1e3 / DIRECT);
    }
  } finally {
    telemetry.close();
  }
  return median(times);
}

/** The work each feature adds per call, µs, measured directly. */
export interface AddedRow {
  metrics: number;
  noSdk: number;
  sdk: number;
}

async function addedCost(): Promise<AddedRow> {
  await loadTraceApi();
  const sources = { sessions: () => ({ streamable: 0, legacy: 0, socket: 0 }) };
  // The byte counts of a call's body in and its answer out, as serve's HTTP transport publishes them with --metrics.
  const timeBytes = async (): Promise<number> => {
    const telemetry = new Telemetry();
    await prometheusMetrics(telemetry, sources);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < DIRECT; i++) {
      telemetry.publish('http:bytes', { direction: 'in', bytes: Buffer.byteLength('{"jsonrpc":"2.0","id":1,"method":"tools/call"}') });
      telemetry.publish('http:bytes', { direction: 'out', bytes: 120 });
    }
    const us = Number(process.hrtime.bigint() - t0) / 1e3 / DIRECT;
    telemetry.close();
    return us;
  };
  await watched(() => undefined); // warm-up
  const bare = await watched(() => undefined);
  const metrics = (await watched((t) => prometheusMetrics(t, sources))) + (await timeBytes()) - bare;
  const noSdk = (await watched(traceRequests)) - bare;
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const drop = setInterval(() => exporter.reset(), 100);
  try {
    const sdk = (await watched(traceRequests)) - bare;
    return { metrics, noSdk, sdk };
  } finally {
    clearInterval(drop);
    trace.disable();
    context.disable();
    propagation.disable();
  }
}

export interface ObserveResult {
  calls: CallRow[];
  added: AddedRow;
}

export async function observeCost(): Promise<ObserveResult> {
  const calls = await callCost();
  return { calls, added: await addedCost() };
}

export function observeTable({ calls, added }: ObserveResult): string {
  const share = (us: number, r: CallRow): string =>
    `${((us / Math.min(...r.cpu)) * 100).toFixed(1)}% / ${((us / Math.min(...r.wall)) * 100).toFixed(1)}%`;
  const lines = calls.map(
    (r) =>
      `| ${r.label} | ${r.cpu[0].toFixed(0)}, ${r.cpu[1].toFixed(0)} | ${r.wall[0].toFixed(0)}, ${r.wall[1].toFixed(0)} | ${share(added.metrics, r)} | ${share(added.noSdk, r)} | ${share(added.sdk, r)} |`,
  );
  return [
    `Work added per call, measured directly: --metrics ${added.metrics.toFixed(2)} µs, spans with no SDK registered ${added.noSdk.toFixed(2)} µs, spans an SDK records ${added.sdk.toFixed(2)} µs.`,
    '',
    `| case (${CALLS.toLocaleString('en')} calls) | serve's CPU per call, µs (two identical serves) | the call, µs (the same two) | --metrics adds (of serve's CPU / of the call) | spans, no SDK registered | spans an SDK records |`,
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...lines,
    '',
    "Serve's CPU time is the serve process's own (not the client's or the server's), read by process.cpuUsage() around each run; the call is its wall time (concurrent: the run's time over its calls); shares are of the smaller of the two serves' figures. The added work is serve's request tap over a channel that answers at once, 200,000 requests a run, with the feature's subscribers, less the same with none; --metrics includes its two HTTP byte counts. Spans an SDK records: a BasicTracerProvider with a batch span processor and an in-memory exporter, its AsyncLocalStorage context manager registered.",
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${observeTable(await observeCost())}\n`);
