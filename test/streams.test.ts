import { expect } from 'chai';
import fc from 'fast-check';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FrameError } from '../lib/errors.js';
import { frame } from '../lib/framings/ndjson.js';
import { frameContentLength } from '../lib/framings/content-length.js';
import { frameSse } from '../lib/framings/sse.js';
import { DEFAULT_MAX_MESSAGE_BYTES, type FramingName } from '../lib/framings/index.js';
import { FrameConverter, FrameDecoder, FrameEncoder } from '../lib/streams.js';
import { byteByByte, chunkings, fixedChunks, randomChunks, rng } from './helpers/chunkers.js';
import { decodeWithStream, invalidEvent } from './helpers/decode.js';
import { untilFirstInvalid, wireFixtures } from './helpers/fixtures.js';
import { run } from './helpers/run.js';

/** Reads a stream with for await to its end or its error. */
async function readAll(readable: Readable): Promise<{ seen: unknown[]; caught: unknown }> {
  const seen: unknown[] = [];
  try {
    for await (const item of readable) seen.push(item);
  } catch (caught) {
    return { seen, caught };
  }
  return { seen, caught: undefined };
}

async function collect(readable: Readable): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const item of readable) out.push(item);
  return out;
}

async function encodeAll(messages: unknown[], framing: FramingName = 'ndjson'): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await pipeline(
    Readable.from(messages, { objectMode: true }),
    new FrameEncoder({ framing }),
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        chunks.push(chunk);
        cb();
      },
    }),
  );
  return Buffer.concat(chunks);
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('FrameDecoder', () => {
  for (const framing of ['ndjson', 'content-length', 'sse'] as const) {
    for (const fixture of wireFixtures(framing)) {
      describe(`fixtures/wire/${fixture.name}.${framing}`, () => {
        // Every split point is covered on the pure core; the stream gets the other chunkings.
        const cuts = chunkings(fixture.bytes, 0);

        it("with onInvalid 'skip': every message and every bad line, in order, under every chunking", async () => {
          for (const [how, chunks] of cuts) {
            const outcome = await decodeWithStream(chunks, { framing, onInvalid: 'skip' });
            expect(outcome.error, how).to.equal(undefined);
            expect(outcome.events, how).to.deep.equal(fixture.events);
          }
        });

        it("with onInvalid 'error': the messages before the first bad line, then that line's error", async () => {
          const { before, first } = untilFirstInvalid(fixture.events);
          for (const [how, chunks] of cuts) {
            const outcome = await decodeWithStream(chunks, { framing });
            expect(outcome.events, how).to.deep.equal(before);
            if (first === undefined) {
              expect(outcome.error, how).to.equal(undefined);
            } else {
              expect(outcome.error, how).to.be.instanceOf(FrameError);
              expect(invalidEvent(outcome.error as FrameError), how).to.deep.equal(first);
            }
          }
        });
      });
    }
  }

  it('validates its options', () => {
    expect(() => new FrameDecoder({ maxMessageBytes: 0 })).to.throw(RangeError);
    expect(() => new FrameDecoder({ maxMessageBytes: 1.5 })).to.throw(RangeError);
    expect(() => new FrameDecoder({ onInvalid: 'ignore' as 'skip' })).to.throw(TypeError);
    expect(() => new FrameDecoder({ framing: 'xml' as 'ndjson' })).to.throw(TypeError, /unknown framing/);
  });

  it('does not change the options object it is given', () => {
    const options = Object.freeze({ maxMessageBytes: 100, onInvalid: 'skip' as const });
    const decoder = new FrameDecoder(options);
    expect(decoder.readableObjectMode).to.equal(true);
    expect(decoder.writableObjectMode).to.equal(false);
    expect(options).to.deep.equal({ maxMessageBytes: 100, onInvalid: 'skip' });
  });

  it('passes a message of exactly the default 64 MiB limit and rejects one byte more', async () => {
    expect(DEFAULT_MAX_MESSAGE_BYTES).to.equal(64 * 1024 * 1024);
    const body = (size: number): Buffer => {
      const buf = Buffer.alloc(size, 0x61);
      buf.write('{"d":"', 0);
      buf.write('"}', size - 2);
      return buf;
    };
    const atLimit = body(DEFAULT_MAX_MESSAGE_BYTES);
    const ok = await decodeWithStream([...fixedChunks(atLimit, 1 << 20), Buffer.from('\n')]);
    expect(ok.error).to.equal(undefined);
    expect(ok.events).to.have.length(1);
    expect((ok.events[0] as { message: { d: string } }).message.d.length).to.equal(DEFAULT_MAX_MESSAGE_BYTES - 8);

    const over = body(DEFAULT_MAX_MESSAGE_BYTES + 1);
    const bad = await decodeWithStream([...fixedChunks(over, 1 << 20), Buffer.from('\n')]);
    expect(bad.events).to.deep.equal([]);
    expect((bad.error as FrameError).code).to.equal('MESSAGE_TOO_LARGE');
  });

  it("with onInvalid 'skip', drops an oversized message up to its newline in bounded memory and goes on", async () => {
    const decoder = new FrameDecoder({ maxMessageBytes: 10_000, onInvalid: 'skip' });
    const invalid: FrameError[] = [];
    decoder.on('invalid', (e: FrameError) => invalid.push(e));
    const out = collect(decoder);
    decoder.write('{"first":1}\n');
    let peak = 0;
    const chunk = Buffer.alloc(64 * 1024, 0x7a);
    for (let i = 0; i < 160; i++) {
      decoder.write(chunk); // 10 MiB of one line
      peak = Math.max(peak, decoder.bufferedBytes);
    }
    decoder.end('zz\n{"last":2}\n');
    expect(await out).to.deep.equal([{ first: 1 }, { last: 2 }]);
    expect(invalid.map((e) => [e.code, e.line, e.offset])).to.deep.equal([['MESSAGE_TOO_LARGE', 2, 12]]);
    expect(peak).to.be.at.most(10_000 + 4 + chunk.length);
  });

  it("with onInvalid 'error', fails as soon as an unterminated message passes the limit", async () => {
    const decoder = new FrameDecoder({ maxMessageBytes: 1000 });
    const failed = new Promise<unknown>((resolve) => decoder.on('error', resolve));
    decoder.resume();
    decoder.write(Buffer.alloc(600, 0x20));
    decoder.write(Buffer.alloc(600, 0x20));
    const err = (await failed) as FrameError;
    expect(err.code).to.equal('MESSAGE_TOO_LARGE');
    expect(decoder.destroyed).to.equal(true);
  });

  it('reports an incomplete last message as TRUNCATED after the complete ones', async () => {
    const outcome = await decodeWithStream(byteByByte(Buffer.from('{"a":1}\n{"b":[1,2')));
    expect(outcome.events).to.deep.equal([{ message: { a: 1 } }]);
    expect((outcome.error as FrameError).code).to.equal('TRUNCATED');
    expect((outcome.error as FrameError).offset).to.equal(8);
  });

  it('reports a JSON null line as INVALID_MESSAGE instead of ending the stream', async () => {
    const outcome = await decodeWithStream([Buffer.from('null\n{"a":1}\n')], { onInvalid: 'skip' });
    expect(outcome.events).to.deep.equal([{ invalid: { code: 'INVALID_MESSAGE', line: 1, offset: 0 } }, { message: { a: 1 } }]);
  });

  it('keeps secrets out of its errors', async () => {
    const outcome = await decodeWithStream([Buffer.from('{"ok":1}\n{"headers":{"Authorization":"Bearer abc.def.ghi"},"password":"hunter2",\n')]);
    const err = outcome.error as FrameError;
    expect(err.code).to.equal('INVALID_JSON');
    const shown = `${err.message} ${err.preview} ${String(err.stack)}`;
    expect(shown).not.to.include('abc.def.ghi');
    expect(shown).not.to.include('hunter2');
    expect(err.preview.length).to.be.at.most(81);
  });

  it('works with for await: the messages before a bad line, then the error', async () => {
    const decoder = new FrameDecoder();
    decoder.end('{"a":1}\n{"b":2}\n{oops}\n{"c":3}\n');
    const { seen, caught } = await readAll(decoder);
    expect(seen).to.deep.equal([{ a: 1 }, { b: 2 }]);
    expect((caught as FrameError).code).to.equal('INVALID_JSON');
    expect((caught as FrameError).line).to.equal(3);
  });

  it('delivers every message before a bad line to a slow for await reader, then fails', async () => {
    const msgs = Array.from({ length: 40 }, (_, i) => ({ i }));
    const decoder = new FrameDecoder();
    decoder.write(`${msgs.map((m) => frame(m)).join('')}not json\n`);
    decoder.end('{"after":1}\n');
    const seen: unknown[] = [];
    let caught: unknown;
    try {
      for await (const msg of decoder) {
        seen.push(msg);
        await tick();
      }
    } catch (err) {
      caught = err;
    }
    expect(seen).to.deep.equal(msgs);
    expect((caught as FrameError).code).to.equal('INVALID_JSON');
    expect(decoder.destroyed).to.equal(true);
  });

  it('works in a pipeline, and a pipeline fails with the FrameError', async () => {
    const msgs = [{ a: 'é' }, { b: [1, 2, 3] }];
    const bytes = Buffer.from(msgs.map((m) => frame(m)).join(''));
    const got: unknown[] = [];
    await pipeline(Readable.from(byteByByte(bytes)), new FrameDecoder(), async (source: AsyncIterable<unknown>) => {
      for await (const m of source) got.push(m);
    });
    expect(got).to.deep.equal(msgs);

    let caught: unknown;
    try {
      await pipeline(Readable.from([Buffer.from('{"a":1}\n{"b":')]), new FrameDecoder(), new PassThrough({ objectMode: true }).resume());
    } catch (err) {
      caught = err;
    }
    expect((caught as FrameError).code).to.equal('TRUNCATED');
  });

  it('accepts string chunks', async () => {
    const decoder = new FrameDecoder();
    const out = collect(decoder);
    decoder.write('{"s":"é');
    decoder.end('"}\n');
    expect(await out).to.deep.equal([{ s: 'é' }]);
  });

  it('stops taking input while nobody reads its messages (backpressure)', async () => {
    let produced = 0;
    const line = Buffer.from(`${frame({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } })}`);
    const source = new Readable({
      read() {
        produced++;
        this.push(line);
      },
    });
    const decoder = new FrameDecoder();
    source.pipe(decoder);
    for (let i = 0; i < 50; i++) await tick();
    // Bounded by the decoder's readable buffer (16 messages), its writable buffer (64 KiB) and the source's own.
    const stalled = produced;
    expect(stalled).to.be.greaterThan(16);
    expect(stalled).to.be.lessThan(2000);
    for (let i = 0; i < 20; i++) await tick();
    expect(produced).to.equal(stalled);
    // Reading again lets it go on.
    let read = 0;
    while (produced === stalled) {
      const msg: unknown = decoder.read();
      if (msg === null) await new Promise((resolve) => decoder.once('readable', resolve));
      else read++;
    }
    expect(read).to.be.greaterThan(0);
    source.destroy();
    decoder.destroy();
  });
});

describe('FrameDecoder options', () => {
  const request = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
  const reply = { jsonrpc: '2.0', id: 1, result: {} };

  it("keeps a batch as one array by default, and yields its elements in order with batch: 'split'", async () => {
    for (const framing of ['ndjson', 'content-length', 'sse'] as const) {
      const bytes = await encodeAll([[request, note], reply], framing);
      expect((await decodeWithStream([bytes], { framing })).events).to.deep.equal([{ message: [request, note] }, { message: reply }]);
      expect((await decodeWithStream(byteByByte(bytes), { framing, batch: 'split' })).events).to.deep.equal([
        { message: request },
        { message: note },
        { message: reply },
      ]);
    }
  });

  it('with validate, reports what is not JSON-RPC 2.0 as INVALID_MESSAGE, at its position, and keeps the rest', async () => {
    const lines = [
      request,
      { id: 2 },
      note,
      [],
      [reply, { jsonrpc: '2.0', id: 3 }],
      { jsonrpc: '2.0', id: 4, error: { code: 'x', message: 'm' } },
      reply,
    ];
    const bytes = Buffer.from(lines.map((m) => frame(m)).join(''));
    const offsetOf = (i: number): number =>
      Buffer.byteLength(
        lines
          .slice(0, i)
          .map((m) => frame(m))
          .join(''),
      );
    const expected = [
      { message: request },
      { invalid: { code: 'INVALID_MESSAGE', line: 2, offset: offsetOf(1) } },
      { message: note },
      { invalid: { code: 'INVALID_MESSAGE', line: 4, offset: offsetOf(3) } },
      { invalid: { code: 'INVALID_MESSAGE', line: 5, offset: offsetOf(4) } },
      { invalid: { code: 'INVALID_MESSAGE', line: 6, offset: offsetOf(5) } },
      { message: reply },
    ];
    for (const chunks of [[bytes], byteByByte(bytes)]) {
      expect((await decodeWithStream(chunks, { validate: true, onInvalid: 'skip' })).events).to.deep.equal(expected);
    }
    // Split, a bad batch element is dropped alone.
    expect((await decodeWithStream([bytes], { validate: true, onInvalid: 'skip', batch: 'split' })).events).to.deep.equal([
      { message: request },
      { invalid: { code: 'INVALID_MESSAGE', line: 2, offset: offsetOf(1) } },
      { message: note },
      { invalid: { code: 'INVALID_MESSAGE', line: 4, offset: offsetOf(3) } },
      { message: reply },
      { invalid: { code: 'INVALID_MESSAGE', line: 5, offset: offsetOf(4) } },
      { invalid: { code: 'INVALID_MESSAGE', line: 6, offset: offsetOf(5) } },
      { message: reply },
    ]);
    const failed = await decodeWithStream([bytes], { validate: true });
    expect(failed.events).to.deep.equal([{ message: request }]);
    expect((failed.error as FrameError).code).to.equal('INVALID_MESSAGE');
    expect((failed.error as FrameError).message).to.match(/"jsonrpc" is not "2\.0"/);
  });

  it('with validate, gives Content-Length and SSE messages their frame number', async () => {
    const bytes = await encodeAll([request, { jsonrpc: '1.0' }, reply], 'content-length');
    expect((await decodeWithStream([bytes], { framing: 'content-length', validate: true, onInvalid: 'skip' })).events).to.deep.equal([
      { message: request },
      { invalid: { code: 'INVALID_MESSAGE', index: 2, offset: Buffer.byteLength(frameContentLength(request)) } },
      { message: reply },
    ]);
    const sse = await encodeAll([request, { jsonrpc: '1.0' }, reply], 'sse');
    expect((await decodeWithStream(byteByByte(sse), { framing: 'sse', validate: true, onInvalid: 'skip' })).events).to.deep.equal([
      { message: request },
      { invalid: { code: 'INVALID_MESSAGE', index: 2, line: 4, offset: Buffer.byteLength(frameSse(request)) } },
      { message: reply },
    ]);
  });

  describe('partialTimeoutMs', () => {
    const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

    for (const framing of ['ndjson', 'content-length', 'sse'] as const) {
      it(`under 'skip', drops a ${framing} message that stalls and decodes the next one`, async () => {
        const bytes = await encodeAll([{ first: 1 }, { stalled: 'x'.repeat(100) }, { next: 2 }], framing);
        const firstLen = (await encodeAll([{ first: 1 }], framing)).length;
        const stalledLen = (await encodeAll([{ stalled: 'x'.repeat(100) }], framing)).length;
        const decoder = new FrameDecoder({ framing, onInvalid: 'skip', partialTimeoutMs: 50 });
        const invalid: FrameError[] = [];
        decoder.on('invalid', (e: FrameError) => invalid.push(e));
        const out = collect(decoder);
        decoder.write(bytes.subarray(0, firstLen + 30));
        await wait(150);
        expect(invalid.map((e) => [e.code, e.offset])).to.deep.equal([['PARTIAL_TIMEOUT', firstLen]]);
        // The rest of the stalled message arrives late: it is dropped with it, and decoding goes on.
        decoder.end(bytes.subarray(firstLen + 30));
        expect(await out).to.deep.equal([{ first: 1 }, { next: 2 }]);
        expect(invalid).to.have.length(1);
        expect(firstLen + stalledLen).to.be.lessThan(bytes.length);
      });
    }

    it("under 'error', fails the stream after the messages before it", async () => {
      const decoder = new FrameDecoder({ partialTimeoutMs: 50 });
      decoder.write('{"a":1}\n{"b":');
      const { seen, caught } = await readAll(decoder);
      expect(seen).to.deep.equal([{ a: 1 }]);
      expect((caught as FrameError).code).to.equal('PARTIAL_TIMEOUT');
      expect((caught as FrameError).offset).to.equal(8);
    });

    it('restarts the wait with every new byte, and runs no timer between messages', async () => {
      // Six gaps of 100 ms add up to more than the 250 ms timeout; no single gap does.
      const decoder = new FrameDecoder({ partialTimeoutMs: 250 });
      const invalid: unknown[] = [];
      decoder.on('error', (e) => invalid.push(e));
      decoder.resume();
      decoder.write('{"slow":"');
      for (let i = 0; i < 6; i++) {
        await wait(100);
        decoder.write('x');
      }
      decoder.write('"}\n');
      await wait(400);
      expect(invalid).to.deep.equal([]);
      expect(decoder.partialBytes).to.equal(0);
      decoder.end();
    });

    it('never keeps the process alive, and is cleared on end and destroy', async () => {
      const script = [
        "import { FrameDecoder } from './dist/lib/index.js';",
        'const d = new FrameDecoder({ partialTimeoutMs: 60000 });',
        'd.resume();',
        'd.write(\'{"partial":\');',
        "process.stdout.write('wrote');",
      ].join('\n');
      const started = Date.now();
      const r = await run(process.execPath, ['--input-type=module', '-e', script]);
      expect(r.stdout).to.equal('wrote');
      expect(r.code).to.equal(0);
      expect(Date.now() - started).to.be.lessThan(5000);

      const ended = new FrameDecoder({ partialTimeoutMs: 30, onInvalid: 'skip' });
      const reports: unknown[] = [];
      ended.on('invalid', (e) => reports.push(e));
      ended.resume();
      ended.write('{"a":');
      ended.destroy();
      await wait(100);
      expect(reports).to.deep.equal([]);
    });

    it('rejects a timeout that is not a positive number', () => {
      expect(() => new FrameDecoder({ partialTimeoutMs: 0 })).to.throw(RangeError);
      expect(() => new FrameDecoder({ partialTimeoutMs: Number.NaN })).to.throw(RangeError);
      expect(() => new FrameDecoder({ batch: 'flat' as 'split' })).to.throw(TypeError);
    });
  });

  it("traces each frame's text from the moment a 'frame' listener is added, with any options, the messages unchanged", async () => {
    for (const framing of ['ndjson', 'content-length', 'sse'] as const) {
      for (const options of [{}, { validate: true }, { batch: 'split' as const }]) {
        const decoder = new FrameDecoder({ framing, ...options });
        const seen: unknown[] = [];
        decoder.on('data', (m) => seen.push(m));
        const first = await encodeAll([request], framing);
        const rest = await encodeAll([[note, reply], reply], framing);
        await new Promise<void>((resolve) => decoder.write(first, () => resolve()));
        const traced: string[] = [];
        decoder.on('frame', (text: string) => traced.push(text));
        const ended = new Promise((resolve) => decoder.on('end', resolve));
        decoder.end(rest);
        await ended;
        const how = `${framing} ${JSON.stringify(options)}`;
        expect(traced, how).to.deep.equal([JSON.stringify([note, reply]), JSON.stringify(reply)]);
        expect(seen, how).to.deep.equal(options.batch === 'split' ? [request, note, reply, reply] : [request, [note, reply], reply]);
      }
    }
  });

  it("delivers nothing after the bad frame that stops an onInvalid: 'error' decoder, traced or not", async () => {
    for (const framing of ['ndjson', 'content-length', 'sse'] as const) {
      for (const trace of [false, true]) {
        const good = await encodeAll([request], framing);
        const bad = framing === 'ndjson' ? 'nope\n' : framing === 'sse' ? 'data: nope\n\n' : 'Content-Length: 4\r\n\r\nnope';
        const decoder = new FrameDecoder({ framing });
        const traced: string[] = [];
        if (trace) decoder.on('frame', (text: string) => traced.push(text));
        const { seen, caught } = await readAll(Readable.from([Buffer.concat([good, Buffer.from(bad), good])]).pipe(decoder));
        expect(seen, framing).to.deep.equal([request]);
        expect((caught as FrameError).code, framing).to.equal('INVALID_JSON');
        expect(traced, framing).to.deep.equal(trace ? [JSON.stringify(request)] : []);
      }
    }
  });

  it("emits other SSE event types on 'event' and exposes the last event id", async () => {
    const decoder = new FrameDecoder({ framing: 'sse' });
    const events: unknown[] = [];
    decoder.on('event', (e) => events.push(e));
    const out = collect(decoder);
    decoder.end('retry: 2500\nevent: endpoint\ndata: /messages?s=1\n\nid: 41\ndata: {"a":1}\n\n');
    expect(await out).to.deep.equal([{ a: 1 }]);
    expect(events).to.deep.equal([{ event: 'endpoint', data: '/messages?s=1' }]);
    expect(decoder.lastEventId).to.equal('41');
    expect(decoder.retry).to.equal(2500);
  });
});

describe('FrameConverter', () => {
  const msgs = [{ jsonrpc: '2.0', id: 1, method: 'x', params: { t: 'é😀\n\u2028' } }, [{ a: 1 }], { jsonrpc: '2.0', id: 1, result: 'ok' }];
  const names = ['ndjson', 'content-length', 'sse'] as const;
  for (const from of names) {
    for (const to of names) {
      it(`re-frames ${from} as ${to}, byte for byte what FrameEncoder writes`, async () => {
        const input = await encodeAll(msgs, from);
        const converter = new FrameConverter({ framing: from, to });
        const out: Buffer[] = [];
        await pipeline(
          Readable.from(randomChunks(input, rng(7), 50)),
          converter,
          new Writable({
            write: (c: Buffer, _e, cb) => {
              out.push(c);
              cb();
            },
          }),
        );
        expect(Buffer.concat(out).equals(await encodeAll(msgs, to))).to.equal(true);
      });
    }
  }
});

describe('FrameEncoder', () => {
  it('writes frame(msg) for each message, byte for byte', async () => {
    const msgs = [{ jsonrpc: '2.0', id: 1, method: 'x', params: { t: 'a\nb\u2028😀' } }, [{ a: 1 }, { b: 2 }], { r: null }];
    expect((await encodeAll(msgs)).toString('utf8')).to.equal(msgs.map((m) => `${JSON.stringify(m)}\n`).join(''));
  });

  it('fails with NOT_SERIALIZABLE on a message that cannot be framed, after the ones before it', async () => {
    const encoder = new FrameEncoder();
    const out: Buffer[] = [];
    encoder.on('data', (c: Buffer) => out.push(c));
    const failed = new Promise<unknown>((resolve) => encoder.on('error', resolve));
    expect(() => {
      encoder.write({ ok: 1 });
      encoder.write({ n: 1n });
    }).not.to.throw();
    const err = (await failed) as FrameError;
    expect(err).to.be.instanceOf(FrameError);
    expect(err.code).to.equal('NOT_SERIALIZABLE');
    expect(Buffer.concat(out).toString()).to.equal('{"ok":1}\n');
  });

  it('delivers the bytes before an unframeable message to a for await reader, then fails', async () => {
    const encoder = new FrameEncoder();
    encoder.write({ a: 1 });
    encoder.write({ b: 2 });
    encoder.write({ c: 3n });
    encoder.end({ d: 4 });
    const chunks: Buffer[] = [];
    let caught: unknown;
    try {
      for await (const chunk of encoder) {
        chunks.push(chunk as Buffer);
        await tick();
      }
    } catch (err) {
      caught = err;
    }
    expect(Buffer.concat(chunks).toString()).to.equal('{"a":1}\n{"b":2}\n');
    expect((caught as FrameError).code).to.equal('NOT_SERIALIZABLE');
  });

  it('returns false from write() when nobody reads its bytes (backpressure)', () => {
    const encoder = new FrameEncoder();
    const msg = { data: 'x'.repeat(1000) };
    let accepted = 0;
    while (encoder.write(msg)) {
      accepted++;
      if (accepted > 10_000) break;
    }
    // 64 KiB of readable buffer holds about 64 messages; the writable side holds 16 more.
    expect(accepted).to.be.within(60, 90);
    encoder.destroy();
  });

  it('round-trips any messages through FrameEncoder and FrameDecoder under random chunking (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.object(), fc.array(fc.object(), { minLength: 1, maxLength: 3 })), { maxLength: 30 }),
        fc.integer({ min: 1, max: 300 }),
        fc.integer(),
        async (msgs, max, seed) => {
          const clean = JSON.parse(JSON.stringify(msgs)) as unknown[];
          const bytes = await encodeAll(clean);
          const outcome = await decodeWithStream(randomChunks(bytes, rng(seed), max));
          expect(outcome.error).to.equal(undefined);
          expect(outcome.events).to.deep.equal(clean.map((message) => ({ message })));
        },
      ),
      { numRuns: 100 },
    );
  });
});
