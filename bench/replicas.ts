// The cost of coordination: server-everything behind three `mcp-frame serve --store` replicas sharing a Redis
// (each request to the next replica, as a balancer without affinity sends them: two in three are carried to
// the owner), carried through Redis pub/sub or, with --advertise-url, forwarded to the owner over HTTP, against
// one `serve` without a store; the same SDK 1.x client (a session of the initialize era, the kind replicas
// share), sequential and concurrent tools/call, runs interleaved; the bytes through Redis per call, read from its
// own counters; and the CPU per call of the serve processes (from /proc, the servers behind them not counted) and
// of Redis (its own INFO). Every serve is a process of its own. npm run bench runs it; `node dist/bench/replicas.js`
// runs it alone.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { freePort } from '../test/helpers/ports.js';
import { haveRedis, startRedis } from '../test/helpers/redis.js';
import { cpuMs } from '../test/helpers/processes.js';
import { serveProcess } from '../test/helpers/served.js';
import { CALLS, type Call, interleaved, median, time } from './http.js';
import { countingWarnings, warningNote } from './warnings.js';

const RUNS = 3;
/** CPU is read in clock ticks (10 ms): more runs than the timings, for a steadier median. */
const CPU_RUNS = 5;
const EVERYTHING = [process.execPath, `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];

export interface ReplicaRows {
  rows: ReplicaRow[];
  /** Bytes through Redis (in and out) and PUBLISH commands per call, 1,000 sequential calls, each way of carrying. */
  redis: { tunnel: RedisTraffic; direct: RedisTraffic };
  /** CPU ms per 1,000 calls, sequential then concurrent. */
  cpu: Array<{ label: string; tunnel: CpuUse; direct: CpuUse; single: CpuUse }>;
  warnings: Map<string, number>;
}

export interface ReplicaRow {
  label: string;
  /** Through Redis pub/sub. */
  replicas: number;
  /** Forwarded over HTTP (--advertise-url). */
  direct: number;
  single: number;
}

interface RedisTraffic {
  bytes: number;
  publishes: number;
}

/** CPU ms per 1,000 calls: the serve processes' together (their servers not counted), and Redis's. */
interface CpuUse {
  serve: number;
  redis: number;
}

/** CPU ms Redis has used (INFO cpu: seconds with microseconds). */
function redisCpuMs(port: number): number {
  const text = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'cpu'], { encoding: 'utf8' });
  return (Number(/used_cpu_sys:([\d.]+)/.exec(text)?.[1] ?? 0) + Number(/used_cpu_user:([\d.]+)/.exec(text)?.[1] ?? 0)) * 1000;
}

/** Median CPU per 1,000 calls of CPU_RUNS timings of CALLS calls through `call`, served by the serves `pids`. */
async function cpuPerCall(pids: number[], redisPort: number, call: Call, concurrent: boolean): Promise<CpuUse> {
  const serve: number[] = [];
  const redis: number[] = [];
  for (let i = 0; i < CPU_RUNS; i++) {
    const before = { serve: pids.reduce((sum, pid) => sum + cpuMs(pid), 0), redis: redisCpuMs(redisPort) };
    await time(call, concurrent);
    serve.push(((pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - before.serve) * 1000) / CALLS);
    redis.push(((redisCpuMs(redisPort) - before.redis) * 1000) / CALLS);
  }
  return { serve: median(serve), redis: median(redis) };
}

/** Redis's own counters: bytes in and out over every connection, and PUBLISH commands run. */
function redisCounters(port: number): RedisTraffic {
  const text = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'all'], { encoding: 'utf8' });
  const field = (re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
  return {
    bytes: field(/total_net_input_bytes:(\d+)/) + field(/total_net_output_bytes:(\d+)/),
    publishes: field(/cmdstat_publish:calls=(\d+)/),
  };
}

/** Redis traffic per call for CALLS sequential calls through `call` (the replicas' heartbeats included, as in life). */
async function trafficPerCall(port: number, call: Call): Promise<RedisTraffic> {
  const before = redisCounters(port);
  for (let i = 0; i < CALLS; i++) await call(`message ${i}`);
  const after = redisCounters(port);
  return { bytes: (after.bytes - before.bytes) / CALLS, publishes: (after.publishes - before.publishes) / CALLS };
}

interface Served {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

async function served(args: string[]): Promise<Served> {
  const { proc, exited, url } = await serveProcess(['--port', '0', ...args, '--', ...EVERYTHING]);
  return {
    url: url!,
    pid: proc.pid!,
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
    for (let i = 0; i < 3; i++) servers.push(await served(['--store', redis.url, '--store-prefix', 'tunnel']));
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      servers.push(
        await served(['--port', String(port), '--store', redis.url, '--store-prefix', 'direct', '--advertise-url', `http://127.0.0.1:${port}`]),
      );
    }
    const single = await served([]);
    servers.push(single);
    const through = await sdkClient(servers.slice(0, 3).map((s) => s.url));
    const direct = await sdkClient(servers.slice(3, 6).map((s) => s.url));
    const alone = await sdkClient([single.url]);
    try {
      const answers = await Promise.all([through.call('same'), direct.call('same'), alone.call('same')]);
      if (new Set(answers.map((a) => JSON.stringify(a))).size !== 1)
        throw new Error(`the replicas and one serve answer differently: ${JSON.stringify(answers)}`);
      const pids = servers.map((s) => s.pid);
      const { result, warnings } = await countingWarnings(async () => {
        const rows = await interleaved({ replicas: through.call, direct: direct.call, single: alone.call }, RUNS);
        const cpu: ReplicaRows['cpu'] = [];
        for (const concurrent of [false, true]) {
          cpu.push({
            label: `${CALLS.toLocaleString('en')} ${concurrent ? 'concurrent' : 'sequential'} tools/call`,
            tunnel: await cpuPerCall(pids.slice(0, 3), redis.port, through.call, concurrent),
            direct: await cpuPerCall(pids.slice(3, 6), redis.port, direct.call, concurrent),
            single: await cpuPerCall([single.pid], redis.port, alone.call, concurrent),
          });
        }
        return { rows, cpu };
      });
      const traffic = { tunnel: await trafficPerCall(redis.port, through.call), direct: await trafficPerCall(redis.port, direct.call) };
      return { ...result, redis: traffic, warnings };
    } finally {
      await Promise.all([through.close(), direct.close(), alone.close()]);
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await redis.close();
  }
}

export function replicaTable(measured: ReplicaRows | string): string {
  if (typeof measured === 'string') return measured;
  // Two in three requests are carried: the added time per carried request is the added time per request x 3/2.
  const added = (ms: number, single: number): string => `${((ms - single) / CALLS).toFixed(3)} / ${(((ms - single) / CALLS) * 1.5).toFixed(3)}`;
  const lines = measured.rows.map(
    (r) =>
      `| ${r.label} | ${r.replicas.toFixed(0)} | ${r.direct.toFixed(0)} | ${r.single.toFixed(0)} | ${(r.replicas / r.single).toFixed(2)}x / ${(r.direct / r.single).toFixed(2)}x | ${added(r.replicas, r.single)} | ${added(r.direct, r.single)} |`,
  );
  const { tunnel, direct } = measured.redis;
  const both = (c: CpuUse): string => `${c.serve.toFixed(0)} + ${c.redis.toFixed(0)}`;
  const ratio = (c: CpuUse, single: CpuUse): string => `${((c.serve + c.redis) / single.serve).toFixed(2)}x`;
  const cpu = measured.cpu.map(
    (r) =>
      `| ${r.label} | ${both(r.tunnel)} | ${both(r.direct)} | ${r.single.serve.toFixed(0)} | ${ratio(r.tunnel, r.single)} / ${ratio(r.direct, r.single)} |`,
  );
  const cpuTable = [
    '| CPU ms per 1,000 calls | 3 replicas through Redis: serves + Redis | 3 replicas over HTTP: serves + Redis | one serve | vs one (Redis / HTTP) |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...cpu,
  ].join('\n');
  return `${[
    '| case | 3 replicas through Redis, ms | 3 replicas over HTTP, ms | one serve, ms | vs one (Redis / HTTP) | added ms per call / per carried request, Redis | the same, HTTP |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...lines,
  ].join(
    '\n',
  )}\n\nThrough Redis per call (${CALLS.toLocaleString('en')} sequential calls, heartbeats included): ${(tunnel.bytes / 1024).toFixed(2)} KiB and ${tunnel.publishes.toFixed(2)} PUBLISHes carried through pub/sub; ${(direct.bytes / 1024).toFixed(2)} KiB and ${direct.publishes.toFixed(2)} PUBLISHes forwarded over HTTP (--advertise-url).\n\nCPU (medians of ${CPU_RUNS} runs; the serve processes' own, from /proc, their servers not counted; Redis's from INFO cpu; Redis beside one serve is idle and not counted):\n\n${cpuTable}${warningNote(measured.warnings, "the SDK client's, at 1,000 concurrent requests")}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${replicaTable(await replicaRoundTrips())}\n`);
