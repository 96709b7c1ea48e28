// @modelcontextprotocol/server-everything started as a child in one of its HTTP modes. It takes its port from
// PORT and prints the one it was given, so a free port on 127.0.0.1 is found first; clients are pointed at
// 127.0.0.1 only.
import { type ChildProcess, spawn } from 'node:child_process';
import { ROOT } from './fixtures.js';
import { freePort } from './ports.js';

export interface Everything {
  url: string;
  stop(): Promise<void>;
}

const READY = { streamableHttp: 'listening on port', sse: 'running on port' } as const;
const PATH = { streamableHttp: '/mcp', sse: '/sse' } as const;

export async function startEverything(mode: 'streamableHttp' | 'sse'): Promise<Everything> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, mode], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  let stderr = '';
  try {
    await new Promise<void>((resolve, reject) => {
      child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        if (stderr.includes(READY[mode])) resolve();
      });
      child.once('exit', () => reject(new Error(`server-everything exited: ${stderr}`)));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `http://127.0.0.1:${port}${PATH[mode]}`, stop };
}
