import { spawn } from 'node:child_process';
import { ROOT } from './fixtures.js';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end and collects its output; `stdin` is written and closed. */
export function run(command: string, args: string[], options: { stdin?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { cwd: options.cwd ?? ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    proc.on('error', reject);
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
    proc.stdin.on('error', () => undefined);
    proc.stdin.end(options.stdin ?? '');
  });
}

/** Runs the built command line: `mcp-frame ...args`. */
export function cli(args: string[], options: { stdin?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return run(process.execPath, [`${ROOT}dist/lib/cli/main.js`, ...args], options);
}

/** The JSON messages a child writes on `stdout`, one a line, parsed as they arrive (the array grows). */
export function jsonLines(stdout: NodeJS.ReadableStream): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  let buffer = '';
  stdout.setEncoding('utf8').on('data', (d: string) => {
    buffer += d;
    for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n')) {
      lines.push(JSON.parse(buffer.slice(0, end)) as Record<string, unknown>);
      buffer = buffer.slice(end + 1);
    }
  });
  return lines;
}
