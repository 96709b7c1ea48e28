import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import { FrameDecoder, FrameEncoder } from '../lib/streams.js';
import { numberedMessage } from './helpers/children/messages.js';

const child = (name: string): string => fileURLToPath(new URL(`./helpers/children/${name}.js`, import.meta.url));

describe('FrameDecoder and FrameEncoder on real child processes', () => {
  for (const seed of [1, 2, 3]) {
    it(`decodes thousands of messages that a child writes in irregular pieces (seed ${seed})`, async () => {
      const count = 3000;
      const proc = spawn(process.execPath, [child('writer'), String(count), String(seed)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let reads = 0;
      proc.stdout.on('data', () => reads++);
      const got: unknown[] = [];
      for await (const msg of proc.stdout.pipe(new FrameDecoder())) got.push(msg);
      const [code] = (await once(proc, 'exit')) as [number | null];
      expect(code).to.equal(0);
      expect(reads).to.be.greaterThan(10);
      expect(got).to.have.length(count);
      got.forEach((msg, i) => {
        expect(msg).to.deep.equal(numberedMessage(i));
      });
    });
  }

  it("writes messages into a child's stdin that it reads back line for line", async () => {
    const count = 2000;
    const proc = spawn(process.execPath, [child('line-checker'), '0'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const report = text(proc.stdout);
    const encoder = new FrameEncoder();
    encoder.pipe(proc.stdin);
    for (let i = 0; i < count; i++) {
      if (!encoder.write(numberedMessage(i))) await once(encoder, 'drain');
    }
    encoder.end();
    expect(JSON.parse(await report)).to.deep.include({ lines: count, trailing: '', firstMismatch: null });
  });

  it('stops pulling messages while the child is not reading, then delivers them all', async () => {
    const total = 4000;
    let produced = 0;
    const source = new Readable({
      objectMode: true,
      read() {
        this.push(produced < total ? numberedMessage(produced++) : null);
      },
    });
    const proc = spawn(process.execPath, [child('line-checker'), '1500'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const report = text(proc.stdout);
    const done = pipeline(source, new FrameEncoder(), proc.stdin);
    await new Promise((resolve) => setTimeout(resolve, 700));
    // While the child sleeps, only the pipe's and the streams' buffers fill: a few hundred KiB, not all 4000
    // messages (about 6 MiB).
    const whileAsleep = produced;
    expect(whileAsleep).to.be.greaterThan(0);
    expect(whileAsleep).to.be.lessThan(total / 4);
    await done;
    expect(produced).to.equal(total);
    expect(JSON.parse(await report)).to.deep.include({ lines: total, trailing: '', firstMismatch: null });
  });
});
