// One memory measurement in a fresh process, so that peaks do not carry over between decoders or clients.
// Usage: node --expose-gc memory.js <decoder> one-message <file> [memory] | <decoder> slow-consumer <seconds>
//        | <client> round-trip <MiB>   (client: connect() | SDK Client | bare client; the example server's blob)
// Prints {"peakOverBaseline": bytes, ...} as JSON.
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Transform } from 'node:stream';
import split2 from 'split2';
import { FrameDecoder } from '../lib/index.js';
import { ndjsonBytes, smallMessages } from './data.js';
import { bare, ours, type Peer, SERVERS, sdk } from './stdio.js';
import { gc } from './gc.js';

const [decoder = 'FrameDecoder', mode = 'one-message', arg = '', feed = 'file'] = process.argv.slice(2);
if (!gc) throw new Error('run with --expose-gc');

const makers: Record<string, () => Transform> = {
  FrameDecoder: () => new FrameDecoder(),
  'split2(JSON.parse)': () => split2(JSON.parse),
};

/**
 * Linux keeps a peak RSS per address space (VmHWM) that a write of "5" to clear_refs resets to the current RSS;
 * getrusage's maxRSS cannot be used, as it carries the parent's peak over from before exec.
 */
function baseline(): number {
  gc!();
  gc!();
  writeFileSync('/proc/self/clear_refs', '5');
  return process.memoryUsage().rss;
}
function peak(): number {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  if (!hwm) throw new Error('no VmHWM in /proc/self/status: the memory benchmark needs Linux');
  return Number(hwm[1]) * 1024;
}

/** `whole` in views of `size` bytes, none of them a copy. */
function* views(whole: Buffer, size: number): Generator<Buffer> {
  for (let at = 0; at < whole.length; at += size) yield whole.subarray(at, at + size);
}

if (mode === 'round-trip') {
  // One tools/call whose result is a blob of `arg` MiB, base64: the client's peak over its state once connected.
  const clients: Record<string, (server: { command: string; args: readonly string[] }) => Promise<Peer>> = {
    'connect()': ours,
    'SDK Client': sdk,
    'bare client': bare,
  };
  const open = clients[decoder];
  if (!open) throw new Error(`unknown client ${decoder}`);
  const peer = await open(SERVERS['example server']);
  const bytes = Number(arg) * 1024 * 1024;
  const base = baseline();
  const start = performance.now();
  let outcome: Record<string, unknown>;
  try {
    const result = (await peer.call('blob', { bytes })) as { structuredContent?: { bytes?: number } };
    if (result.structuredContent?.bytes !== bytes) throw new Error('the result does not hold the blob asked for');
    outcome = { ms: performance.now() - start, peakOverBaseline: peak() - base };
  } catch (err) {
    outcome = { failed: (err as Error).message.slice(0, 80) };
  }
  await peer.close();
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
} else if (mode === 'one-message') {
  // With `memory`, the file is read before the baseline and fed as 64 KiB views of it: the source's chunks are
  // then not garbage waiting for a collection, and what is measured is the decoder's own memory.
  const fromMemory = feed === 'memory' ? readFileSync(arg) : undefined;
  const base = baseline();
  let messages = 0;
  let keep: unknown;
  if (decoder === 'floor') {
    const whole = fromMemory ?? readFileSync(arg);
    keep = JSON.parse(whole.toString('utf8'));
    messages = 1;
  } else {
    const make = makers[decoder];
    if (!make) throw new Error(`unknown decoder ${decoder}`);
    await pipeline(
      fromMemory === undefined
        ? createReadStream(arg, { highWaterMark: 64 * 1024 })
        : Readable.from(views(fromMemory, 64 * 1024), { objectMode: false }),
      make(),
      new Writable({
        objectMode: true,
        write(msg: unknown, _enc, cb) {
          keep = msg;
          messages++;
          cb();
        },
      }),
    );
  }
  process.stdout.write(`${JSON.stringify({ peakOverBaseline: peak() - base, messages, kept: keep !== undefined })}\n`);
} else {
  // A producer that could write without end, a decoder, and a consumer that takes one message a millisecond.
  const seconds = Number(arg || 3);
  const pool = ndjsonBytes(smallMessages(3000, 3));
  const make = makers[decoder];
  if (!make) throw new Error(`unknown decoder ${decoder}`);
  let produced = 0;
  const source = new Readable({
    read() {
      produced += pool.length;
      this.push(pool);
    },
  });
  const base = baseline();
  let consumed = 0;
  const stop = Date.now() + seconds * 1000;
  const sink = new Writable({
    objectMode: true,
    highWaterMark: 16,
    write(_msg: unknown, _enc, cb) {
      consumed++;
      if (Date.now() > stop) source.destroy();
      setTimeout(cb, 1);
    },
  });
  await pipeline(source, make(), sink).catch(() => undefined);
  process.stdout.write(`${JSON.stringify({ peakOverBaseline: peak() - base, consumed, producedBytes: produced })}\n`);
}
