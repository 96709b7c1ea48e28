import { expect } from 'chai';
import fc from 'fast-check';
import { PassThrough } from 'node:stream';
import * as rpc from 'vscode-jsonrpc/node';
import type { FrameError } from '../../lib/errors.js';
import type { DecodeSink } from '../../lib/framings/codec.js';
import { ContentLengthDecoder, frameContentLength } from '../../lib/framings/content-length.js';
import { MAX_HEADER_BYTES } from '../../lib/framings/headers.js';
import { FrameEncoder } from '../../lib/streams.js';
import { byteByByte, chunkings, fixedChunks, randomChunks, rng, splitAt } from '../helpers/chunkers.js';
import { decodeWithCore, decodeWithStream } from '../helpers/decode.js';
import { wireFixtures } from '../helpers/fixtures.js';

const limits = { maxMessageBytes: 64 * 1024 * 1024 };
const decode = (chunks: Buffer[], max = limits.maxMessageBytes) => decodeWithCore(new ContentLengthDecoder({ maxMessageBytes: max }), chunks);

describe('content-length framing', () => {
  it('writes Content-Length: <UTF-8 byte length>, CRLF CRLF, and compact JSON', () => {
    const msg = { jsonrpc: '2.0', id: 1, result: { text: 'é😀\n' } };
    const json = JSON.stringify(msg);
    expect(frameContentLength(msg)).to.equal(`Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    expect(Buffer.byteLength(json)).to.be.greaterThan(json.length);
  });

  for (const fixture of wireFixtures('content-length')) {
    it(`decodes fixtures/wire/${fixture.name}.content-length the same under every chunking`, () => {
      for (const [how, chunks] of chunkings(fixture.bytes)) expect(decode(chunks), how).to.deep.equal(fixture.events);
    });
  }

  it('decodes random messages under random chunking (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.object(), { maxLength: 15 }), fc.integer({ min: 1, max: 200 }), fc.integer(), (msgs, max, seed) => {
        const clean = JSON.parse(JSON.stringify(msgs)) as object[];
        const bytes = Buffer.from(clean.map((m) => frameContentLength(m)).join(''));
        expect(decode(randomChunks(bytes, rng(seed), max))).to.deep.equal(clean.map((message) => ({ message })));
      }),
      { numRuns: 150 },
    );
  });

  describe('headers', () => {
    const codeOf = (header: string): string[] =>
      decode([Buffer.from(`${header}\r\n\r\n{}Content-Length: 2\r\n\r\n[]`)]).map((e) =>
        'invalid' in e ? e.invalid.code : JSON.stringify('message' in e ? e.message : e),
      );
    for (const bad of [
      'Content-Length: 12x',
      'Content-Length: -1',
      'Content-Length: +2',
      'Content-Length: 1e3',
      'Content-Length: 0x10',
      'Content-Length:',
      'Content-Type: application/json',
      'Content-Length 2',
      'Content-Length: 2\r\nContent-Length: 3',
      'Content-Length: 1234567890123456',
      'Content-Length: 2 2',
    ]) {
      it(`rejects ${JSON.stringify(bad)} as INVALID_HEADER and resyncs at the next header`, () => {
        expect(codeOf(bad)).to.deep.equal(['INVALID_HEADER', '[]']);
      });
    }
    for (const good of [
      'Content-Length: 2',
      'content-length:2',
      'CONTENT-LENGTH:   2  ',
      'Content-Type: x\r\nContent-Length: 2',
      'Content-Length: 2\r\nContent-Length: 2',
      // Next to the shape read straight from the bytes (`Content-Length: <digits>` CRLF CRLF): the others.
      'Content-Length: 02',
      'Content-Length: 000000000000002',
      'Content-Length: 2 ',
      'Content-Length:\t2',
      'Content-length: 2',
      'Content-Length: 2\r',
      'Content-Length: 2\r\nX-Extra: 1',
    ]) {
      it(`accepts ${JSON.stringify(good)}`, () => {
        expect(codeOf(good)).to.deep.equal(['{}', '[]']);
      });
    }

    it(`accepts a header block of exactly ${MAX_HEADER_BYTES} bytes and rejects one byte more`, () => {
      const block = (size: number): string => {
        const fixed = 'Content-Length: 2\r\nX-Pad: \r\n\r\n';
        return `Content-Length: 2\r\nX-Pad: ${'p'.repeat(size - fixed.length)}\r\n\r\n`;
      };
      expect(Buffer.byteLength(block(MAX_HEADER_BYTES))).to.equal(MAX_HEADER_BYTES);
      expect(decode([Buffer.from(`${block(MAX_HEADER_BYTES)}{}`)])).to.deep.equal([{ message: {} }]);
      const long = block(MAX_HEADER_BYTES + 1);
      const wire = Buffer.from(`${long}{}Content-Length: 2\r\n\r\n[]Content-Length: 4\r\n\r\nnull`);
      const afterLong = Buffer.byteLength(long) + 2;
      for (const chunks of [[wire], byteByByte(wire), fixedChunks(wire, 1000)]) {
        expect(decode(chunks)).to.deep.equal([
          { invalid: { code: 'INVALID_HEADER', index: 1, offset: 0 } },
          { message: [] },
          { invalid: { code: 'INVALID_MESSAGE', index: 3, offset: afterLong + Buffer.byteLength('Content-Length: 2\r\n\r\n[]') } },
        ]);
      }
    });
  });

  describe('maxMessageBytes', () => {
    it('passes a body of exactly the limit and rejects one byte more, at every split', () => {
      const body = (n: number): string => `{"t":"${'x'.repeat(n - 8)}"}`;
      const good = Buffer.from(frameContentLength(JSON.parse(body(64))) + frameContentLength([1]));
      const bad = Buffer.from(frameContentLength(JSON.parse(body(65))) + frameContentLength([1]));
      for (let at = 0; at <= good.length; at++) {
        expect(decode(splitAt(good, at), 64), `split at ${at}`).to.deep.equal([{ message: JSON.parse(body(64)) }, { message: [1] }]);
        expect(decode(splitAt(bad, at), 64), `split at ${at}`).to.deep.equal([
          { invalid: { code: 'MESSAGE_TOO_LARGE', index: 1, offset: 0 } },
          { message: [1] },
        ]);
      }
    });

    it('rejects a declared length over the limit at once, before any of the body is buffered', () => {
      const decoder = new ContentLengthDecoder({ maxMessageBytes: 1000 });
      const seen: string[] = [];
      const sink: DecodeSink = {
        message: () => seen.push('message'),
        invalid: (e: FrameError) => {
          seen.push(e.code);
          return true;
        },
      };
      decoder.write(Buffer.from('Content-Length: 5000000\r\n\r\n'), sink);
      expect(seen).to.deep.equal(['MESSAGE_TOO_LARGE']);
      for (let i = 0; i < 100; i++) {
        decoder.write(Buffer.alloc(50_000, 0x20), sink);
        expect(decoder.bufferedBytes).to.equal(0);
      }
      decoder.write(Buffer.from(frameContentLength({ after: true })), sink);
      expect(seen).to.deep.equal(['MESSAGE_TOO_LARGE', 'message']);
    });
  });

  it('reports input that ends inside headers or a body as TRUNCATED', () => {
    expect(decode([Buffer.from('Content-Length: 10\r\n')])).to.deep.equal([{ invalid: { code: 'TRUNCATED', index: 1, offset: 0 } }]);
    expect(decode([Buffer.from('Content-Length: 10\r\n\r\n{"a"')])).to.deep.equal([{ invalid: { code: 'TRUNCATED', index: 1, offset: 0 } }]);
    expect(decode([Buffer.from('\r\n\r\n')])).to.deep.equal([]);
  });

  describe('with vscode-jsonrpc', () => {
    const messages = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { text: 'ünïcödé 😀 \u2028\n' } },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 0.5 } },
      { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(70_000) }] } },
      { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'nope' } },
    ];

    for (const seed of [1, 2, 3]) {
      it(`StreamMessageReader reads what FrameEncoder writes, in random chunks (seed ${seed})`, async () => {
        const encoder = new FrameEncoder({ framing: 'content-length' });
        const bytes: Buffer[] = [];
        encoder.on('data', (c: Buffer) => bytes.push(c));
        for (const m of messages) encoder.write(m);
        encoder.end();
        await new Promise((resolve) => encoder.on('end', resolve));
        const pipe = new PassThrough();
        const reader = new rpc.StreamMessageReader(pipe);
        const got: unknown[] = [];
        const done = new Promise<void>((resolve) => {
          reader.listen((msg) => {
            got.push(msg);
            if (got.length === messages.length) resolve();
          });
        });
        for (const c of randomChunks(Buffer.concat(bytes), rng(seed), 3000)) pipe.write(c);
        await done;
        reader.dispose();
        expect(got).to.deep.equal(messages);
      });

      it(`FrameDecoder reads what StreamMessageWriter writes, in random chunks (seed ${seed})`, async () => {
        const pipe = new PassThrough();
        const written: Buffer[] = [];
        pipe.on('data', (c: Buffer) => written.push(c));
        const writer = new rpc.StreamMessageWriter(pipe);
        for (const m of messages) await writer.write(m as rpc.Message);
        writer.dispose();
        const chunks = randomChunks(Buffer.concat(written), rng(seed), 3000);
        const outcome = await decodeWithStream(chunks, { framing: 'content-length' });
        expect(outcome.error).to.equal(undefined);
        expect(outcome.events).to.deep.equal(messages.map((message) => ({ message })));
      });
    }

    it('resyncs after a bad header block where StreamMessageReader loses the messages that follow', async () => {
      const wire = Buffer.from(`Content-Length: 1x\r\n\r\n{"lost":1}${frameContentLength({ kept: 1 })}${frameContentLength({ next: 2 })}`);
      const outcome = await decodeWithStream(byteByByte(wire), { framing: 'content-length', onInvalid: 'skip' });
      expect(outcome.events).to.deep.equal([
        { invalid: { code: 'INVALID_HEADER', index: 1, offset: 0 } },
        { message: { kept: 1 } },
        { message: { next: 2 } },
      ]);

      const pipe = new PassThrough();
      const reader = new rpc.StreamMessageReader(pipe);
      const theirs: unknown[] = [];
      const errors: string[] = [];
      reader.onError((e) => errors.push(e.message));
      reader.listen((m) => theirs.push(m));
      pipe.write(wire);
      await new Promise((resolve) => setTimeout(resolve, 100));
      reader.dispose();
      expect(errors.length).to.be.greaterThan(0);
      expect(theirs).not.to.deep.include({ kept: 1 });
      expect(theirs).not.to.deep.include({ next: 2 });
    });
  });
});
