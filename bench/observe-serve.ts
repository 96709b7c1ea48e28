// The serves bench/observe.ts compares, in a process of their own so that its CPU time is theirs: one serve per
// setup (its options by name, as JSON in argv[2]), server-everything behind each; with `sdk: true`, an
// OpenTelemetry SDK registered first that records every span in memory, as a host's would. The setups share the
// process, so that they are compared in one (JIT, heap and core alike), one driven at a time. Says their URLs on
// the IPC channel and answers each message with the process's CPU time so far (user + system, microseconds).
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { serve } from '../lib/serve/index.js';
import { ROOT } from '../test/helpers/fixtures.js';

const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };
const { sdk, setups } = JSON.parse(process.argv[2] ?? '{}') as { sdk?: boolean; setups: Record<string, { metrics?: boolean; tracing?: boolean }> };
if (sdk === true) {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  setInterval(() => exporter.reset(), 100).unref();
}
const names = Object.keys(setups);
const handles = await Promise.all(names.map((n) => serve(EVERYTHING, { log: () => undefined, ...setups[n] })));
const cpu = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
process.on('message', () => process.send?.({ cpu: cpu() }));
process.on('disconnect', () => void Promise.all(handles.map((h) => h.close())).then(() => process.exit(0)));
process.send?.({ urls: Object.fromEntries(names.map((n, i) => [n, handles[i]!.url])) });
