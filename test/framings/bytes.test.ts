import { isUtf8 } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { decodeUtf8 } from '../../lib/framings/bytes.js';
import { rng } from '../helpers/chunkers.js';
import { ROOT } from '../helpers/fixtures.js';

const KiB = 1024;

/** What decodeUtf8 must give for any range: the text when the bytes are UTF-8, else undefined. */
function expected(range: Buffer): string | undefined {
  return isUtf8(range) ? range.toString('utf8') : undefined;
}

/** `size` bytes of UTF-8 text with two-, three- and four-byte characters among ASCII (cut on a character). */
function textBytes(size: number): Buffer {
  const bytes = Buffer.from('{"t":"ascii é € 😀 データ"} '.repeat(Math.ceil(size / 20)));
  let end = size;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/** Byte sequences that are not UTF-8, each of another kind. */
const BAD: Record<string, number[]> = {
  'a lone continuation byte': [0x80],
  'a character cut off': [0xe6, 0x9d],
  'an overlong encoding': [0xc0, 0xaf],
  'an overlong three-byte encoding': [0xe0, 0x80, 0xaf],
  'an encoded surrogate': [0xed, 0xa0, 0x80],
  'a code point past U+10FFFF': [0xf4, 0x90, 0x80, 0x80],
  'a byte no UTF-8 has': [0xff],
};

describe('decodeUtf8', () => {
  // Around each size where the way of decoding changes (1 KiB, 1 MiB), and well inside.
  const sizes = [0, 1, 1023, KiB, KiB + 1, 64 * KiB, KiB * KiB - 1, KiB * KiB, KiB * KiB + 1];

  it('gives the text of valid UTF-8 ranges of every size, ASCII or not, with a BOM or a U+FFFD in them kept', () => {
    for (const size of sizes) {
      const text = textBytes(size);
      const ascii = Buffer.alloc(size, 0x61);
      const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), textBytes(Math.max(0, size - 3))]);
      const replacement = Buffer.concat([textBytes(Math.max(0, size - 3)), Buffer.from('\uFFFD')]);
      for (const [what, bytes] of Object.entries({ text, ascii, bom, replacement })) {
        expect(decodeUtf8(bytes, 0, bytes.length), `${what}, ${size} bytes`).to.equal(bytes.toString('utf8'));
      }
    }
    // The BOM is text here: dropping one is the framings' business, at the start of a stream only.
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), textBytes(4 * KiB)]);
    expect(decodeUtf8(withBom, 0, withBom.length)!.charCodeAt(0)).to.equal(0xfeff);
  });

  it('decodes only its range of a larger buffer', () => {
    const whole = textBytes(200 * KiB);
    for (const [start, end] of [
      [10, 10 + 5 * KiB],
      [7 * KiB, 71 * KiB],
      [0, 500],
    ] as const) {
      let from = start;
      while ((whole[from]! & 0xc0) === 0x80) from++;
      let to = end;
      while ((whole[to]! & 0xc0) === 0x80) to++;
      expect(decodeUtf8(whole, from, to), `${from}-${to}`).to.equal(whole.toString('utf8', from, to));
    }
  });

  for (const [what, bad] of Object.entries(BAD)) {
    it(`answers undefined for ${what}, at the start, in the middle or at the end of a range of any size`, () => {
      for (const size of sizes) {
        const text = textBytes(size);
        const half = textBytes(Math.floor(size / 2));
        for (const bytes of [
          Buffer.concat([Buffer.from(bad), text]),
          Buffer.concat([half, Buffer.from(bad), half]),
          Buffer.concat([text, Buffer.from(bad)]),
        ]) {
          expect(decodeUtf8(bytes, 0, bytes.length), `${size} bytes`).to.equal(undefined);
        }
      }
    });
  }

  it('agrees with isUtf8 and toString on random bytes, short and long', () => {
    const random = rng(20261201);
    const tricky = [0x41, 0x80, 0xbf, 0xc2, 0xc0, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x90];
    for (let i = 0; i < 3000; i++) {
      const size = i % 3 === 0 ? KiB + Math.floor(random() * 4 * KiB) : 1 + Math.floor(random() * 12);
      const base = textBytes(size);
      // A few tricky bytes written over valid text: some ranges stay valid, most do not.
      const bytes = Buffer.from(base);
      const flips = Math.floor(random() * 3);
      for (let f = 0; f < flips && bytes.length > 0; f++) {
        bytes[Math.floor(random() * bytes.length)] = tricky[Math.floor(random() * tricky.length)]!;
      }
      expect(decodeUtf8(bytes, 0, bytes.length), `case ${i}`).to.equal(expected(bytes));
    }
  });
});

describe('decoding and V8', () => {
  /**
   * Runs `body` in a child that reports V8 protector invalidations; returns what it printed, or undefined where
   * this Node has no such flag.
   */
  function withProtectorTrace(body: string): string | undefined {
    const script = `
      import { FrameDecoder, frameContentLength, frameSse } from '${ROOT}dist/lib/index.js';
      ${body}
      console.log('ran');`;
    const run = spawnSync(process.execPath, ['--trace-protector-invalidation', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    if (run.status !== 0 && /bad option/.test(run.stderr)) return undefined;
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.include('ran');
    return run.stdout + run.stderr;
  }

  it('never detaches an ArrayBuffer, which would slow every typed-array loop in the process', function () {
    // Detaching one (a transfer, to free transcode's output early) invalidates V8's ArrayBufferDetaching
    // protector for the life of the process: in Node 20 a plain loop over a Uint8Array then took 1.6x as long.
    const detached = withProtectorTrace(`const { port1 } = new MessageChannel(); port1.close(); port1.postMessage(null, [new ArrayBuffer(8)]);`);
    if (detached === undefined) this.skip();
    expect(detached, 'the trace shows a detach').to.include('ArrayBufferDetaching');
    const decoded = withProtectorTrace(`
      const msg = { jsonrpc: '2.0', id: 1, result: { text: 'größe café データ 😀 '.repeat(400) } };
      for (const [framing, text] of [['ndjson', JSON.stringify(msg) + '\\n'], ['content-length', frameContentLength(msg)], ['sse', frameSse(msg)]]) {
        const bytes = Buffer.from(text.repeat(40));
        const decoder = new FrameDecoder({ framing });
        let n = 0;
        decoder.on('data', () => n++);
        for (let i = 0; i < bytes.length; i += 65536) decoder.write(bytes.subarray(i, i + 65536));
        decoder.end();
        await new Promise((resolve) => decoder.on('end', resolve));
        if (n !== 40) throw new Error(framing + ': ' + n + ' messages');
      }`);
    expect(decoded).not.to.include('ArrayBufferDetaching');
  });
});
