// mcp-frame/web on Node: the portable NDJSON decoder held to the Node decoder's fixtures (the same messages and the
// same error codes and positions, whole, byte by byte, at every split point and at random ones), multibyte text
// included; the Web Streams around it, in both modes; and the encoder byte for byte against frame().
import { expect } from 'chai';
import fc from 'fast-check';
import { frame as nodeFrame } from '../../lib/framings/ndjson.js';
import { WebNdjsonDecoder } from '../../lib/web/ndjson.js';
import { FrameDecoderStream, FrameEncoderStream, FrameError, frame } from '../../lib/web/index.js';
import { chunkings, randomChunks, rng } from '../helpers/chunkers.js';
import { type DecodeEvent, decodeWithCore, decodeWithStream, invalidEvent } from '../helpers/decode.js';
import { untilFirstInvalid, wireFixtures } from '../helpers/fixtures.js';

const LIMITS = { maxMessageBytes: 64 * 1024 * 1024 };
const messagesOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('message' in e ? [e.message] : []));
const invalidOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('invalid' in e ? [e.invalid] : []));

/** Chunks through a FrameDecoderStream; what came out, and the error it ended with. */
async function throughStream(chunks: readonly Uint8Array[], options: ConstructorParameters<typeof FrameDecoderStream>[0] = {}) {
  const events: DecodeEvent[] = [];
  const stream = new FrameDecoderStream({ ...options, oninvalid: (err) => events.push(invalidEvent(err)) });
  const writer = stream.writable.getWriter();
  const reading = (async () => {
    const reader = stream.readable.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return undefined;
      events.push({ message: value });
    }
  })().catch((err: unknown) => err);
  for (const chunk of chunks) await writer.write(chunk).catch(() => undefined);
  await writer.close().catch(() => undefined);
  return { events, error: await reading };
}

const message = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0'), id: fc.nat(), method: fc.string(), params: fc.dictionary(fc.string(), fc.jsonValue()) }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    method: fc.constant('notifications/message'),
    params: fc.record({ data: fc.string({ unit: 'grapheme' }) }),
  }),
);

describe('mcp-frame/web: the framing on Web Streams', function () {
  this.timeout(60_000);

  for (const fixture of wireFixtures('ndjson')) {
    it(`decodes fixtures/wire/${fixture.name}.ndjson as the Node decoder does, under every chunking`, () => {
      expect(fixture.events.length).to.be.greaterThan(0);
      for (const [how, chunks] of chunkings(fixture.bytes))
        expect(decodeWithCore(new WebNdjsonDecoder(LIMITS), chunks), how).to.deep.equal(fixture.events);
    });
  }

  it('through FrameDecoderStream: skip mode reports what the Node FrameDecoder reports; error mode stops at the first bad frame with its FrameError', async () => {
    for (const fixture of wireFixtures('ndjson')) {
      for (const [how, chunks] of chunkings(fixture.bytes, 64)) {
        const node = await decodeWithStream(chunks, { onInvalid: 'skip' });
        const web = await throughStream(chunks, { onInvalid: 'skip' });
        expect(web.error, `${fixture.name} ${how}`).to.equal(undefined);
        // A stream's messages are read after its invalid frames are reported: each kind in order, compared apart.
        expect(messagesOf(web.events), `${fixture.name} ${how}`).to.deep.equal(messagesOf(node.events));
        expect(invalidOf(web.events), `${fixture.name} ${how}`).to.deep.equal(invalidOf(node.events));
        const { before, first } = untilFirstInvalid(fixture.events);
        const strict = await throughStream(chunks);
        if (first === undefined) expect(strict.error).to.equal(undefined);
        else {
          expect(strict.error, `${fixture.name} ${how}`).to.be.instanceOf(FrameError);
          expect(invalidEvent(strict.error as FrameError)).to.deep.equal(first);
          expect(strict.events).to.deep.equal(before);
        }
      }
    }
  });

  it('decodes random message streams, multibyte text included, under random chunking, as they were framed (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { maxLength: 12 }), fc.integer({ min: 1, max: 512 }), fc.integer(), async (msgs, max, seed) => {
        const bytes = Buffer.from(msgs.map((m) => frame(m)).join(''));
        const out = await throughStream(randomChunks(bytes, rng(seed), max));
        expect(out.error).to.equal(undefined);
        // As framed: JSON has no -0, so a -0 comes back 0, as from any JSON reader.
        expect(out.events).to.deep.equal(msgs.map((m) => ({ message: JSON.parse(frame(m)) as unknown })));
      }),
      { numRuns: 100 },
    );
  });

  it('holds a line past maxMessageBytes to the same rule: MESSAGE_TOO_LARGE at its start, dropped to its LF, the next line decoded', async () => {
    const small = '{"jsonrpc":"2.0","method":"a"}\n';
    const big = `{"jsonrpc":"2.0","method":"${'x'.repeat(200)}"}\n`;
    const bytes = Buffer.from(small + big + small);
    for (const [how, chunks] of chunkings(bytes)) {
      const node = await decodeWithStream(chunks, { onInvalid: 'skip', maxMessageBytes: 64 });
      const web = await throughStream(chunks, { onInvalid: 'skip', maxMessageBytes: 64 });
      expect(messagesOf(web.events), how).to.deep.equal([
        { jsonrpc: '2.0', method: 'a' },
        { jsonrpc: '2.0', method: 'a' },
      ]);
      expect(invalidOf(web.events), how).to.deep.equal([{ code: 'MESSAGE_TOO_LARGE', line: 2, offset: small.length }]);
      expect([messagesOf(node.events), invalidOf(node.events)], how).to.deep.equal([messagesOf(web.events), invalidOf(web.events)]);
    }
  });

  it('validates as the Node streams do: a frame that is JSON but not JSON-RPC is INVALID_MESSAGE', async () => {
    const bytes = Buffer.from('{"jsonrpc":"2.0","method":"ok"}\n{"hello":"world"}\n');
    const web = await throughStream([bytes], { onInvalid: 'skip', validate: true });
    const node = await decodeWithStream([bytes], { onInvalid: 'skip', validate: true });
    expect(messagesOf(web.events)).to.deep.equal([{ jsonrpc: '2.0', method: 'ok' }]);
    expect(invalidOf(web.events)).to.deep.equal([{ code: 'INVALID_MESSAGE', line: 2, offset: 32 }]);
    expect([messagesOf(node.events), invalidOf(node.events)]).to.deep.equal([messagesOf(web.events), invalidOf(web.events)]);
  });

  it('encodes byte for byte what frame() writes, U+2028 and multibyte text included; a value with no JSON form errors the stream', async () => {
    const msgs = [
      { jsonrpc: '2.0', id: 1, result: { text: 'ünïcödé ✓ \u2028 line\nbreak' } },
      { jsonrpc: '2.0', method: 'ping' },
    ];
    const stream = new FrameEncoderStream();
    const writer = stream.writable.getWriter();
    const chunks: Uint8Array[] = [];
    const reading = (async () => {
      for await (const chunk of stream.readable as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
    })();
    for (const m of msgs) await writer.write(m);
    await writer.close();
    await reading;
    expect(Buffer.concat(chunks).equals(Buffer.from(msgs.map((m) => nodeFrame(m)).join('')))).to.equal(true);
    const bad = new FrameEncoderStream();
    const failed = bad.readable
      .getReader()
      .read()
      .catch((err: unknown) => err);
    await bad.writable
      .getWriter()
      .write({ n: 10n })
      .catch(() => undefined);
    const err = await failed;
    expect(err).to.be.instanceOf(FrameError);
    expect((err as FrameError).code).to.equal('NOT_SERIALIZABLE');
  });

  it('says which framings it speaks: another is a TypeError naming where it is', () => {
    expect(() => new FrameDecoderStream({ framing: 'sse' as 'ndjson' })).to.throw(TypeError, /frames ndjson; "sse" is the Node streams'/);
    expect(() => new FrameDecoderStream({ maxMessageBytes: 0 })).to.throw(TypeError, /maxMessageBytes/);
  });
});
