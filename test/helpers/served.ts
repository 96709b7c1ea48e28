// serve() for tests: with its log kept, and sessions opened by hand.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { expect } from 'chai';
import type { StdioServerConfig } from '../../lib/client/config.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from './fixtures.js';
import { MCP_HEADERS, rawRequest } from './raw-http.js';

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
  return { proc, stderr: () => stderr, exited, url: /listening on (http:\/\/\S+\/mcp)/.exec(stderr)?.[1] };
}
