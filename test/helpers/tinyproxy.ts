// A forward proxy of the test's own: Debian's tinyproxy on a free 127.0.0.1 port, in the foreground, logging
// every request it takes. Where tinyproxy is not installed the tests that need it are skipped with a line saying
// so, except under CI (.ci/run installs it), where its absence fails the run.
import { type ChildProcess, spawn } from 'node:child_process';
import { requireCommand } from './commands.js';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { tempDir } from './temp.js';

export interface Tinyproxy {
  url: string;
  /** The targets of the CONNECT requests the proxy took, in order (`host:port`). */
  tunnels(): string[];
  close(): Promise<void>;
}

/** For a `before` hook: skips the suite when tinyproxy is missing (saying so), or fails it under CI. */
export function requireTinyproxy(ctx: Mocha.Context): boolean {
  return requireCommand(ctx, 'tinyproxy', ['-v']);
}

export async function startTinyproxy(): Promise<Tinyproxy> {
  const dir = tempDir('tinyproxy-');
  const port = await freePort();
  const log = join(dir, 'tinyproxy.log');
  const conf = join(dir, 'tinyproxy.conf');
  writeFileSync(conf, [`Port ${port}`, 'Listen 127.0.0.1', 'Timeout 60', `LogFile "${log}"`, 'LogLevel Connect', 'MaxClients 100', ''].join('\n'));
  const child: ChildProcess = spawn('tinyproxy', ['-d', '-c', conf], { stdio: 'ignore' });
  for (const end = Date.now() + 10_000; ; ) {
    if (child.exitCode !== null) throw new Error(`tinyproxy exited with ${child.exitCode}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > end) throw new Error('tinyproxy did not listen within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels: () => {
      let text = '';
      try {
        text = readFileSync(log, 'utf8');
      } catch {
        return [];
      }
      return [...text.matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((m) => m[1]!);
    },
    close: async () => {
      if (child.exitCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    },
  };
}
