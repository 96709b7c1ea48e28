// What seeing costs: the same calls through `serve` (server-everything over stdio behind it, in this process)
// with nothing on, with --metrics (prom-client), with spans and no SDK registered (the API's no-ops), and with an
// OpenTelemetry SDK recording every span (measured against a plain serve under the same SDK), the same client
// (connect()), runs interleaved. The goal: under 5% of a
// call through serve. npm run bench runs it; `node dist/bench/observe.js` runs it alone.
import { fileURLToPath } from 'node:url';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { connect } from '../lib/client/index.js';
import { type ServeOptions, serve } from '../lib/serve/index.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { CALLS, type Call, interleaved } from './http.js';

const RUNS = 3;
const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };

export interface ObserveRow {
  label: string;
  plain: number;
  metrics: number;
  /** Spans made, with no SDK registered: the API's no-ops (what serve adds for a host that records nothing). */
  noSdk: number;
  tracing: number;
}

/** Times the setups given, each a serve of its own in this process. */
async function timeSetups<K extends string>(setups: Record<K, ServeOptions>): Promise<Array<{ label: string } & Record<K, number>>> {
  const handles = await Promise.all(Object.values<ServeOptions>(setups).map((o) => serve(EVERYTHING, { log: () => undefined, ...o })));
  const clients = await Promise.all(handles.map((h) => connect({ type: 'http', url: h.url! }, { protocolVersion: '2025-11-25' })));
  try {
    const calls = Object.fromEntries(
      Object.keys(setups).map((k, i) => [
        k,
        ((text: string) => clients[i]!.request('tools/call', { name: 'echo', arguments: { message: text } })) as Call,
      ]),
    ) as Record<K, Call>;
    return await interleaved(calls, RUNS);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(handles.map((h) => h.close()));
  }
}

export async function observeCost(): Promise<ObserveRow[]> {
  // No SDK yet: tracing is the API's no-ops.
  const bare = await timeSetups({ plain: { tracing: false }, metrics: { tracing: false, metrics: true }, noSdk: { tracing: true } });
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const drop = setInterval(() => exporter.reset(), 100);
  try {
    // With an SDK that records every span: against a serve in the same process that makes none.
    const recorded = await timeSetups({ plain: { tracing: false }, tracing: { tracing: true } });
    return bare.map((row, i) => ({ ...row, tracing: (recorded[i]!.tracing / recorded[i]!.plain) * row.plain }) as ObserveRow);
  } finally {
    clearInterval(drop);
    trace.disable();
    context.disable();
    propagation.disable();
  }
}

export function observeTable(rows: ObserveRow[]): string {
  const pct = (x: number, base: number): string => `${(((x - base) / base) * 100).toFixed(1)}%`;
  const cell = (x: number, base: number): string => `${x.toFixed(0)} (${pct(x, base)})`;
  const lines = rows.map(
    (r) => `| ${r.label} | ${r.plain.toFixed(0)} | ${cell(r.metrics, r.plain)} | ${cell(r.noSdk, r.plain)} | ${cell(r.tracing, r.plain)} |`,
  );
  return [
    `| case (${CALLS.toLocaleString('en')} calls) | serve, ms | with metrics, ms (added) | spans, no SDK registered, ms (added) | spans recorded by an SDK, ms (added) |`,
    '| --- | ---: | ---: | ---: | ---: |',
    ...lines,
    '',
    'The last column is the time measured under the SDK (whose context manager slows every async step of the process) scaled by the plain serve measured beside it there.',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${observeTable(await observeCost())}\n`);
