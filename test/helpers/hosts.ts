// The real MCP hosts pinned in peers/ (Claude Code, Gemini CLI, and mcpc, a command-line client), each run with a HOME of its own in a temporary
// folder and a stand-in model API (model-api.ts), as a user would run them headless: `claude -p`, `gemini -p`,
// and their `mcp list`. Where peers/ is not installed (npm ci --prefix peers; .ci/run does it), `hostsPresent`
// says which are missing, for the tests to say they are skipped.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './fixtures.js';
import type { ModelApi } from './model-api.js';

/** Claude Code's native binary, from its platform package (the wrapper package's postinstall, which npm 11 does not run, would copy it). */
export const CLAUDE = join(ROOT, `peers/node_modules/@anthropic-ai/claude-code-${process.platform}-${process.arch}/claude`);
export const GEMINI = join(ROOT, 'peers/node_modules/@google/gemini-cli/bundle/gemini.js');

export const MCPC = join(ROOT, 'peers/node_modules/@apify/mcpc/bin/mcpc');

export function hostsMissing(): string[] {
  return [
    ...(existsSync(CLAUDE) ? [] : [`Claude Code (${CLAUDE})`]),
    ...(existsSync(GEMINI) ? [] : [`Gemini CLI (${GEMINI})`]),
    ...(existsSync(MCPC) ? [] : [`mcpc (${MCPC})`]),
  ];
}

export interface HostRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs = 60_000): Promise<HostRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The environment of a host run: this one's, with its own HOME and the stand-in API, and nothing sent elsewhere. */
function hostEnv(home: string, extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...extra };
  // A proxy of the machine's would take the host's requests to 127.0.0.1 elsewhere.
  for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NODE_USE_ENV_PROXY']) delete env[key];
  return env;
}

/**
 * `claude <args>` with HOME `home`, the stand-in as its Messages API, no traffic but that, and MCP tools offered
 * to the model at once (not behind its tool search), as a short MCP tool list is.
 */
export function claude(args: string[], home: string, api: ModelApi): Promise<HostRun> {
  const env = hostEnv(home, {
    ANTHROPIC_BASE_URL: api.url,
    ANTHROPIC_API_KEY: 'sk-ant-stand-in',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    ENABLE_TOOL_SEARCH: 'false',
  });
  return run(CLAUDE, args, env, home);
}

/** `gemini <args>` with HOME `home` (its ~/.gemini/settings.json), the stand-in as its API, the folder trusted. */
export function gemini(args: string[], home: string, api: ModelApi): Promise<HostRun> {
  const env = hostEnv(home, { GEMINI_API_KEY: 'stand-in', GOOGLE_GEMINI_BASE_URL: api.url, GEMINI_CLI_TRUST_WORKSPACE: 'true', NO_COLOR: '1' });
  return run(process.execPath, [GEMINI, ...args], env, home);
}

/** `mcpc <args>` with HOME `home` (its sessions, and their background bridge, live under it). */
export function mcpc(args: string[], home: string): Promise<HostRun> {
  return run(process.execPath, [MCPC, ...args], hostEnv(home, {}), home);
}
