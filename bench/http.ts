// Round trips over loopback HTTP: connect() against the MCP SDK's Client with StreamableHTTPClientTransport,
// the same in-process SDK server, sequential and concurrent tools/call, runs interleaved. npm run bench runs
// it; `node dist/bench/http.js` runs it alone.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fileURLToPath } from 'node:url';
import { connect } from '../lib/client/index.js';
import { sdkServer } from '../test/helpers/sdk-http-server.js';
import { countingWarnings, warningNote } from './warnings.js';

export interface HttpRow {
  label: string;
  ours: number;
  sdk: number;
}

export const CALLS = 1000;
const RUNS = 5;

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

export type Call = (text: string) => Promise<unknown>;

async function ourClient(url: string): Promise<{ call: Call; close: () => Promise<unknown> }> {
  const c = await connect({ type: 'http', url });
  return { call: (text) => c.request('tools/call', { name: 'echo', arguments: { text } }), close: () => c.close() };
}

async function sdkClient(url: string): Promise<{ call: Call; close: () => Promise<unknown> }> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { call: (text) => client.callTool({ name: 'echo', arguments: { text } }), close: () => client.close() };
}

/** ms for CALLS calls, one after another or all at once. */
export async function time(call: Call, concurrent: boolean): Promise<number> {
  const start = performance.now();
  if (concurrent) await Promise.all(Array.from({ length: CALLS }, (_, i) => call(`message ${i}`)));
  else for (let i = 0; i < CALLS; i++) await call(`message ${i}`);
  return performance.now() - start;
}

/**
 * Median ms of `runs` timings of CALLS calls through each of two callers, after one warm-up each, the order
 * alternating run by run; one row each for sequential and concurrent calls.
 */
export async function interleaved<K extends string>(calls: Record<K, Call>, runs: number): Promise<Array<{ label: string } & Record<K, number>>> {
  const who = Object.keys(calls) as K[];
  const rows: Array<{ label: string } & Record<K, number>> = [];
  for (const concurrent of [false, true]) {
    const t = new Map<K, number[]>(who.map((k) => [k, []]));
    for (const k of who) await time(calls[k], concurrent);
    for (let i = 0; i < runs; i++) for (const k of i % 2 ? [...who].reverse() : who) t.get(k)!.push(await time(calls[k], concurrent));
    const label = `${CALLS.toLocaleString('en')} ${concurrent ? 'concurrent' : 'sequential'} tools/call`;
    rows.push(Object.assign({ label }, Object.fromEntries(who.map((k) => [k, median(t.get(k)!)]))) as { label: string } & Record<K, number>);
  }
  return rows;
}

/** Median ms for CALLS round trips, each way, both clients, interleaved. */
export async function httpRoundTrips(): Promise<{ rows: HttpRow[]; warnings: Map<string, number> }> {
  const { result, warnings } = await countingWarnings(runAll);
  return { rows: result, warnings };
}

async function runAll(): Promise<HttpRow[]> {
  const server = await sdkServer();
  const ours = await ourClient(server.url);
  const sdk = await sdkClient(server.url);
  try {
    return await interleaved({ ours: ours.call, sdk: sdk.call }, RUNS);
  } finally {
    await ours.close();
    await sdk.close();
    await server.close();
  }
}

export function httpTable({ rows, warnings }: { rows: HttpRow[]; warnings: Map<string, number> }): string {
  const lines = rows.map((r) => `| ${r.label} | ${r.ours.toFixed(0)} | ${r.sdk.toFixed(0)} | ${(r.ours / r.sdk).toFixed(2)}x |`);
  const table = ['| case | connect() ms | SDK Client ms | connect() vs SDK |', '| --- | ---: | ---: | ---: |', ...lines].join('\n');
  return `${table}${warningNote(warnings, "the SDK client's, at 1,000 concurrent requests")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${httpTable(await httpRoundTrips())}\n`);
