import { expect } from 'chai';
import type { FrameError } from '../../lib/errors.js';
import type { DecodeSink, FramedEvent, FrameDecoderCore, Framing } from '../../lib/framings/codec.js';
import { FRAMINGS } from '../../lib/framings/index.js';
import { hasControl, LARGE_FRAME, LITERAL_MARK, parseLarge } from '../../lib/framings/large.js';
import { FrameDecoder } from '../../lib/streams.js';
import { fixedChunks, randomChunks, rng } from '../helpers/chunkers.js';
import { type DecodeEvent, invalidEvent } from '../helpers/decode.js';

const KiB = 1024;

/** `size` bytes of UTF-8 text with two-, three- and four-byte characters among ASCII; no escapes needed. */
function textOf(size: number): string {
  const unit = 'ascii é € 😀 ';
  const bytes = Buffer.byteLength(unit);
  return unit.repeat(Math.floor(size / bytes)) + 'x'.repeat(size % bytes);
}

/** Base64 text of `size` characters. */
function base64Of(size: number, seed: number): string {
  const random = rng(seed);
  const bytes = Buffer.alloc(Math.ceil((size * 3) / 4) + 3);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
  return bytes.toString('base64').slice(0, size);
}

/**
 * The JSON text of a random value with long string literals in it (at least one), written with the whitespace,
 * escapes, numbers and keys JSON allows, so that the skeleton around the literals is not what JSON.stringify
 * writes.
 */
function randomDocument(seed: number): string {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const blank = (): string => pick(['', '', ' ', '\t', '\r\n', '\n  ']);
  const long = (): string =>
    JSON.stringify(
      random() < 0.5 ? base64Of(64 * KiB + Math.floor(random() * 200 * KiB), seed) : textOf(64 * KiB + Math.floor(random() * 100 * KiB)),
    );
  const leaf = (): string =>
    pick([
      () => pick(['0', '-0.5', '1e3', '12345678901234567890', '-1.25E-7', 'true', 'false', 'null']),
      () => pick(['""', '"a\\"b"', '"line\\nnext\\u00e9\\ud83d\\ude00"', '"\\\\"', '"é 東京"', '"ends with \\\\\\""']),
      long,
    ])();
  const value = (depth: number): string => {
    if (depth === 0 || random() < 0.3) return leaf();
    const n = Math.floor(random() * 4);
    if (random() < 0.5) {
      const items = Array.from({ length: n }, () => blank() + value(depth - 1) + blank());
      return `[${items.join(',')}]`;
    }
    // Distinct keys: a duplicate's value replaces the one before (see the declined frames below).
    const keys = ['a', 'jsonrpc', '__proto__', 'k\\"ey', 'ключ', 'data'].sort(() => random() - 0.5);
    const members = keys.slice(0, n).map((key) => `${blank()}"${key}"${blank()}:${blank()}${value(depth - 1)}${blank()}`);
    return `{${members.join(',')}}`;
  };
  return random() < 0.1 ? long() : `${blank()}{"data":${long()},"rest":${value(4)}}${blank()}`;
}

describe('parseLarge', () => {
  it('gives the value JSON.parse gives, for random documents with long literals (property)', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const text = randomDocument(seed);
      const parsed = parseLarge(Buffer.from(text));
      expect(parsed, `seed ${seed}`).to.not.equal(undefined);
      expect(parsed!.msg, `seed ${seed}`).to.deep.equal(JSON.parse(text));
      expect(parsed!.skeleton.length, `seed ${seed}`).to.be.below(text.length / 2);
    }
  });

  it('makes a non-ASCII literal from its bytes, and several literals in one frame', () => {
    const a = textOf(300 * KiB);
    const b = base64Of(200 * KiB, 3);
    const text = `{"content":[{"type":"text","text":${JSON.stringify(a)}},{"type":"image","data":${JSON.stringify(b)}}]}`;
    const parsed = parseLarge(Buffer.from(text));
    expect(parsed!.msg).to.deep.equal(JSON.parse(text));
    expect(parsed!.skeleton).to.not.include('ascii');
  });

  const blob = 'A'.repeat(70 * KiB);
  const declined: Array<[string, Buffer]> = [
    ['an escape in a long literal', Buffer.from(`{"a":"${blob}\\n${blob}"}`)],
    ['a raw tab in a long literal (not JSON)', Buffer.from(`{"a":"${blob}\t${blob}"}`)],
    ['a raw NUL in a long literal (not JSON)', Buffer.from(`{"a":"${blob}\u0000"}`)],
    ['bytes that are not UTF-8 in a long literal', Buffer.concat([Buffer.from(`{"a":"${blob}`), Buffer.from([0xff]), Buffer.from('"}')])],
    ['bytes that are not UTF-8 in the skeleton', Buffer.concat([Buffer.from(`{"a":"${blob}","b":"`), Buffer.from([0xc3]), Buffer.from('"}')])],
    ['no long literal', Buffer.from(JSON.stringify(Array.from({ length: 60_000 }, (_, i) => `s${i}`)))],
    ['a skeleton over 64 KiB', Buffer.from(`{"a":"${blob}","n":[${'1,'.repeat(40_000)}1]}`)],
    ['a long literal as a key', Buffer.from(`{"${blob}":1}`)],
    ['a long literal replaced by a duplicate key', Buffer.from(`{"a":"${blob}","a":1}`)],
    ['a string of its own that reads as a marker', Buffer.from(`{"a":"${blob}","b":${JSON.stringify(`${LITERAL_MARK}0`)}}`)],
    ['a trailing comma (not JSON)', Buffer.from(`{"a":"${blob}",}`)],
    ['a literal never closed', Buffer.from(`{"a":"${blob}`)],
    ['a long literal whose last quote is escaped', Buffer.from(`{"a":"${blob}\\"}`)],
  ];
  for (const [what, bytes] of declined) {
    it(`declines a frame with ${what}`, () => {
      expect(parseLarge(bytes)).to.equal(undefined);
    });
  }

  it('takes a quote after an even run of backslashes as the end of a literal', () => {
    // Short literals before the long one end in `\\` (its quote ends it) and `\"` (its quote does not).
    const text = `{"b":"x\\\\","c":"\\"y","a":"${blob}"}`;
    expect(parseLarge(Buffer.from(text))!.msg).to.deep.equal(JSON.parse(text));
  });
});

describe('hasControl', () => {
  it('finds a byte under 0x20 at every position and alignment, and only such a byte', () => {
    const backing = Buffer.alloc(64, 0x61);
    for (let shift = 0; shift < 8; shift++) {
      // Past 16 bytes after the alignment the words are read four at a time: lengths to 40 cover the head, the
      // groups of four, the words after them and the last bytes.
      for (let length = 0; length <= 40; length++) {
        const view = backing.subarray(shift, shift + length);
        for (let at = 0; at < length; at++) {
          for (let byte = 0; byte < 256; byte++) {
            view[at] = byte;
            // Neighbours of 0x80 and over must not hide or fake a control byte.
            if (at + 1 < length) view[at + 1] = 0xff;
            if (hasControl(view) !== byte < 0x20) expect.fail(`shift ${shift}, length ${length}, byte ${byte} at ${at}`);
            view.fill(0x61);
          }
        }
        expect(hasControl(view)).to.equal(false);
      }
    }
  });

  it('reads a view of a resizable buffer block by block, a control byte found in any block and at their edges', () => {
    const size = 3 * 64 * 1024 + 5;
    const storage = new ArrayBuffer(0, { maxByteLength: size + 16 });
    storage.resize(size + 1);
    const view = Buffer.from(storage, 1, size).fill(0x61);
    expect(hasControl(view)).to.equal(false);
    for (const at of [0, 1, 65535, 65536, 65537, 2 * 65536, size - 1]) {
      view[at] = 0x09;
      expect(hasControl(view), `at ${at}`).to.equal(true);
      view[at] = 0x61;
    }
    expect(hasControl(view)).to.equal(false);
  });
});

/** A frame's text, framed as is (valid JSON or not). */
function framed(framing: Framing, text: string): Buffer {
  if (framing.name === 'ndjson') return Buffer.from(`${text}\n`);
  if (framing.name === 'sse') return Buffer.from(`event: message\ndata: ${text}\n\n`);
  return Buffer.from(`Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
}

/** A sink that records what the decoder reports, including the text of each message. */
function recorder(textUnused: boolean): { sink: DecodeSink; events: DecodeEvent[]; texts: string[] } {
  const events: DecodeEvent[] = [];
  const texts: string[] = [];
  const sink: DecodeSink = {
    textUnused,
    message: (message: unknown, text: string) => {
      events.push({ message });
      texts.push(text);
    },
    invalid: (err: FrameError) => {
      events.push(invalidEvent(err));
      return true;
    },
    event: (event: FramedEvent) => void events.push({ event }),
  };
  return { sink, events, texts };
}

function run(core: FrameDecoderCore, chunks: readonly Buffer[], textUnused: boolean): ReturnType<typeof recorder> {
  const r = recorder(textUnused);
  for (const chunk of chunks) core.write(chunk, r.sink);
  core.end(r.sink);
  return r;
}

describe('decoding large frames from their bytes', () => {
  const small = (id: number) => ({ jsonrpc: '2.0', id, result: { text: 'é' } });
  const image = { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'image', mimeType: 'image/png', data: base64Of(2 * LARGE_FRAME, 5) }] } };
  const text = { jsonrpc: '2.0', id: 4, result: { contents: [{ uri: 'file:///a', text: textOf(LARGE_FRAME + 10) }] } };
  const limits = { maxMessageBytes: 16 * LARGE_FRAME, maxDepth: 100 };

  for (const framing of Object.values(FRAMINGS) as Framing[]) {
    const encoder = framing.createEncoder();
    const messages = [small(1), image, small(3), text, small(5)];
    const wire = Buffer.concat(messages.map((m) => Buffer.from(encoder.encode(m))));
    const texts = messages.map((m) => JSON.stringify(m));
    for (const [name, chunks] of [
      ['16 KiB chunks', fixedChunks(wire, 16 * KiB)],
      ['random chunks', randomChunks(wire, rng(13), 100_000)],
    ] as const) {
      it(`${framing.name}: parses each from its bytes when the sink needs no text, in ${name}`, () => {
        const fast = run(framing.createDecoder(limits), chunks, true);
        expect(fast.events).to.deep.equal(messages.map((message) => ({ message })));
        // No text was made for the two large ones: they went the fast way.
        expect(fast.texts).to.deep.equal(texts.map((t) => (Buffer.byteLength(t) >= LARGE_FRAME ? '' : t)));
        const slow = run(framing.createDecoder(limits), chunks, false);
        expect(slow.events).to.deep.equal(fast.events);
        expect(slow.texts).to.deep.equal(texts);
      });
    }

    // Frames this way declines, and bad ones: every event (message, code, position) as the text way gives it.
    const blob = base64Of(LARGE_FRAME, 9);
    const frames = [
      `{"jsonrpc":"2.0","id":1,"result":{"a":"${blob}\\n"}}`,
      `{"jsonrpc":"2.0","id":2,"result":{"a":"${blob}\t"}}`,
      `{"jsonrpc":"2.0","id":3,"result":${'['.repeat(150)}"${blob}"${']'.repeat(150)}}`,
      `{"jsonrpc":"2.0","id":4,"result":{"a":"${blob}"}}}`,
      `{"jsonrpc":"2.0","id":5,"result":{"a":"${blob}"}}`,
    ];
    const rawWire = Buffer.concat(frames.map((f) => framed(framing, f)));
    it(`${framing.name}: reports bad large frames as the text way does, and decodes the good ones around them`, () => {
      const chunks = fixedChunks(rawWire, 16 * KiB);
      const fast = run(framing.createDecoder(limits), chunks, true);
      const slow = run(framing.createDecoder(limits), chunks, false);
      expect(fast.events).to.deep.equal(slow.events);
      const codes = fast.events.map((e) => ('invalid' in e ? e.invalid.code : 'message'));
      expect(codes).to.deep.equal(['message', 'INVALID_JSON', 'INVALID_MESSAGE', 'INVALID_JSON', 'message']);
      expect(fast.texts[1]).to.equal('');
    });

    it(`${framing.name}: previews a large frame nested too deep by its text, as the text way does`, () => {
      // The long literal comes first, so that the preview shows where it stood.
      const deep = `{"a":"${blob}","b":${'['.repeat(150)}1${']'.repeat(150)}}`;
      const after = { jsonrpc: '2.0', id: 7, result: {} };
      const wire = Buffer.concat([framed(framing, deep), Buffer.from(encoder.encode(after))]);
      const previews = [true, false].map((textUnused) => {
        const errors: FrameError[] = [];
        const messages: unknown[] = [];
        const core = framing.createDecoder(limits);
        const sink: DecodeSink = { textUnused, message: (m) => void messages.push(m), invalid: (e) => errors.push(e) > 0 };
        for (const chunk of fixedChunks(wire, 16 * KiB)) core.write(chunk, sink);
        core.end(sink);
        expect(messages).to.deep.equal([after]);
        expect(errors.map((e) => e.code)).to.deep.equal(['INVALID_MESSAGE']);
        return errors[0]!.preview;
      });
      expect(previews[0]).to.equal(previews[1]);
      expect(previews[0]).to.equal(`${deep.slice(0, 80)}…`);
    });
  }

  describe('sse', () => {
    const data = JSON.stringify(image);
    const decode = (wire: Buffer, chunks: Buffer[]) => run(FRAMINGS.sse.createDecoder(limits), chunks.length > 0 ? chunks : [wire], true);

    it('takes the text way when the blank line comes in the next chunk, and the message is the same', () => {
      const head = Buffer.from(`event: message\ndata: ${data}\n`);
      const out = decode(head, [...fixedChunks(head, 16 * KiB), Buffer.from('\n')]);
      expect(out.events).to.deep.equal([{ message: image }]);
      expect(out.texts).to.deep.equal([data]);
    });

    it('joins a large data line with the next data line of its event', () => {
      const cut = data.indexOf('"result"');
      const wire = Buffer.from(`data: ${data.slice(0, cut)}\ndata: ${data.slice(cut)}\n\n`);
      const out = decode(wire, fixedChunks(wire, 16 * KiB));
      expect(out.events).to.deep.equal([{ message: image }]);
      expect(out.texts).to.deep.equal([`${data.slice(0, cut)}\n${data.slice(cut)}`]);
    });

    it('hands a large event of another type on as text', () => {
      const wire = Buffer.from(`event: blob\ndata: ${data}\n\n`);
      const out = decode(wire, fixedChunks(wire, 16 * KiB));
      expect(out.events).to.deep.equal([{ event: { event: 'blob', data } }]);
    });

    it('takes CRLF line ends the fast way too', () => {
      const wire = Buffer.from(`event: message\r\ndata: ${data}\r\n\r\n`);
      const out = decode(wire, fixedChunks(wire, 16 * KiB));
      expect(out.events).to.deep.equal([{ message: image }]);
      expect(out.texts).to.deep.equal(['']);
    });
  });

  it('FrameDecoder makes the text of a large frame only while someone listens for frame', async () => {
    const decoder = new FrameDecoder({ maxMessageBytes: limits.maxMessageBytes });
    const traced: string[] = [];
    const got: unknown[] = [];
    decoder.on('data', (msg: unknown) => got.push(msg));
    const done = new Promise((resolve) => decoder.on('end', resolve));
    for (const chunk of fixedChunks(Buffer.from(`${JSON.stringify(image)}\n`), 64 * KiB)) decoder.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
    expect(got).to.deep.equal([image]);
    // From the second frame on, a trace is wanted.
    decoder.on('frame', (t: string) => traced.push(t));
    for (const chunk of fixedChunks(Buffer.from(`${JSON.stringify(text)}\n`), 64 * KiB)) decoder.write(chunk);
    decoder.end();
    await done;
    expect(got).to.deep.equal([image, text]);
    expect(traced).to.deep.equal([JSON.stringify(text)]);
  });
});
