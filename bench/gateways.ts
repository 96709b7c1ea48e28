// Gateways side by side: the same stdio server (server-everything) behind `mcp-frame serve` (/mcp and /sse),
// supergateway (stateful Streamable HTTP, and SSE), mcp-proxy, and the server's own Streamable HTTP mode; and a
// floor, a bare node:http server that pipes each POST body to a child echoing lines (no MCP, no checks; a bare
// client). Then the other direction: a stdio client in front of the server's own HTTP mode through `mcp-frame
// bridge`, mcp-remote and supergateway's stdio output, against the SDK's HTTP client talking to it directly.
// One MCP SDK client per gateway, rounds interleaved, medians: ms per call sequential and concurrent, CPU per
// call of the gateway process (not its server's), its peak RSS, and the time from starting it to the first
// tools/list answer. npm run bench runs it; `node --expose-gc dist/bench/gateways.js` runs it alone.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ROOT } from '../test/helpers/fixtures.js';
import { median } from './http.js';
import { countingWarnings, warningNote } from './warnings.js';
import { freePort } from '../test/helpers/ports.js';
import { cpuMs } from '../test/helpers/processes.js';
import { gc } from './gc.js';

const NODE = process.execPath;
const EVERYTHING = `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
const BIN = `${ROOT}dist/lib/cli/main.js`;
const SUPERGATEWAY = `${ROOT}node_modules/supergateway/dist/index.js`;
const MCP_PROXY = `${ROOT}node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs`;
const MCP_REMOTE = `${ROOT}node_modules/mcp-remote/dist/proxy.js`;
/** The floor's child: every line it reads, written back. */
const ECHO_CHILD = 'process.stdin.pipe(process.stdout)';

export interface GatewayRow {
  name: string;
  /** ms per call, median over the rounds. */
  sequential: number;
  concurrent: number;
  /** ms of the gateway process's CPU per call. */
  cpuPerCall: number;
  /** MiB, the gateway process's peak resident set. */
  peakRss: number;
  /** ms from starting the gateway to the first tools/list answer. */
  firstList: number;
}

export interface GatewayResults {
  gateways: GatewayRow[];
  bridges: GatewayRow[];
  calls: { sequential: number; concurrent: number; rounds: number };
  warnings: Map<string, number>;
}

const SEQUENTIAL = 300;
const CONCURRENT = 300;
const ROUNDS = 5;

/** The peak resident set of a process, in MiB (Linux /proc: VmHWM). */
function peakRssMiB(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? Number.NaN : Number(match[1]) / 1024;
}

type Call = () => Promise<unknown>;

/** A gateway under test: its process (whose CPU and memory count), and a client on it once it answers. */
interface Subject {
  name: string;
  client: Client | undefined;
  proc: ChildProcess | undefined;
  call: Call;
  startedAt: number;
  firstList: number;
  close(): Promise<void>;
}

function started(args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  return spawn(NODE, args, { stdio: ['ignore', 'ignore', 'ignore'], env });
}

async function stop(proc: ChildProcess | undefined): Promise<void> {
  if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** Connects an SDK client with `transport()` until the gateway answers (it may still be starting). */
async function sdkOn(name: string, transport: () => Transport, proc: ChildProcess | undefined, startedAt: number): Promise<Subject> {
  for (const end = Date.now() + 30_000; ; ) {
    const client = new Client({ name: 'bench', version: '1.0.0' });
    try {
      await client.connect(transport());
      await client.listTools();
      const firstList = performance.now() - startedAt;
      return {
        name,
        client,
        proc,
        startedAt,
        firstList,
        call: () => client.callTool({ name: 'echo', arguments: { message: 'hello' } }),
        close: async () => {
          await client.close();
          await stop(proc);
        },
      };
    } catch (err) {
      await client.close().catch(() => undefined);
      if (Date.now() > end || (proc !== undefined && proc.exitCode !== null)) throw new Error(`${name} did not answer: ${(err as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

const http1 = (port: number, path: string) => new URL(`http://127.0.0.1:${port}${path}`);

async function gateway(name: string, args: (port: number) => string[], path: string, sse = false): Promise<Subject> {
  const port = await freePort();
  const startedAt = performance.now();
  const proc = started(args(port));
  return sdkOn(name, () => (sse ? new SSEClientTransport(http1(port, path)) : new StreamableHTTPClientTransport(http1(port, path))), proc, startedAt);
}

/** The floor: node:http and a pipe to an echoing child, with a bare client (fetch, keep-alive). */
async function floor(): Promise<Subject> {
  const startedAt = performance.now();
  const child = spawn(NODE, ['-e', ECHO_CHILD], { stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting: Array<(line: string) => void> = [];
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buffer += d;
    for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
      waiting.shift()?.(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
  });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      waiting.push((line) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(line));
      child.stdin!.write(`${Buffer.concat(chunks).toString()}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`;
  let id = 0;
  const body = () => JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hello' } } });
  const call = async (): Promise<unknown> =>
    (await fetch(url, { method: 'POST', body: body(), headers: { 'content-type': 'application/json' } })).json();
  await call();
  const firstList = performance.now() - startedAt;
  return {
    name: 'floor: node:http piped to an echoing child, bare client',
    client: undefined,
    proc: undefined,
    startedAt,
    firstList,
    call,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      child.stdin!.end();
      child.kill();
    },
  };
}

/** server-everything's own Streamable HTTP mode on a port of ours. */
function everythingHttp(port: number): ChildProcess {
  return spawn(NODE, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' });
}

/** A stdio client (the SDK's) on a bridge process in front of `url`; the bridge's pid found as the transport's. */
async function bridgeOn(name: string, command: string[], env: Record<string, string>): Promise<Subject> {
  const startedAt = performance.now();
  let transport: StdioClientTransport | undefined;
  const subject = await sdkOn(
    name,
    () => {
      transport = new StdioClientTransport({
        command: NODE,
        args: command,
        env: { ...(process.env as Record<string, string>), ...env },
        stderr: 'ignore',
      });
      return transport;
    },
    undefined,
    startedAt,
  );
  const pid = transport!.pid ?? undefined;
  return { ...subject, proc: pid === undefined ? undefined : ({ pid, exitCode: null, signalCode: null } as ChildProcess) };
}

/**
 * ms per call for `n` calls, one after another or all at once. Each timing starts from a collection when the bench
 * may ask for one (--expose-gc): every subject's SDK client lives in this process, and a collection of one
 * client's garbage (or of the sections before) was otherwise charged to whichever subject ran next.
 */
async function timed(call: Call, n: number, concurrent: boolean): Promise<number> {
  gc?.();
  const t = performance.now();
  if (concurrent) await Promise.all(Array.from({ length: n }, () => call()));
  else for (let i = 0; i < n; i++) await call();
  return (performance.now() - t) / n;
}

/** Every subject through the same rounds, interleaved (the order reversed every other round). */
async function measure(subjects: Subject[]): Promise<GatewayRow[]> {
  for (const s of subjects) await timed(s.call, 50, false);
  const seq = new Map<Subject, number[]>(subjects.map((s) => [s, []]));
  const conc = new Map<Subject, number[]>(subjects.map((s) => [s, []]));
  const cpu = new Map<Subject, number>(subjects.map((s) => [s, 0]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of round % 2 ? [...subjects].reverse() : subjects) {
      const pid = s.proc?.pid;
      const before = pid === undefined ? 0 : cpuMs(pid);
      seq.get(s)!.push(await timed(s.call, SEQUENTIAL, false));
      conc.get(s)!.push(await timed(s.call, CONCURRENT, true));
      if (pid !== undefined) cpu.set(s, cpu.get(s)! + cpuMs(pid) - before);
    }
  }
  return subjects.map((s) => ({
    name: s.name,
    sequential: median(seq.get(s)!),
    concurrent: median(conc.get(s)!),
    cpuPerCall: s.proc?.pid === undefined ? Number.NaN : cpu.get(s)! / (ROUNDS * (SEQUENTIAL + CONCURRENT)),
    peakRss: s.proc?.pid === undefined ? Number.NaN : peakRssMiB(s.proc.pid),
    firstList: s.firstList,
  }));
}

async function closing<T>(subjects: Subject[], fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    for (const s of subjects) await s.close().catch(() => undefined);
  }
}

export async function gatewayRoundTrips(): Promise<GatewayResults> {
  const { result, warnings } = await countingWarnings(async () => {
    const gateways: Subject[] = [];
    const rows = await closing(gateways, async () => {
      gateways.push(
        await gateway('mcp-frame serve (/mcp)', (port) => [BIN, 'serve', '--port', String(port), '--', NODE, EVERYTHING, 'stdio'], '/mcp'),
      );
      gateways.push(
        await gateway('mcp-frame serve (/sse)', (port) => [BIN, 'serve', '--port', String(port), '--', NODE, EVERYTHING, 'stdio'], '/sse', true),
      );
      const stdioCommand = `${NODE} ${EVERYTHING} stdio`;
      gateways.push(
        await gateway(
          'supergateway (stateful Streamable HTTP)',
          (port) => [
            SUPERGATEWAY,
            '--stdio',
            stdioCommand,
            '--outputTransport',
            'streamableHttp',
            '--stateful',
            '--port',
            String(port),
            '--logLevel',
            'none',
          ],
          '/mcp',
        ),
      );
      gateways.push(
        await gateway(
          'supergateway (SSE)',
          (port) => [SUPERGATEWAY, '--stdio', stdioCommand, '--port', String(port), '--logLevel', 'none'],
          '/sse',
          true,
        ),
      );
      gateways.push(
        await gateway(
          'mcp-proxy (Streamable HTTP)',
          (port) => [MCP_PROXY, '--port', String(port), '--host', '127.0.0.1', '--', NODE, EVERYTHING, 'stdio'],
          '/mcp',
        ),
      );
      {
        const port = await freePort();
        const startedAt = performance.now();
        const proc = everythingHttp(port);
        gateways.push(
          await sdkOn("server-everything's own Streamable HTTP mode", () => new StreamableHTTPClientTransport(http1(port, '/mcp')), proc, startedAt),
        );
      }
      gateways.push(await floor());
      return measure(gateways);
    });
    // Bridges: in front of the server's own HTTP mode.
    const port = await freePort();
    const remote = everythingHttp(port);
    const url = `http://127.0.0.1:${port}/mcp`;
    const home = mkdtempSync(join(tmpdir(), 'mcp-frame-bench-'));
    const bridges: Subject[] = [];
    try {
      const bridgeRows = await closing(bridges, async () => {
        bridges.push(await sdkOn('SDK HTTP client, no bridge', () => new StreamableHTTPClientTransport(new URL(url)), undefined, performance.now()));
        bridges.push(await bridgeOn('mcp-frame bridge', [BIN, 'bridge', '--url', url], { MCP_FRAME_AUTH_DIR: home }));
        // mcp-remote keeps its state under $MCP_REMOTE_CONFIG_DIR (~/.mcp-auth by default): a temporary folder here.
        bridges.push(await bridgeOn('mcp-remote', [MCP_REMOTE, url, '--transport', 'http-only'], { MCP_REMOTE_CONFIG_DIR: home }));
        bridges.push(await bridgeOn('supergateway (stdio output)', [SUPERGATEWAY, '--streamableHttp', url, '--logLevel', 'none'], {}));
        return measure(bridges);
      });
      return { gateways: rows, bridges: bridgeRows };
    } finally {
      await stop(remote);
      rmSync(home, { recursive: true, force: true });
    }
  });
  return { ...result, calls: { sequential: SEQUENTIAL, concurrent: CONCURRENT, rounds: ROUNDS }, warnings };
}

/** What a host behind a bridge sees when the remote server is killed mid-call: ms until its call fails. */
export interface GoneRow {
  name: string;
  /** ms from the kill to the host's error, or undefined when none came within the cap. */
  ms: number | undefined;
}

export const GONE_CAP_MS = 20_000;

/** One bridge: a long call in flight, the remote killed, the time until the host's call ends. */
async function whenRemoteGone(name: string, command: (url: string) => string[]): Promise<GoneRow> {
  const port = await freePort();
  const remote = everythingHttp(port);
  const url = `http://127.0.0.1:${port}/mcp`;
  const home = mkdtempSync(join(tmpdir(), 'mcp-frame-bench-'));
  let bridge: Subject | undefined;
  try {
    bridge = await bridgeOn(name, command(url), { MCP_FRAME_AUTH_DIR: home, MCP_REMOTE_CONFIG_DIR: home });
    const client = bridge.client!;
    const call = client
      .callTool({ name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 60 } }, undefined, { timeout: GONE_CAP_MS * 3 })
      .then(
        () => performance.now(),
        () => performance.now(),
      );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const killed = performance.now();
    remote.kill('SIGKILL');
    const cap = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), GONE_CAP_MS).unref());
    const ended = await Promise.race([call, cap]);
    return { name, ms: ended === undefined ? undefined : ended - killed };
  } finally {
    await bridge?.close().catch(() => undefined);
    await stop(remote);
    rmSync(home, { recursive: true, force: true });
  }
}

export async function remoteGone(): Promise<GoneRow[]> {
  return [
    await whenRemoteGone('mcp-frame bridge --reconnect-attempts 2 --reconnect-max-delay 500', (url) => [
      BIN,
      'bridge',
      '--url',
      url,
      '--reconnect-attempts',
      '2',
      '--reconnect-max-delay',
      '500',
    ]),
    await whenRemoteGone('mcp-remote', (url) => [MCP_REMOTE, url, '--transport', 'http-only']),
    await whenRemoteGone('supergateway (stdio output)', (url) => [SUPERGATEWAY, '--streamableHttp', url, '--logLevel', 'none']),
  ];
}

export function goneTable(rows: GoneRow[]): string {
  const lines = rows.map(
    (r) => `| ${r.name} | ${r.ms === undefined ? `no answer within ${GONE_CAP_MS / 1000} s` : `${(r.ms / 1000).toFixed(1)} s`} |`,
  );
  return ["| bridge | from the kill to the host's error |", '| --- | ---: |', ...lines].join('\n');
}

/** Median ms to import each module specifier in a fresh process, with a bare `node -e ''` for the baseline. */
export async function importCost(specifiers: string[], runs = 9): Promise<Array<{ what: string; ms: number }>> {
  const once = (code: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const t = performance.now();
      const child = spawn(NODE, ['--input-type=module', '-e', code], { cwd: ROOT, stdio: 'ignore' });
      child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t) : reject(new Error(`import failed: ${code}`))));
    });
  const rows: Array<{ what: string; ms: number }> = [];
  for (const [what, code] of [['node, nothing imported', ''], ...specifiers.map((s) => [`import '${s}'`, `await import('${s}')`])] as const) {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) times.push(await once(code));
    rows.push({ what, ms: median(times) });
  }
  return rows;
}

const ms = (n: number, digits = 2): string => (Number.isNaN(n) ? '–' : n.toFixed(digits));

function table(rows: GatewayRow[], reference: string): string {
  const ref = rows.find((r) => r.name.startsWith(reference))!;
  const lines = rows.map(
    (r) =>
      `| ${r.name} | ${ms(r.sequential, 3)} | ${ms(r.sequential / ref.sequential)}x | ${ms(r.concurrent, 3)} | ${ms(r.concurrent / ref.concurrent)}x | ${ms(r.cpuPerCall, 3)} | ${ms(r.peakRss, 0)} | ${ms(r.firstList, 0)} |`,
  );
  return [
    `| gateway | ms per call, sequential | vs ${reference} | ms per call, concurrent | vs ${reference} | CPU ms per call (gateway process) | peak RSS, MiB | ms to first tools/list |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...lines,
  ].join('\n');
}

export function gatewayTables(results: GatewayResults): string {
  const { sequential, concurrent, rounds } = results.calls;
  return [
    `Medians of ${rounds} interleaved rounds of ${sequential} sequential and ${concurrent} concurrent \`tools/call\` (echo), after a warm-up; every row but the floor is the MCP SDK 1.x client. CPU and peak RSS are the gateway process's own (Linux /proc), not its server's; "first tools/list" counts from starting the gateway. Each timing starts from a collection in the client process.`,
    '',
    '**A stdio server offered over HTTP** (server-everything over stdio behind each gateway):',
    '',
    table(results.gateways, 'mcp-frame serve (/mcp)'),
    '',
    "**A stdio client in front of a remote server** (server-everything's own Streamable HTTP mode behind each bridge):",
    '',
    table(results.bridges, 'mcp-frame bridge'),
    warningNote(results.warnings, "the SDK client's, at concurrent requests"),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${gatewayTables(await gatewayRoundTrips())}\n`);
