// examples/replicas.sh run as a user runs it: three replicas of the example server on one Redis, behind nginx
// round robin, forwarding to each other over HTTP; then stopped with SIGTERM, every part with it.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { requireCommand } from '../helpers/commands.js';
import { ROOT } from '../helpers/fixtures.js';
import { freePort } from '../helpers/ports.js';

/** True once nothing listens on `port` of 127.0.0.1. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('examples/replicas.sh: three replicas behind nginx on one Redis', function () {
  this.timeout(60_000);
  before(function () {
    if (requireCommand(this, 'redis-server', ['--version'])) requireCommand(this, 'nginx', ['-v']);
  });

  it('serves sessions of both eras through nginx round robin, each request on any replica, and stops every part on SIGTERM', async () => {
    const front = await freePort();
    const proc = spawn('bash', [`${ROOT}examples/replicas.sh`, String(front)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not ready within 40 s: ${out}${err}`)), 40_000);
        const check = (): void => {
          if (!out.includes('ready: ')) return;
          clearTimeout(timer);
          resolve();
        };
        proc.stdout.on('data', check);
        void exited.then((code) => reject(new Error(`exited ${code} before it was ready: ${out}${err}`)));
      });
      const url = `http://127.0.0.1:${front}/mcp`;
      expect(out).to.include(`ready: ${url}`);
      for (const protocolVersion of ['2025-11-25', undefined]) {
        const c = await connect({ type: 'http', url }, protocolVersion === undefined ? {} : { protocolVersion });
        try {
          // Round robin sends these to every replica; a session's requests reach the one replica that holds it.
          for (let i = 0; i < 6; i++) {
            expect(await c.request('tools/call', { name: 'echo', arguments: { text: `ünï ${i}` } })).to.deep.include({
              content: [{ type: 'text', text: `ünï ${i}` }],
            });
          }
        } finally {
          await c.close();
        }
      }
    } finally {
      proc.kill('SIGTERM');
      expect(await exited).to.equal(143);
    }
    expect(await refused(front)).to.equal(true);
  });
});
