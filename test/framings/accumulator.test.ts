import { expect } from 'chai';
import { ByteAccumulator } from '../../lib/framings/accumulator.js';
import { FRAMINGS } from '../../lib/framings/index.js';
import { fixedChunks, randomChunks, rng } from '../helpers/chunkers.js';
import { decodeWithCore } from '../helpers/decode.js';

const MiB = 1024 * 1024;

/** `size` bytes of UTF-8 text with two-, three- and four-byte characters among ASCII. */
function textOf(size: number): string {
  const unit = 'ascii é € 😀 ';
  const bytes = Buffer.byteLength(unit);
  return unit.repeat(Math.floor(size / bytes)) + 'x'.repeat(size % bytes);
}

describe('ByteAccumulator', () => {
  it('keeps every byte in order while it grows past 16 MiB, whatever the chunk sizes', () => {
    const input = Buffer.from(textOf(20 * MiB + 7));
    const acc = new ByteAccumulator(64 * MiB);
    for (const chunk of randomChunks(input, rng(7), 300_000)) acc.append(chunk);
    expect(acc.length).to.equal(input.length);
    expect(acc.bytes().equals(input)).to.equal(true);
  });

  it('holds a frame past 16 MiB in a resizable ArrayBuffer whose memory clear() gives back at once', () => {
    const acc = new ByteAccumulator(64 * MiB);
    const chunk = Buffer.alloc(MiB, 0x61);
    for (let i = 0; i < 17; i++) acc.append(chunk);
    const storage = acc.bytes().buffer as ArrayBuffer;
    expect(storage.resizable).to.equal(true);
    expect(storage.byteLength).to.be.at.least(17 * MiB);
    acc.clear();
    expect(storage.byteLength).to.equal(0);
    expect(acc.length).to.equal(0);
    acc.append(Buffer.from('next'));
    expect(acc.bytes().toString()).to.equal('next');
  });

  it('keeps frames up to 16 MiB in ordinary buffers, which the allocator recycles', () => {
    const acc = new ByteAccumulator(64 * MiB);
    acc.append(Buffer.alloc(8 * MiB, 0x62));
    expect((acc.bytes().buffer as ArrayBuffer).resizable).to.equal(false);
  });

  it('doubles its buffer up to 1 MiB and goes to 16 MiB in one step past that, leaving no 4 MiB buffer behind', () => {
    const acc = new ByteAccumulator(64 * MiB);
    const capacity = (): number => acc.bytes().buffer.byteLength;
    const chunk = Buffer.alloc(16 * 1024, 0x64);
    for (let i = 0; i < 64; i++) acc.append(chunk);
    expect(capacity()).to.equal(MiB);
    acc.append(chunk);
    expect(capacity()).to.equal(16 * MiB);
    while (acc.length < 16 * MiB) acc.append(chunk);
    expect(capacity()).to.equal(16 * MiB);
    expect((acc.bytes().buffer as ArrayBuffer).resizable).to.equal(false);
    expect(acc.bytes().every((b) => b === 0x64)).to.equal(true);
  });

  it('takes a known size past 16 MiB in the resizable buffer at once, committing memory only as bytes come', () => {
    const acc = new ByteAccumulator(64 * MiB);
    acc.append(Buffer.from('head:'));
    acc.reserve(18 * MiB);
    const storage = acc.bytes().buffer as ArrayBuffer;
    expect(storage.resizable).to.equal(true);
    // A peer that declares a large body and sends five bytes has five bytes held.
    expect(storage.byteLength).to.be.below(MiB);
    for (let i = 0; i < 18; i++) {
      acc.append(Buffer.alloc(MiB - (i === 0 ? 5 : 0), 0x63));
      // Never far ahead of the bytes written: the engine zeroes all of it when it shrinks, faulting in unwritten pages.
      expect(storage.byteLength - acc.length).to.be.at.most(256 * 1024);
    }
    const held = acc.bytes();
    expect(held.length).to.equal(18 * MiB);
    expect(held.subarray(0, 6).toString()).to.equal('head:c');
    expect(held[held.length - 1]).to.equal(0x63);
  });
});

describe('decoding messages past 16 MiB', () => {
  const framings = Object.values(FRAMINGS);
  const big = { jsonrpc: '2.0', id: 2, result: { text: textOf(20 * MiB) } };
  const small = (id: number) => ({ jsonrpc: '2.0', id, result: { text: 'é' } });

  for (const framing of framings) {
    const encoder = framing.createEncoder();
    const wire = Buffer.concat([small(1), big, small(3)].map((m) => Buffer.from(encoder.encode(m))));
    for (const [name, chunks] of [
      ['64 KiB chunks', fixedChunks(wire, 64 * 1024)],
      ['random chunks', randomChunks(wire, rng(11), 200_000)],
    ] as const) {
      it(`${framing.name}: decodes one with the messages around it, in ${name}`, () => {
        const events = decodeWithCore(framing.createDecoder({ maxMessageBytes: 64 * MiB, maxDepth: 100 }), chunks);
        const messages = events.map((e) => ('message' in e ? e.message : e));
        expect(messages).to.have.length(3);
        expect(messages[0]).to.deep.equal(small(1));
        expect((messages[1] as typeof big).result.text === big.result.text).to.equal(true);
        expect(messages[2]).to.deep.equal(small(3));
      });
    }

    it(`${framing.name}: reports one over maxMessageBytes and decodes the next`, () => {
      const events = decodeWithCore(framing.createDecoder({ maxMessageBytes: 18 * MiB, maxDepth: 100 }), fixedChunks(wire, 64 * 1024));
      expect(events).to.have.length(3);
      expect(events[0]).to.deep.equal({ message: small(1) });
      expect(events[1]).to.have.nested.property('invalid.code', 'MESSAGE_TOO_LARGE');
      expect(events[2]).to.deep.equal({ message: small(3) });
    });
  }
});
