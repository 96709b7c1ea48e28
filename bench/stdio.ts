// Round trips over stdio: connect() against the MCP SDK's Client with StdioClientTransport, the same servers
// (the example server and server-everything), sequential and concurrent tools/call, and one 20 MiB result,
// runs interleaved. npm run bench runs it; `node --expose-gc dist/bench/stdio.js` runs it alone.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect } from '../lib/client/index.js';
import { median } from './http.js';
import { countingWarnings, warningNote } from './warnings.js';
import { gc } from './gc.js';

export interface StdioRow {
  label: string;
  /** Median ms, or why it could not be run. */
  ours: number | string;
  sdk: number | string;
  /** The same case through a bare client (no framing library, no checks): the pipe and the server alone. */
  bare: number | string;
  /**
   * CPU time of the client's process per call, in µs (median of the runs), for the cases of many calls: what the
   * client itself spends, which the server's speed does not hide. Undefined where the case is one call.
   */
  cpu?: { ours: number; sdk: number; bare: number };
}

const CALLS = 10_000;
const RUNS = 3;
const root = fileURLToPath(new URL('../../', import.meta.url));
export const SERVERS = {
  'example server': { command: process.execPath, args: [`${root}dist/examples/server.js`], tool: 'echo', key: 'text' },
  'server-everything': {
    command: process.execPath,
    args: [`${root}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'],
    tool: 'echo',
    key: 'message',
  },
} as const;

type Call = (name: string, args: Record<string, unknown>) => Promise<unknown>;
export interface Peer {
  call: Call;
  close(): Promise<unknown>;
}

export async function ours(server: { command: string; args: readonly string[] }): Promise<Peer> {
  const c = await connect({ command: server.command, args: [...server.args] });
  return { call: (name, args) => c.request('tools/call', { name, arguments: args }, { timeoutMs: 120_000 }), close: () => c.close() };
}

export async function sdk(server: { command: string; args: readonly string[] }): Promise<Peer> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: server.command, args: [...server.args], stderr: 'ignore' }));
  return { call: (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }), close: () => client.close() };
}

/**
 * The least a client can do: the request written as a line, the answer's line found by its LF in the new bytes
 * only, parsed, and matched by id; no validation, no timeouts. What it takes is the pipe's and the server's
 * time, and what connect() takes beyond it is its own.
 */
export async function bare(server: { command: string; args: readonly string[] }): Promise<Peer> {
  const child = spawn(server.command, [...server.args], { stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting = new Map<number, (result: unknown) => void>();
  let held: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      held.push(chunk.subarray(start, nl));
      const msg = JSON.parse(Buffer.concat(held).toString('utf8')) as { id?: number; result?: unknown };
      held = [];
      start = nl + 1;
      if (typeof msg.id === 'number') waiting.get(msg.id)?.(msg.result);
      waiting.delete(msg.id as number);
    }
    if (start < chunk.length) held.push(chunk.subarray(start));
  });
  let next = 1;
  const request = (method: string, params: unknown): Promise<unknown> => {
    const id = next++;
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return new Promise((resolve) => waiting.set(id, resolve));
  };
  await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bare', version: '1' } });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  return {
    call: (name, args) => request('tools/call', { name, arguments: args }),
    close: async () => {
      child.stdin.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/**
 * Wall ms of `run`, and the CPU µs this process spent in it (the servers are child processes: not counted). Each
 * timing starts from a collection, when the bench may ask for one (--expose-gc): the three clients share this
 * process, and a collection of one client's garbage (or of the sections before) was otherwise charged to
 * whichever client ran next. The SDK's CPU per sequential call with server-everything moved from 56.6 to 103.2
 * µs between two full runs that way.
 */
async function time(run: () => Promise<unknown>): Promise<{ ms: number; cpuUs: number }> {
  gc?.();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await run();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - start, cpuUs: used.user + used.system };
}

/** Median ms of each case, both clients, interleaved. */
export async function stdioRoundTrips(): Promise<{ rows: StdioRow[]; warnings: Map<string, number> }> {
  const { result, warnings } = await countingWarnings(runAll);
  return { rows: result, warnings };
}

async function runAll(): Promise<StdioRow[]> {
  const rows: StdioRow[] = [];
  for (const [label, server] of Object.entries(SERVERS)) {
    const a = await ours(server);
    const b = await sdk(server);
    const c = await bare(server);
    const peers = { ours: a, sdk: b, bare: c };
    const cases: Array<[string, (p: Peer) => Promise<unknown>]> = [
      [
        `${CALLS.toLocaleString('en')} sequential`,
        async (p) => {
          for (let i = 0; i < CALLS; i++) await p.call(server.tool, { [server.key]: `m${i}` });
        },
      ],
      [
        `${CALLS.toLocaleString('en')} concurrent`,
        (p) => Promise.all(Array.from({ length: CALLS }, (_, i) => p.call(server.tool, { [server.key]: `m${i}` }))),
      ],
    ];
    if (label === 'example server') cases.push(['one 20 MiB result', (p) => p.call('blob', { bytes: 20 * 1024 * 1024 })]);
    try {
      for (const [name, run] of cases) {
        const t = { ours: [] as number[], sdk: [] as number[], bare: [] as number[] };
        const cpu = { ours: [] as number[], sdk: [] as number[], bare: [] as number[] };
        // A client that cannot do a case at all (the SDK's stdio reader caps a message at 10 MB) is reported.
        const failed: Partial<Record<'ours' | 'sdk' | 'bare', string>> = {};
        for (let i = 0; i <= RUNS; i++) {
          for (const who of i % 2 ? (['bare', 'sdk', 'ours'] as const) : (['ours', 'sdk', 'bare'] as const)) {
            if (failed[who] !== undefined) continue;
            try {
              const { ms, cpuUs } = await time(() => run(peers[who]));
              if (i > 0) {
                t[who].push(ms);
                cpu[who].push(cpuUs / CALLS);
              }
            } catch (err) {
              failed[who] = `failed: ${(err as Error).message.slice(0, 60)}`;
            }
          }
        }
        rows.push({
          label: `${label}: ${name} tools/call`,
          ours: failed.ours ?? median(t.ours),
          sdk: failed.sdk ?? median(t.sdk),
          bare: failed.bare ?? median(t.bare),
          ...(name.startsWith(CALLS.toLocaleString('en')) && Object.keys(failed).length === 0
            ? { cpu: { ours: median(cpu.ours), sdk: median(cpu.sdk), bare: median(cpu.bare) } }
            : {}),
        });
      }
    } finally {
      await a.close();
      await b.close();
      await c.close();
    }
  }
  return rows;
}

export function stdioTable({ rows, warnings }: { rows: StdioRow[]; warnings: Map<string, number> }): string {
  const ms = (v: number | string): string => (typeof v === 'number' ? v.toFixed(0) : v);
  const ratio = (r: StdioRow): string => (typeof r.ours === 'number' && typeof r.sdk === 'number' ? `${(r.ours / r.sdk).toFixed(2)}x` : '–');
  // A ratio, not a difference: connect() can beat the bare client, on a large result because it parses it from
  // its bytes where the bare client decodes the whole text first, elsewhere within a median of three's noise.
  const bareRatio = (r: StdioRow): string => (typeof r.ours === 'number' && typeof r.bare === 'number' ? `${(r.ours / r.bare).toFixed(2)}x` : '–');
  const cpu = (r: StdioRow): string => (r.cpu === undefined ? '–' : `${r.cpu.ours.toFixed(1)} / ${r.cpu.sdk.toFixed(1)} / ${r.cpu.bare.toFixed(1)}`);
  const lines = rows.map((r) => `| ${r.label} | ${ms(r.ours)} | ${ms(r.sdk)} | ${ratio(r)} | ${ms(r.bare)} | ${bareRatio(r)} | ${cpu(r)} |`);
  const table = [
    '| case | connect() ms | SDK Client ms | connect() vs SDK | bare client ms (the pipe and the server) | connect() vs bare | client CPU µs per call: connect() / SDK / bare |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...lines,
  ].join('\n');
  return `${table}${warningNote(warnings, "the SDK client's, at 10,000 concurrent requests")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${stdioTable(await stdioRoundTrips())}\n`);
