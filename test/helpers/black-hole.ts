// An address on 127.0.0.1 that takes no connection and refuses none: a listener in a process of its own, stopped
// (SIGSTOP) so it accepts nothing, its accept queue filled by connections held here. The kernel then drops the
// SYN of any further connection, as a host that drops packets does: a connect waits for its own timeout.
import { spawn } from 'node:child_process';
import net from 'node:net';

export interface BlackHole {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  close(): Promise<void>;
}

const LISTENER = "const s = require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => console.log(s.address().port))";

/** Resolves true when a connection to `port` completes within `ms`; the socket is kept in `held` either way. */
function connects(port: number, ms: number, held: net.Socket[]): Promise<boolean> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  held.push(socket);
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms, false);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export async function blackHole(): Promise<BlackHole> {
  const child = spawn(process.execPath, ['-e', LISTENER], { stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`the listener exited with ${code}`)));
  });
  child.kill('SIGSTOP');
  const held: net.Socket[] = [];
  const close = async (): Promise<void> => {
    for (const socket of held) socket.destroy();
    child.kill('SIGKILL');
    await exited;
  };
  // Connections complete until the queue is full (two, for a backlog of one); the first that does not, proves it.
  for (let i = 0; ; i++) {
    if (!(await connects(port, 300, held))) break;
    if (i === 20) {
      await close();
      throw new Error('the stopped listener kept taking connections: no black hole on this system');
    }
  }
  return { url: `http://127.0.0.1:${port}`, close };
}
