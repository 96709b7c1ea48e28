// The gateway against mcp-hub 4.2.1 (npm), the aggregator that installs here: N copies of the example server
// behind each (N = 1, 4, 16), the same MCP SDK 1.x client over the legacy HTTP+SSE transport (mcp-hub's /mcp
// speaks it; the gateway's is /sse). Per N: a session's start (connect, the handshake), a complete tools/list
// (every page), 1,000 sequential and 1,000 concurrent tools/call, runs interleaved, medians; then what 10 open
// sessions hold: the processes under each, and their memory (RSS and PSS summed over the tree). Each is a process
// of its own, mcp-hub with a HOME of its own (it keeps logs and a workspace cache there).
// npm run bench runs it; `node dist/bench/hub.js` runs it alone.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { freePort } from '../test/helpers/ports.js';
import { serveProcess } from '../test/helpers/served.js';
import { tempDir } from '../test/helpers/temp.js';
import { median } from './http.js';
import { memoryOf, processTree } from './procfs.js';

const DEMO = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
const CALLS = 1000;
const RUNS = 3;
const SESSIONS = 10;

interface Aggregator {
  name: string;
  /** Its legacy SSE endpoint. */
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

/** Ends an aggregator: SIGTERM, and its exit waited for. */
function stop(proc: { kill(signal: NodeJS.Signals): unknown }, exited: Promise<unknown>): Promise<unknown> {
  proc.kill('SIGTERM');
  return exited;
}

function config(n: number): string {
  const file = join(tempDir('bench-hub-'), 'servers.json');
  writeFileSync(file, JSON.stringify({ mcpServers: Object.fromEntries(Array.from({ length: n }, (_, i) => [`s${i}`, DEMO])) }));
  return file;
}

async function gateway(file: string): Promise<Aggregator> {
  const { proc, exited, url } = await serveProcess(['--config', file, '--all', '--port', '0', '--max-sessions', '64']);
  return { name: 'mcp-frame serve --all (/sse)', url: url!.replace(/\/mcp$/, '/sse'), pid: proc.pid!, stop: () => stop(proc, exited) };
}

async function hub(file: string, n: number): Promise<Aggregator> {
  const port = await freePort();
  const home = tempDir('bench-hub-home-');
  const proc: ChildProcess = spawn(process.execPath, [`${ROOT}node_modules/mcp-hub/dist/cli.js`, '--port', String(port), '--config', file], {
    env: { ...process.env, HOME: home, XDG_STATE_HOME: join(home, 'state'), XDG_CONFIG_HOME: join(home, 'config') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  let out = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr!.resume();
  const deadline = Date.now() + 60_000;
  while (!out.includes(`${n}/${n} servers started`)) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`mcp-hub did not start its ${n} servers: ${out.slice(-400)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { name: 'mcp-hub 4.2.1 (/mcp)', url: `http://127.0.0.1:${port}/mcp`, pid: proc.pid!, stop: () => stop(proc, exited) };
}

async function client(url: string): Promise<Client> {
  const c = new Client({ name: 'bench', version: '1.0.0' });
  await c.connect(new SSEClientTransport(new URL(url)));
  return c;
}

/** Every page of tools/list, as a host reads the whole list. */
async function allTools(c: Client): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await c.listTools(cursor === undefined ? {} : { cursor });
    n += page.tools.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return n;
}

export interface HubRow {
  servers: number;
  name: string;
  startMs: number;
  listMs: number;
  tools: number;
  sequentialMs: number;
  concurrentMs: number;
  processes: number;
  rssMiB: number;
  pssMiB: number;
}

/** One aggregator's figures at `n` servers, its calls timed in `runs` interleaved with the other's (see hubCompare). */
async function measure(a: Aggregator, n: number, sequential: number[], concurrent: number[]): Promise<HubRow> {
  const starts: number[] = [];
  const lists: number[] = [];
  let tools = 0;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const c = await client(a.url);
    starts.push(performance.now() - t0);
    const t1 = performance.now();
    tools = await allTools(c);
    lists.push(performance.now() - t1);
    await c.close();
  }
  const open = await Promise.all(Array.from({ length: SESSIONS }, () => client(a.url)));
  await Promise.all(open.map((c) => c.listTools()));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const pids = processTree(a.pid);
  const mem = pids.map(memoryOf).reduce((s, m) => ({ rss: s.rss + m.rss, pss: s.pss + m.pss }), { rss: 0, pss: 0 });
  await Promise.all(open.map((c) => c.close()));
  return {
    servers: n,
    name: a.name,
    startMs: median(starts),
    listMs: median(lists),
    tools,
    sequentialMs: median(sequential),
    concurrentMs: median(concurrent),
    processes: pids.length,
    rssMiB: mem.rss / 1024,
    pssMiB: mem.pss / 1024,
  };
}

/** ms for CALLS calls of the first server's echo through `c`, one after another or all at once. */
async function calls(c: Client, concurrent: boolean): Promise<number> {
  const call = (i: number) => c.callTool({ name: 's0__echo', arguments: { text: `message ${i}` } });
  const t0 = performance.now();
  if (concurrent) await Promise.all(Array.from({ length: CALLS }, (_, i) => call(i)));
  else for (let i = 0; i < CALLS; i++) await call(i);
  return performance.now() - t0;
}

export async function hubCompare(): Promise<HubRow[]> {
  const rows: HubRow[] = [];
  for (const n of [1, 4, 16]) {
    const file = config(n);
    const both = [await gateway(file), await hub(file, n)];
    try {
      const clients = await Promise.all(both.map((a) => client(a.url)));
      const timed = both.map(() => ({ sequential: [] as number[], concurrent: [] as number[] }));
      for (const c of clients) await calls(c, false);
      for (let run = 0; run < RUNS; run++) {
        const order = run % 2 === 0 ? [0, 1] : [1, 0];
        for (const i of order) timed[i]!.sequential.push(await calls(clients[i]!, false));
        for (const i of order) timed[i]!.concurrent.push(await calls(clients[i]!, true));
      }
      await Promise.all(clients.map((c) => c.close()));
      for (const [i, a] of both.entries()) rows.push(await measure(a, n, timed[i]!.sequential, timed[i]!.concurrent));
    } finally {
      await Promise.all(both.map((a) => a.stop()));
    }
  }
  return rows;
}

export function hubTable(rows: HubRow[]): string {
  const ratio = (ours: number, theirs: number): string => `${(ours / theirs).toFixed(2)}x`;
  const lines = [
    '| servers | aggregator | session start ms | complete tools/list ms (tools) | 1,000 sequential ms | 1,000 concurrent ms | processes (10 sessions) | RSS / PSS MiB |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.servers} | ${r.name} | ${r.startMs.toFixed(1)} | ${r.listMs.toFixed(1)} (${r.tools}) | ${r.sequentialMs.toFixed(0)} | ${r.concurrentMs.toFixed(0)} | ${r.processes} | ${r.rssMiB.toFixed(0)} / ${r.pssMiB.toFixed(0)} |`,
    );
  lines.push('', '| servers | ours over mcp-hub: start | list | sequential | concurrent | PSS |', '| ---: | ---: | ---: | ---: | ---: | ---: |');
  for (let i = 0; i + 1 < rows.length; i += 2) {
    const [a, b] = [rows[i]!, rows[i + 1]!];
    lines.push(
      `| ${a.servers} | ${ratio(a.startMs, b.startMs)} | ${ratio(a.listMs, b.listMs)} | ${ratio(a.sequentialMs, b.sequentialMs)} | ${ratio(a.concurrentMs, b.concurrentMs)} | ${ratio(a.pssMiB, b.pssMiB)} |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(hubTable(await hubCompare()));
