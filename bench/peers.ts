/** The decoders and encoders measured side by side, each behind the same small interface. */
import { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import * as ndjson from 'ndjson';
import type { Transform } from 'node:stream';
import split2 from 'split2';
import { FrameDecoder, FrameEncoder } from '../lib/index.js';

export interface DecoderPeer {
  name: string;
  /** Super-linear on long lines: measured once, not repeated, on large inputs. */
  slowOnLongLines?: boolean;
  /** Decodes the chunks; resolves with the number of messages. `whole` is the same bytes in one buffer. */
  run(chunks: readonly Buffer[], whole: Buffer): Promise<number> | number;
}

function throughStream(make: () => Transform, chunks: readonly Buffer[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = make();
    let n = 0;
    stream.on('data', () => n++);
    stream.on('end', () => resolve(n));
    stream.on('error', reject);
    for (const c of chunks) stream.write(c);
    stream.end();
  });
}

/** The floor: one pass over the whole input, indexOf, toString and JSON.parse per line, nothing else. */
export function floorDecode(whole: Buffer): number {
  let n = 0;
  let start = 0;
  for (;;) {
    const nl = whole.indexOf(10, start);
    if (nl === -1) break;
    JSON.parse(whole.toString('utf8', start, nl));
    n++;
    start = nl + 1;
  }
  return n;
}

export const decoders: DecoderPeer[] = [
  { name: 'floor', run: (_chunks, whole) => floorDecode(whole) },
  { name: 'FrameDecoder', run: (chunks) => throughStream(() => new FrameDecoder(), chunks) },
  { name: 'split2(JSON.parse)', slowOnLongLines: true, run: (chunks) => throughStream(() => split2(JSON.parse), chunks) },
  { name: 'ndjson.parse()', slowOnLongLines: true, run: (chunks) => throughStream(() => ndjson.parse(), chunks) },
  {
    name: 'MCP SDK ReadBuffer',
    slowOnLongLines: true,
    run: (chunks) => {
      // Its 10 MB default cap is raised so that it can finish the large cases.
      const buffer = new ReadBuffer({ maxBufferSize: 1 << 30 } as ConstructorParameters<typeof ReadBuffer>[0]);
      let n = 0;
      for (const c of chunks) {
        buffer.append(c);
        while (buffer.readMessage() !== null) n++;
      }
      return n;
    },
  },
];

export interface EncoderPeer {
  name: string;
  /** Encodes every message; resolves with the number of bytes produced. */
  run(messages: readonly object[]): Promise<number> | number;
}

function encodeThrough(stream: Transform, messages: readonly object[]): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    stream.on('data', (c: Buffer | string) => (bytes += typeof c === 'string' ? Buffer.byteLength(c) : c.length));
    stream.on('end', () => resolve(bytes));
    stream.on('error', reject);
    for (const m of messages) stream.write(m);
    stream.end();
  });
}

export const encoders: EncoderPeer[] = [
  {
    name: 'floor',
    run: (messages) => {
      let bytes = 0;
      for (const m of messages) bytes += Buffer.from(`${JSON.stringify(m)}\n`).length;
      return bytes;
    },
  },
  { name: 'FrameEncoder', run: (messages) => encodeThrough(new FrameEncoder(), messages) },
  { name: 'ndjson.stringify()', run: (messages) => encodeThrough(ndjson.stringify(), messages) },
];
