// The cost of coordination: server-everything behind three `mcp-frame serve --store` replicas sharing a Redis
// (each request to the next replica, as a balancer without affinity sends them: two in three are carried to
// the owner), against one `serve` without a store; the same SDK 1.x client (a session of the initialize era,
// the kind replicas share), sequential and concurrent tools/call, runs interleaved. Every serve is a process
// of its own. npm run bench runs it; `node dist/bench/replicas.js` runs it alone.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { haveRedis, startRedis } from '../test/helpers/redis.js';
import { serveProcess } from '../test/helpers/served.js';
import { CALLS, type Call, interleaved } from './http.js';
import { countingWarnings, warningNote } from './warnings.js';

const RUNS = 3;
const EVERYTHING = [process.execPath, `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];

export interface ReplicaRows {
  rows: ReplicaRow[];
  warnings: Map<string, number>;
}

export interface ReplicaRow {
  label: string;
  replicas: number;
  single: number;
}

interface Served {
  url: string;
  stop(): Promise<unknown>;
}

async function served(args: string[]): Promise<Served> {
  const { proc, exited, url } = await serveProcess(['--port', '0', ...args, '--', ...EVERYTHING]);
  return {
    url: url!,
    stop: () => {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

async function sdkClient(urls: string[]): Promise<{ call: Call; close: () => Promise<unknown> }> {
  let next = 0;
  const rotating = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    return fetch(new URL(url.pathname + url.search, urls[next++ % urls.length]), init);
  };
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(urls[0]!), { fetch: rotating }));
  return { call: (text) => client.callTool({ name: 'echo', arguments: { message: text } }), close: () => client.close() };
}

/** The rows, or why they were not measured (no redis-server here). */
export async function replicaRoundTrips(): Promise<ReplicaRows | string> {
  if (!haveRedis()) return 'skipped: redis-server is not installed (apt-get install -y redis-server)';
  const redis = await startRedis();
  const servers: Served[] = [];
  try {
    for (let i = 0; i < 3; i++) servers.push(await served(['--store', redis.url]));
    const single = await served([]);
    servers.push(single);
    const through = await sdkClient(servers.slice(0, 3).map((s) => s.url));
    const alone = await sdkClient([single.url]);
    try {
      const [a, b] = await Promise.all([through.call('same'), alone.call('same')]);
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`the replicas and one serve answer differently: ${JSON.stringify([a, b])}`);
      const { result, warnings } = await countingWarnings(() => interleaved({ replicas: through.call, single: alone.call }, RUNS));
      return { rows: result, warnings };
    } finally {
      await through.close();
      await alone.close();
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await redis.close();
  }
}

export function replicaTable(measured: ReplicaRows | string): string {
  if (typeof measured === 'string') return measured;
  const lines = measured.rows.map((r) => {
    const added = (r.replicas - r.single) / CALLS;
    return `| ${r.label} | ${r.replicas.toFixed(0)} | ${r.single.toFixed(0)} | ${(r.replicas / r.single).toFixed(2)}x | ${added.toFixed(3)} |`;
  });
  return `${[
    '| case | 3 replicas, rotating, ms | one serve, ms | replicas vs one | added ms per request |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...lines,
  ].join('\n')}${warningNote(measured.warnings, "the SDK client's, at 1,000 concurrent requests")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${replicaTable(await replicaRoundTrips())}\n`);
