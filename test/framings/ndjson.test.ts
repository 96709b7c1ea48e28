import { expect } from 'chai';
import fc from 'fast-check';
import { FrameError } from '../../lib/errors.js';
import type { DecodeSink } from '../../lib/framings/codec.js';
import { frame, NdjsonDecoder, parseFrame } from '../../lib/framings/ndjson.js';
import { byteByByte, chunkings, fixedChunks, randomChunks, rng, splitAt } from '../helpers/chunkers.js';
import { decodeWithCore } from '../helpers/decode.js';
import { frameCases, wireFixtures } from '../helpers/fixtures.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(FrameError);
    return (err as FrameError).code;
  }
  throw new Error('expected a FrameError, but nothing was thrown');
}

/** JSON values that survive a JSON round trip unchanged (fast-check's jsonValue can hold -0, which JSON writes as 0). */
const jsonValue = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const message = fc.record({
  jsonrpc: fc.constant('2.0'),
  id: fc.oneof(fc.integer(), fc.string()),
  method: fc.string({ unit: 'binary' }),
  params: fc.dictionary(fc.string({ unit: 'binary' }), jsonValue),
});

describe('frame', () => {
  for (const c of frameCases()) {
    it(`writes JSON.stringify + "\\n" for every message of the ${c.name} fixture`, () => {
      const messages = Array.isArray(c.input) ? c.input : (c.input as { messages: unknown[] }).messages;
      expect(messages.map((m) => frame(m))).to.deep.equal(c.expected.frames);
    });
  }

  it('is JSON.stringify plus exactly one LF, with no other LF and no CR, for any JSON value', () => {
    fc.assert(
      fc.property(jsonValue, (v) => {
        const f = frame(v);
        expect(f).to.equal(`${JSON.stringify(v)}\n`);
        expect(f.indexOf('\n')).to.equal(f.length - 1);
        expect(f).not.to.include('\r');
      }),
    );
  });

  it('keeps newlines inside strings escaped and U+2028/U+2029 raw', () => {
    expect(frame({ s: 'a\nb\r\nc\u2028d\u2029' })).to.equal('{"s":"a\\nb\\r\\nc\u2028d\u2029"}\n');
  });

  it('throws NOT_SERIALIZABLE for values with no JSON form', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    expect(codeOf(() => frame(undefined))).to.equal('NOT_SERIALIZABLE');
    expect(codeOf(() => frame(() => 1))).to.equal('NOT_SERIALIZABLE');
    expect(codeOf(() => frame(Symbol('s')))).to.equal('NOT_SERIALIZABLE');
    expect(codeOf(() => frame(circular))).to.equal('NOT_SERIALIZABLE');
    expect(codeOf(() => frame(10n))).to.equal('NOT_SERIALIZABLE');
    expect(codeOf(() => frame({ params: { n: 10n } }))).to.equal('NOT_SERIALIZABLE');
    expect(codeOf(() => frame({ toJSON: () => undefined }))).to.equal('NOT_SERIALIZABLE');
  });
});

describe('parseFrame', () => {
  it('inverts frame for any JSON value, arrays included', () => {
    fc.assert(fc.property(jsonValue, (v) => void expect(parseFrame(frame(v))).to.deep.equal(v)));
    fc.assert(fc.property(fc.array(message), (batch) => void expect(parseFrame(frame(batch))).to.deep.equal(batch)));
  });

  it('trims surrounding spaces and a trailing LF or CRLF', () => {
    expect(parseFrame('{"a":1}\n')).to.deep.equal({ a: 1 });
    expect(parseFrame('{"a":1}\r\n')).to.deep.equal({ a: 1 });
    expect(parseFrame('  \t{"a":1}  \r\n')).to.deep.equal({ a: 1 });
    expect(parseFrame('[1,2]')).to.deep.equal([1, 2]);
  });

  it('reads bytes as UTF-8, and throws INVALID_UTF8 for bytes that are not', () => {
    expect(parseFrame(Buffer.from('{"t":"😀é"}\n'))).to.deep.equal({ t: '😀é' });
    expect(parseFrame(new Uint8Array(Buffer.from('[3]\n')))).to.deep.equal([3]);
    expect(codeOf(() => parseFrame(Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x5d])))).to.equal('INVALID_UTF8');
  });

  it('throws INVALID_JSON for what is not one JSON value on one line', () => {
    for (const bad of [
      '',
      '   \n',
      '{',
      'abc',
      '{"a":1} x',
      '{"a":1}\n{"b":2}\n',
      '{"a":\n1}',
      '\n{"a":1}',
      '[1]\u00a0',
      '\u3000[1]',
      '[1]\u2028',
      '\ufeff[1]',
    ]) {
      expect(
        codeOf(() => parseFrame(bad)),
        JSON.stringify(bad),
      ).to.equal('INVALID_JSON');
    }
  });

  it('keeps secrets out of the error, its message and its preview', () => {
    try {
      parseFrame('{"params":{"apiKey":"sk-live-0123456789","x":');
      expect.fail('parseFrame accepted bad JSON');
    } catch (err) {
      const e = err as FrameError;
      expect(e.code).to.equal('INVALID_JSON');
      expect(`${e.message} ${e.preview} ${String(e.stack)}`).not.to.include('sk-live');
      expect(e.preview).to.include('[REDACTED]');
    }
  });
});

describe('NdjsonDecoder (pure core)', () => {
  const limits = { maxMessageBytes: 64 * 1024 * 1024 };

  for (const fixture of wireFixtures('ndjson')) {
    it(`decodes fixtures/wire/${fixture.name}.ndjson the same under every chunking`, () => {
      expect(fixture.events.length).to.be.greaterThan(0);
      for (const [how, chunks] of chunkings(fixture.bytes)) {
        expect(decodeWithCore(new NdjsonDecoder(limits), chunks), how).to.deep.equal(fixture.events);
      }
    });
  }

  it('decodes random message streams under random chunking (property)', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 20 }), fc.integer({ min: 1, max: 4096 }), fc.integer(), (msgs, max, seed) => {
        const bytes = Buffer.from(msgs.map((m) => frame(m)).join(''));
        const events = decodeWithCore(new NdjsonDecoder(limits), randomChunks(bytes, rng(seed), max));
        expect(events).to.deep.equal(msgs.map((m) => ({ message: m })));
      }),
      { numRuns: 200 },
    );
  });

  describe('maxMessageBytes', () => {
    const max = 64;
    // A message whose JSON text is exactly `size` bytes, with a multibyte character in it.
    const sized = (size: number): string => {
      const s = `{"t":"é${'x'.repeat(size - 10)}"}`;
      expect(Buffer.byteLength(s)).to.equal(size);
      return s;
    };

    // Each way a line can end, with a message before and after it where the line end allows one.
    const variants: Array<[string, (m: string) => string]> = [
      ['LF', (m) => `{"before":1}\n${m}\n{"after":1}\n`],
      ['CRLF', (m) => `{"before":1}\r\n${m}\r\n{"after":1}\r\n`],
      ['BOM, first line', (m) => `\ufeff${m}\r\n{"after":1}\n`],
      ['no final LF', (m) => `{"before":1}\n${m}`],
    ];
    for (const [label, wire] of variants) {
      it(`passes a message of exactly the limit and rejects one byte more (${label}), at every split`, () => {
        const hasBefore = wire('X').includes('before');
        const hasAfter = wire('X').includes('after');
        const around = (middle: object): object[] => [
          ...(hasBefore ? [{ message: { before: 1 } }] : []),
          middle,
          ...(hasAfter ? [{ message: { after: 1 } }] : []),
        ];
        const good = Buffer.from(wire(sized(max)));
        const bad = Buffer.from(wire(sized(max + 1)));
        const badOffset = hasBefore ? bad.indexOf('\n') + 1 : 0;
        for (let at = 0; at <= good.length; at++) {
          const events = decodeWithCore(new NdjsonDecoder({ maxMessageBytes: max }), splitAt(good, at));
          expect(events, `split at ${at}`).to.deep.equal(around({ message: JSON.parse(sized(max)) }));
        }
        for (let at = 0; at <= bad.length; at++) {
          const events = decodeWithCore(new NdjsonDecoder({ maxMessageBytes: max }), splitAt(bad, at));
          const line = hasBefore ? 2 : 1;
          expect(events, `split at ${at}`).to.deep.equal(around({ invalid: { code: 'MESSAGE_TOO_LARGE', line, offset: badOffset } }));
        }
      });
    }

    it('rejects an oversized line before its end arrives and holds none of it after', () => {
      const decoder = new NdjsonDecoder({ maxMessageBytes: 1000 });
      const reported: string[] = [];
      const sink: DecodeSink = {
        message: () => reported.push('message'),
        invalid: (e) => {
          reported.push(e.code);
          return true;
        },
      };
      const chunk = Buffer.alloc(256, 0x61);
      let peak = 0;
      for (let i = 0; i < 4096; i++) {
        decoder.write(chunk, sink);
        peak = Math.max(peak, decoder.bufferedBytes);
      }
      // 1 MiB of one line went in; the report came once, as soon as the limit was passed.
      expect(reported).to.deep.equal(['MESSAGE_TOO_LARGE']);
      expect(peak).to.be.at.most(1000 + 4 + chunk.length);
      expect(decoder.bufferedBytes).to.equal(0);
      expect(decoder.partialBytes).to.equal(4096 * 256);
      decoder.write(Buffer.from('tail\n{"after":true}\n'), sink);
      expect(reported).to.deep.equal(['MESSAGE_TOO_LARGE', 'message']);
      expect(decoder.partialBytes).to.equal(0);
    });

    it('gives the right position to a line after a discarded one', () => {
      const bytes = Buffer.from(`{"a":1}\n${'y'.repeat(300)}\nnot json\n`);
      for (const chunks of [[bytes], byteByByte(bytes), fixedChunks(bytes, 100)]) {
        expect(decodeWithCore(new NdjsonDecoder({ maxMessageBytes: 100 }), chunks)).to.deep.equal([
          { message: { a: 1 } },
          { invalid: { code: 'MESSAGE_TOO_LARGE', line: 2, offset: 8 } },
          { invalid: { code: 'INVALID_JSON', line: 3, offset: 309 } },
        ]);
      }
    });

    it('checks each line of a large block of complete lines', () => {
      // One chunk larger than the limit, holding lines under, at and over it.
      const lines = [sized(50), sized(64), sized(65), sized(20)];
      const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''));
      expect(decodeWithCore(new NdjsonDecoder({ maxMessageBytes: max }), [bytes])).to.deep.equal([
        { message: JSON.parse(lines[0]!) },
        { message: JSON.parse(lines[1]!) },
        { invalid: { code: 'MESSAGE_TOO_LARGE', line: 3, offset: 50 + 1 + 64 + 1 } },
        { message: JSON.parse(lines[3]!) },
      ]);
    });
  });

  it('stops at once when the sink says so', () => {
    const decoder = new NdjsonDecoder(limits);
    const seen: unknown[] = [];
    const sink: DecodeSink = { message: (m) => seen.push(m), invalid: () => false };
    expect(decoder.write(Buffer.from('{"a":1}\nbad\n{"b":2}\n'), sink)).to.equal(false);
    expect(seen).to.deep.equal([{ a: 1 }]);
  });

  it('decodes one long line in many chunks in one piece', () => {
    const text = 'é😀'.repeat(100_000);
    const bytes = Buffer.from(frame({ text }));
    const events = decodeWithCore(new NdjsonDecoder(limits), fixedChunks(bytes, 16 * 1024 + 1));
    expect(events).to.deep.equal([{ message: { text } }]);
  });
});
