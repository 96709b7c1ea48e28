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

const CALLS = 1000;
const RUNS = 5;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

type Call = (text: string) => Promise<unknown>;

async function ourClient(url: string): Promise<{ call: Call; close: () => Promise<unknown> }> {
  const c = await connect({ type: 'http', url });
  return { call: (text) => c.request('tools/call', { name: 'echo', arguments: { text } }), close: () => c.close() };
}

async function sdkClient(url: string): Promise<{ call: Call; close: () => Promise<unknown> }> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { call: (text) => client.callTool({ name: 'echo', arguments: { text } }), close: () => client.close() };
}

async function time(call: Call, concurrent: boolean): Promise<number> {
  const start = performance.now();
  if (concurrent) await Promise.all(Array.from({ length: CALLS }, (_, i) => call(`message ${i}`)));
  else for (let i = 0; i < CALLS; i++) await call(`message ${i}`);
  return performance.now() - start;
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
  const rows: HttpRow[] = [];
  try {
    for (const concurrent of [false, true]) {
      const t = { ours: [] as number[], sdk: [] as number[] };
      await time(ours.call, concurrent);
      await time(sdk.call, concurrent);
      for (let i = 0; i < RUNS; i++) {
        for (const who of i % 2 ? (['sdk', 'ours'] as const) : (['ours', 'sdk'] as const))
          t[who].push(await time(who === 'ours' ? ours.call : sdk.call, concurrent));
      }
      rows.push({
        label: `${CALLS.toLocaleString('en')} ${concurrent ? 'concurrent' : 'sequential'} tools/call`,
        ours: median(t.ours),
        sdk: median(t.sdk),
      });
    }
  } finally {
    await ours.close();
    await sdk.close();
    await server.close();
  }
  return rows;
}

export function httpTable({ rows, warnings }: { rows: HttpRow[]; warnings: Map<string, number> }): string {
  const lines = rows.map((r) => `| ${r.label} | ${r.ours.toFixed(0)} | ${r.sdk.toFixed(0)} | ${(r.ours / r.sdk).toFixed(2)}x |`);
  const table = ['| case | connect() ms | SDK Client ms | connect() vs SDK |', '| --- | ---: | ---: | ---: |', ...lines].join('\n');
  return `${table}${warningNote(warnings, "the SDK client's, at 1,000 concurrent requests")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${httpTable(await httpRoundTrips())}\n`);
