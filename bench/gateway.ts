// The gateway's cost: server-everything behind `mcp-frame serve --all` (with server-filesystem beside it, so that
// every call is routed by its prefix) against the same server behind a one-server `serve`, the same SDK 1.x
// client, sequential and concurrent tools/call, runs interleaved; then the memory of a session with N servers
// behind the gateway (the serve process's own, and its children's). Every serve is a process of its own.
// npm run bench runs it; `node dist/bench/gateway.js` runs it alone.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { MCP_HEADERS, rawRequest } from '../test/helpers/raw-http.js';
import { INIT, serveProcess } from '../test/helpers/served.js';
import { tempDir } from '../test/helpers/temp.js';
import { CALLS, type Call, interleaved } from './http.js';
import { childrenOf, rssKiB } from './procfs.js';
import { countingWarnings, warningNote } from './warnings.js';

const RUNS = 3;
const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };
const DEMO = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
/** Sessions opened for the memory rows. */
const SESSIONS = 20;

interface Served {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

async function served(args: string[]): Promise<Served> {
  const { proc, exited, url } = await serveProcess(['--port', '0', '--max-sessions', String(SESSIONS + 4), ...args]);
  return {
    url: url!,
    pid: proc.pid!,
    stop: () => {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

function config(servers: Record<string, unknown>): string {
  const file = join(tempDir('bench-gateway-'), 'mcp.json');
  writeFileSync(file, JSON.stringify({ mcpServers: servers }));
  return file;
}

async function sdkClient(url: string, tool: string): Promise<{ call: Call; close: () => Promise<unknown> }> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { call: (text) => client.callTool({ name: tool, arguments: { message: text } }), close: () => client.close() };
}

export interface GatewayRow {
  label: string;
  gateway: number;
  single: number;
}

export interface SessionMemoryRow {
  servers: number;
  /** Each session of the initialize era given servers of its own (--isolate), as before they were shared. */
  isolated: boolean;
  /** serve's child processes with SESSIONS sessions open. */
  processes: number;
  /** The serve process's resident memory per session, KiB. */
  ownKiB: number;
  /** Its children's, per session, MiB. */
  childrenMiB: number;
}

export interface GatewayResults {
  rows: GatewayRow[];
  memory: SessionMemoryRow[];
  warnings: Map<string, number>;
}

/** Opens SESSIONS sessions by hand and measures what they hold, over the serve process at rest. */
async function sessionMemory(servers: number, server: Served, isolated: boolean): Promise<SessionMemoryRow> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = rssKiB(server.pid);
  for (let i = 0; i < SESSIONS; i++) {
    const init = await rawRequest(server.url, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    if (init.status !== 200) throw new Error(`session ${i}: ${init.status} ${init.body}`);
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const own = rssKiB(server.pid) - before;
  const pids = childrenOf(server.pid);
  const children = pids.reduce((sum, pid) => sum + rssKiB(pid), 0);
  return { servers, isolated, processes: pids.length, ownKiB: own / SESSIONS, childrenMiB: children / 1024 / SESSIONS };
}

export async function gatewayCost(): Promise<GatewayResults> {
  const dir = tempDir('bench-gateway-fs-');
  const both = config({
    everything: EVERYTHING,
    files: { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`, dir] },
  });
  const gateway = await served(['--all', '--config', both]);
  const single = await served(['--', EVERYTHING.command, ...EVERYTHING.args]);
  const memory: SessionMemoryRow[] = [];
  try {
    const through = await sdkClient(gateway.url, 'everything__echo');
    const alone = await sdkClient(single.url, 'echo');
    let measured: { result: GatewayRow[]; warnings: Map<string, number> };
    try {
      const [a, b] = await Promise.all([through.call('same'), alone.call('same')]);
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`the gateway and one serve answer differently: ${JSON.stringify([a, b])}`);
      measured = await countingWarnings(() => interleaved({ gateway: through.call, single: alone.call }, RUNS));
    } finally {
      await through.close();
      await alone.close();
    }
    for (const [n, isolated] of [
      [1, false],
      [2, false],
      [4, false],
      [8, false],
      [4, true],
    ] as const) {
      const entries = Object.fromEntries(Array.from({ length: n }, (_, i) => [`demo${i + 1}`, DEMO]));
      // One server is the one-server serve; more, the gateway (its servers shared, or each session's own).
      const args = ['--all', '--config', config(entries), ...(isolated ? ['--isolate', 'demo1'] : [])];
      const server = n === 1 ? await served(['--', DEMO.command, ...DEMO.args]) : await served(args);
      try {
        memory.push(await sessionMemory(n, server, isolated));
      } finally {
        await server.stop();
      }
    }
    return { rows: measured.result, memory, warnings: measured.warnings };
  } finally {
    await gateway.stop();
    await single.stop();
  }
}

export function gatewayCostTable(results: GatewayResults): string {
  const lines = results.rows.map((r) => {
    const added = (r.gateway - r.single) / CALLS;
    return `| ${r.label} | ${r.gateway.toFixed(0)} | ${r.single.toFixed(0)} | ${(r.gateway / r.single).toFixed(2)}x | ${added.toFixed(3)} |`;
  });
  const memory = results.memory.map((m) => {
    const what = m.servers === 1 ? ' (one-server serve: a child per session)' : m.isolated ? ' (--isolate: servers per session)' : ' (shared)';
    return `| ${m.servers}${what} | ${m.processes} | ${m.ownKiB.toFixed(0)} | ${m.childrenMiB.toFixed(1)} |`;
  });
  return (
    [
      '| case | gateway (everything + filesystem), ms | one-server serve, ms | gateway vs one | added ms per call |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...lines,
      '',
      `Memory of a session with N servers behind it (the bundled example server each; ${SESSIONS} sessions opened, resident memory after, per session):`,
      '',
      '| servers | processes | serve process, KiB per session | its children, MiB per session |',
      '| --- | ---: | ---: | ---: |',
      ...memory,
    ].join('\n') + warningNote(results.warnings, "the SDK client's, at 1,000 concurrent requests")
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${gatewayCostTable(await gatewayCost())}\n`);
