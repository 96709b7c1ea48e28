// The tasks extension through serve: a `tasks/get` of a running task, asked of the conformance fixture directly
// (the MCP SDK 2.x's own HTTP handler), through `mcp-frame serve` of it alone (passed through) and through a
// gateway that puts it beside another server (routed by the task's id to the server that made it). The same
// client (connect(), 2026-07-28, declaring the extension), sequential requests, the three interleaved, medians.
// npm run bench runs it; `node dist/bench/tasks.js` runs it alone.
import { fileURLToPath } from 'node:url';
import { connect } from '../lib/client/connect.js';
import type { Connection } from '../lib/client/connection.js';
import { TASKS_EXTENSION } from '../lib/gateway/tasks.js';
import { serve } from '../lib/serve/index.js';
import { conformanceHttp } from '../test/helpers/conformance-server.js';

const FIXTURE = fileURLToPath(new URL('../test/helpers/servers/conformance.js', import.meta.url));
const STEPS = fileURLToPath(new URL('../test/helpers/servers/steps.js', import.meta.url));
const ROUNDS = 5;
const REQUESTS = 300;

export interface TasksRow {
  name: string;
  /** Median µs of a tasks/get, over the rounds' medians. */
  getUs: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A client of `url` that declares the extension, and a task of slow_compute (named `tool`) running for 10 minutes. */
async function target(name: string, url: string, tool: string): Promise<{ name: string; client: Connection; taskId: string }> {
  const client = await connect({ type: 'http', url }, { name: 'bench', capabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
  const created = (await client.request('tools/call', { name: tool, arguments: { seconds: 600, label: 'bench' } })) as { taskId?: string };
  if (typeof created.taskId !== 'string') throw new Error(`${name}: ${tool} made no task: ${JSON.stringify(created)}`);
  return { name, client, taskId: created.taskId };
}

export async function tasksCost(): Promise<TasksRow[]> {
  const native = await conformanceHttp();
  const alone = await serve({ command: process.execPath, args: [FIXTURE] }, { log: () => undefined });
  const gateway = await serve(
    { fixture: { command: process.execPath, args: [FIXTURE] }, other: { command: process.execPath, args: [STEPS] } },
    { prefix: 'conflicts', log: () => undefined },
  );
  const targets = [
    await target('the fixture directly (the SDK 2.x HTTP handler)', native.url, 'slow_compute'),
    await target('through serve of it alone (passed through)', alone.url!, 'slow_compute'),
    await target('through a gateway of it and another server (routed)', gateway.url!, 'slow_compute'),
  ];
  const rounds = new Map<string, number[]>(targets.map((t) => [t.name, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of targets) {
        for (let i = 0; i < 30; i++) await t.client.request('tasks/get', { taskId: t.taskId });
        const times: number[] = [];
        for (let i = 0; i < REQUESTS; i++) {
          const start = process.hrtime.bigint();
          const got = (await t.client.request('tasks/get', { taskId: t.taskId })) as { status?: string };
          times.push(Number(process.hrtime.bigint() - start) / 1000);
          if (got.status !== 'working') throw new Error(`${t.name}: the task is ${got.status}`);
        }
        rounds.get(t.name)!.push(median(times));
      }
    }
  } finally {
    for (const t of targets) {
      await t.client.request('tasks/cancel', { taskId: t.taskId }).catch(() => undefined);
      await t.client.close();
    }
    await gateway.close();
    await alone.close();
    await native.close();
  }
  return targets.map((t) => ({ name: t.name, getUs: median(rounds.get(t.name)!) }));
}

export function tasksTable(rows: TasksRow[]): string {
  const [direct, alone] = [rows[0]!.getUs, rows[1]!.getUs];
  return [
    '| tasks/get of a running task | median | against directly | against serve of it alone |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.name} | ${r.getUs.toFixed(0)} µs | ${(r.getUs / direct).toFixed(2)}x | ${(r.getUs / alone).toFixed(2)}x |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(tasksTable(await tasksCost()));
