// serve() for tests: with its log kept, and sessions opened by hand.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { expect } from 'chai';
import type { StdioServerConfig } from '../../lib/client/config.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from './fixtures.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { countIn, MCP_HEADERS, postUnread, rawRequest } from './raw-http.js';

export const STEPS = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/steps.js`] };

/** An initialize request, as a raw client sends it. */
export const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** serve() on 127.0.0.1, its log lines kept in `log` instead of printed. */
export async function served(entry: StdioServerConfig = STEPS, options: ServeOptions = {}): Promise<{ bridge: ServeHandle; log: string[] }> {
  const log: string[] = [];
  const bridge = await serve(entry, { log: (line) => log.push(line), ...options });
  return { bridge, log };
}

/** Opens a session by hand: initialize, then initialized; resolves with its id. */
export async function rawSession(url: string, headers: Record<string, string> = {}): Promise<string> {
  const init = await rawRequest(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: INIT });
  expect(init.status, init.body).to.equal(200);
  const id = init.headers['mcp-session-id'] as string;
  const done = await rawRequest(url, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...headers, 'mcp-session-id': id },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(done.status).to.equal(202);
  return id;
}

/** The server pids a serve log names, in the order their sessions started. */
export const pidsOf = (log: string[]): number[] => log.flatMap((l) => [...l.matchAll(/server pid (\d+)/g)].map((m) => Number(m[1])));

export interface ServeProcess {
  proc: ChildProcessWithoutNullStreams;
  /** Its stderr so far. */
  stderr(): string;
  exited: Promise<number | null>;
  /** The Streamable HTTP endpoint it printed, when it serves HTTP. */
  url: string | undefined;
}

/** Runs `mcp-frame serve <args>` and resolves once it says where it listens. */
export async function serveProcess(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'serve', ...args], { cwd: ROOT, env });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const check = (): void => (stderr.includes('listening on') ? resolve() : void proc.stderr.once('data', check));
    check();
    void exited.then(() => reject(new Error(`mcp-frame serve exited: ${stderr}`)));
  });
  return { proc, stderr: () => stderr, exited, url: /listening on (https?:\/\/\S+\/mcp)/.exec(stderr)?.[1] };
}

/**
 * A session calls STEPS's `flood` (as `tool`: 1,000 log messages of 64 KiB) and reads nothing for 1.5 s: the server
 * must have been held (fewer than half written, by its stderr lines in `log`), serve's RSS not grown by 48 MiB
 * (what the pipe, the socket buffers and the decoder's few messages hold is far less); then every message arrives.
 */
export async function floodUnread(url: string, tool: string, log: string[]): Promise<void> {
  const session = await rawSession(url);
  const count = 1000;
  const rssBefore = process.memoryUsage().rss;
  const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: { count, size: 64 * 1024 } } });
  const res = await postUnread(url, session, body);
  await sleep(1500);
  const written = Math.max(0, ...log.map((l) => Number(/flood wrote (\d+)/.exec(l)?.[1] ?? 0)));
  const grown = process.memoryUsage().rss - rssBefore;
  expect(written, 'messages the server could write while nobody read').to.be.below(count / 2);
  expect(grown, 'RSS growth while nobody read').to.be.below(48 * 1024 * 1024);
  const { count: delivered, tail } = await countIn(res, '"method":"notifications/message"');
  expect(delivered).to.equal(count);
  expect(tail).to.include(`${count} sent`);
}
