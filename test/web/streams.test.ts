// mcp-frame/web on Node: the portable NDJSON, Content-Length and SSE decoders held to the Node decoders' fixtures
// (the same messages and the same error codes and positions, whole, byte by byte, at every split point and at random
// ones), multibyte text included, and the Content-Length and SSE ones to the Node decoders on random streams of good
// and bad frames; the Web Streams around them, in both modes; and the encoders byte for byte against frame(),
// frameContentLength() and frameSse().
import { expect } from 'chai';
import fc from 'fast-check';
import { ContentLengthDecoder, frameContentLength } from '../../lib/framings/content-length.js';
import { frame as nodeFrame } from '../../lib/framings/ndjson.js';
import { frameSse, SseDecoder } from '../../lib/framings/sse.js';
import { WebContentLengthDecoder } from '../../lib/web/content-length.js';
import { WebNdjsonDecoder } from '../../lib/web/ndjson.js';
import { WebSseDecoder } from '../../lib/web/sse.js';
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

  for (const fixture of wireFixtures('content-length')) {
    it(`decodes fixtures/wire/${fixture.name}.content-length as the Node decoder does, under every chunking`, () => {
      expect(fixture.events.length).to.be.greaterThan(0);
      for (const [how, chunks] of chunkings(fixture.bytes))
        expect(decodeWithCore(new WebContentLengthDecoder(LIMITS), chunks), how).to.deep.equal(fixture.events);
    });
  }

  for (const fixture of wireFixtures('sse')) {
    it(`decodes fixtures/wire/${fixture.name}.sse as the Node decoder does, under every chunking`, () => {
      expect(fixture.events.length).to.be.greaterThan(0);
      for (const [how, chunks] of chunkings(fixture.bytes))
        expect(decodeWithCore(new WebSseDecoder(LIMITS), chunks), how).to.deep.equal(fixture.events);
    });
  }

  it('decodes SSE streams of good and bad events as the Node decoder does, under random chunking, and keeps the same last id and retry (property)', () => {
    // Events and what goes wrong in them: ids (one with NUL), retry, comments, other event types, several data
    // lines, CR and CRLF line ends, bad JSON, a non-message, data over the limit in one line and in several, bytes
    // that are not UTF-8, a field with no colon, stray text, multibyte text.
    const piece = fc.oneof(
      message.map((m) => frameSse(m)),
      fc.tuple(message, fc.nat(1000)).map(([m, id]) => frameSse(m, id)),
      message.map((m) => frameSse(m).replaceAll('\n', '\r\n')),
      message.map((m) => frameSse(m).replaceAll('\n', '\r')),
      fc.constant(': keep-alive\n\n'),
      fc.constant('id: 7\ndata:\n\n'),
      fc.constant('id: a\0b\nretry: 1500\nretry: x\ndata: {"jsonrpc":"2.0","method":"a"}\n\n'),
      fc.constant('event: endpoint\ndata: /messages?sessionId=ünï\n\n'),
      fc.constant('data: {"jsonrpc":"2.0",\ndata: "method":"two lines"}\n\n'),
      fc.constant('data: {"jsonrpc":"2.0", oops\n\n'),
      fc.constant('data: [1,2]\n\n'),
      fc.constant('event: message\n\n'),
      fc.constant('data\n\ndata:x\n\n'),
      fc.constant(`data: {"jsonrpc":"2.0","method":"${'x'.repeat(300)}"}\n\n`),
      fc.constant(`data: ${'y'.repeat(150)}\ndata: ${'z'.repeat(150)}\n\n`),
      fc.constant(`: ${'c'.repeat(300)}\nevent: ${'e'.repeat(300)}\ndata: {"jsonrpc":"2.0","method":"after"}\n\n`),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
    );
    const notUtf8 = Buffer.concat([Buffer.from('data: '), Buffer.from([0xff, 0xfe]), Buffer.from('\n\n')]);
    // A line that ends inside a character: only the end of the line shows it is not UTF-8.
    const cutCharacter = Buffer.concat([Buffer.from('data: {"jsonrpc":"2.0","method":"é'), Buffer.from('é').subarray(0, 1), Buffer.from('\n\n')]);
    const pieceBytes = fc.oneof(
      { weight: 12, arbitrary: piece.map((p) => Buffer.from(p)) },
      { weight: 1, arbitrary: fc.constant(notUtf8) },
      { weight: 1, arbitrary: fc.constant(cutCharacter) },
    );
    fc.assert(
      fc.property(fc.boolean(), fc.array(pieceBytes, { maxLength: 10 }), fc.integer({ min: 1, max: 64 }), fc.integer(), (bom, pieces, max, seed) => {
        const bytes = Buffer.concat([Buffer.from(bom ? [0xef, 0xbb, 0xbf] : []), ...pieces]);
        const limits = { maxMessageBytes: 256 };
        const chunks = randomChunks(bytes, rng(seed), max);
        const [web, node] = [new WebSseDecoder(limits), new SseDecoder(limits)];
        expect(decodeWithCore(web, chunks)).to.deep.equal(decodeWithCore(node, chunks));
        expect([web.lastEventId, web.retry]).to.deep.equal([node.lastEventId, node.retry]);
      }),
      { numRuns: 600 },
    );
  });

  it('decodes Content-Length streams of good and bad frames as the Node decoder does, under random chunking (property)', () => {
    // Frames and what goes wrong between them: bad JSON, a non-message, a header with no length, a length that is
    // not a plain number, blank lines, garbage a resync must cross, a body over the limit, bytes that are not UTF-8.
    const body = (text: string) => `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
    const piece = fc.oneof(
      message.map((m) => frameContentLength(m)),
      fc.constant(body('{"jsonrpc":"2.0",')),
      fc.constant(body('[1,2]')),
      fc.constant('X-Other: 1\r\n\r\n{}'),
      fc.constant('Content-Length: 1e3\r\n\r\n'),
      fc.constant('content-LENGTH :  2\r\nX-Note: ünï\r\n\r\n{}'),
      fc.constant('\r\n\n'),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.constant(body(`{"jsonrpc":"2.0","method":"${'x'.repeat(300)}"}`)),
    );
    const notUtf8 = Buffer.concat([Buffer.from('Content-Length: 2\r\n\r\n'), Buffer.from([0xff, 0xfe])]);
    const pieceBytes = fc.oneof({ weight: 9, arbitrary: piece.map((p) => Buffer.from(p)) }, { weight: 1, arbitrary: fc.constant(notUtf8) });
    fc.assert(
      fc.property(fc.boolean(), fc.array(pieceBytes, { maxLength: 10 }), fc.integer({ min: 1, max: 64 }), fc.integer(), (bom, pieces, max, seed) => {
        const bytes = Buffer.concat([Buffer.from(bom ? [0xef, 0xbb, 0xbf] : []), ...pieces]);
        const limits = { maxMessageBytes: 256 };
        const chunks = randomChunks(bytes, rng(seed), max);
        expect(decodeWithCore(new WebContentLengthDecoder(limits), chunks)).to.deep.equal(decodeWithCore(new ContentLengthDecoder(limits), chunks));
      }),
      { numRuns: 400 },
    );
  });

  it('through FrameDecoderStream: skip mode reports what the Node FrameDecoder reports; error mode stops at the first bad frame with its FrameError', async () => {
    for (const [framing, fixture] of [
      ...wireFixtures('ndjson').map((f) => ['ndjson', f] as const),
      ...wireFixtures('content-length').map((f) => ['content-length', f] as const),
      ...wireFixtures('sse').map((f) => ['sse', f] as const),
    ]) {
      for (const [how, chunks] of chunkings(fixture.bytes, 64)) {
        const node = await decodeWithStream(chunks, { framing, onInvalid: 'skip' });
        const web = await throughStream(chunks, { framing, onInvalid: 'skip' });
        expect(web.error, `${fixture.name} ${how}`).to.equal(undefined);
        // A stream's messages are read after its invalid frames are reported: each kind in order, compared apart.
        expect(messagesOf(web.events), `${fixture.name} ${how}`).to.deep.equal(messagesOf(node.events));
        expect(invalidOf(web.events), `${fixture.name} ${how}`).to.deep.equal(invalidOf(node.events));
        const { before, first } = untilFirstInvalid(fixture.events);
        const strict = await throughStream(chunks, { framing });
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

  it('encodes byte for byte what frame(), frameContentLength() and frameSse() write, U+2028 and multibyte text included; a value with no JSON form errors the stream', async () => {
    const msgs = [
      { jsonrpc: '2.0', id: 1, result: { text: 'ünïcödé ✓ \u2028 line\nbreak' } },
      { jsonrpc: '2.0', method: 'ping' },
    ];
    for (const [framing, frameOf] of [
      ['ndjson', nodeFrame],
      ['content-length', frameContentLength],
      ['sse', (m: unknown) => frameSse(m)],
    ] as const) {
      const stream = new FrameEncoderStream({ framing });
      const writer = stream.writable.getWriter();
      const chunks: Uint8Array[] = [];
      const reading = (async () => {
        for await (const chunk of stream.readable as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
      })();
      for (const m of msgs) await writer.write(m);
      await writer.close();
      await reading;
      expect(chunks, 'a chunk a message').to.have.length(2);
      expect(Buffer.concat(chunks).equals(Buffer.from(msgs.map((m) => frameOf(m)).join(''))), framing).to.equal(true);
    }
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

  it('in error mode gives the reader every message before the bad frame, though they came in one chunk with it', async () => {
    const good = (n: number) => ({ jsonrpc: '2.0', id: n, result: { n } });
    for (const [framing, bytes, at] of [
      [
        'ndjson',
        Buffer.from(`${nodeFrame(good(1))}${nodeFrame(good(2))}{oops\n${nodeFrame(good(3))}`),
        { code: 'INVALID_JSON', line: 3, offset: Buffer.byteLength(nodeFrame(good(1)) + nodeFrame(good(2))) },
      ],
      [
        'content-length',
        Buffer.from(`${frameContentLength(good(1))}${frameContentLength(good(2))}Content-Length: 5\r\n\r\n{oops${frameContentLength(good(3))}`),
        { code: 'INVALID_JSON', index: 3, offset: Buffer.byteLength(frameContentLength(good(1)) + frameContentLength(good(2))) },
      ],
    ] as const) {
      const out = await throughStream([bytes], { framing });
      expect(out.events, framing).to.deep.equal([{ message: good(1) }, { message: good(2) }]);
      expect(out.error, framing).to.be.instanceOf(FrameError);
      expect(invalidEvent(out.error as FrameError), framing).to.deep.equal({ invalid: at });
    }
  });

  it('holds the writer while the reader does not read (backpressure), and a reader that cancels ends the writes', async () => {
    const stream = new FrameDecoderStream();
    const writer = stream.writable.getWriter();
    let written = false;
    const writing = writer.write(Buffer.from('{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}\n')).then(() => {
      written = true;
    });
    // A window in which the write must not complete: nobody has read.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).to.equal(false);
    const reader = stream.readable.getReader();
    expect((await reader.read()).value).to.deep.equal({ jsonrpc: '2.0', method: 'a' });
    await writing;
    expect((await reader.read()).value).to.deep.equal({ jsonrpc: '2.0', method: 'b' });
    await reader.cancel(new Error('enough'));
    const refused = await writer.write(Buffer.from('{"jsonrpc":"2.0","method":"c"}\n')).catch((err: Error) => err);
    expect(refused).to.be.instanceOf(Error).with.property('message', 'enough');
  });

  it('keeps what it holds of an unfinished frame when the writer reuses its buffer after each write (as a BYOB reader does)', () => {
    const msg = { jsonrpc: '2.0', id: 1, result: { text: 'ünïcödé' } };
    for (const [name, core, bytes] of [
      ['sse', new WebSseDecoder(LIMITS), Buffer.from(frameSse(msg))],
      ['content-length', new WebContentLengthDecoder(LIMITS), Buffer.from(frameContentLength(msg))],
      ['ndjson', new WebNdjsonDecoder(LIMITS), Buffer.from(nodeFrame(msg))],
    ] as const) {
      const events: DecodeEvent[] = [];
      const sink = { message: (m: unknown) => void events.push({ message: m }), invalid: () => true };
      const buffer = new Uint8Array(8);
      for (let at = 0; at < bytes.length; at += buffer.length) {
        const piece = bytes.subarray(at, at + buffer.length);
        buffer.set(piece);
        core.write(buffer.subarray(0, piece.length), sink);
        buffer.fill(0x78);
      }
      core.end(sink);
      expect(events, name).to.deep.equal([{ message: msg }]);
    }
  });

  it('with SSE, gives events of other types to onevent with their id, and keeps the last event id for a reconnection', async () => {
    const events: unknown[] = [];
    const stream = new FrameDecoderStream({ framing: 'sse', onevent: (event) => events.push(event) });
    const writer = stream.writable.getWriter();
    const reader = stream.readable.getReader();
    const bytes = Buffer.from(
      `id: 1\nevent: endpoint\ndata: /messages?sessionId=abc\n\nid: 2\ndata:\n\n${frameSse({ jsonrpc: '2.0', method: 'a' }, 'ev-3')}`,
    );
    const writing = writer.write(bytes);
    expect((await reader.read()).value).to.deep.equal({ jsonrpc: '2.0', method: 'a' });
    await writing;
    expect(events).to.deep.equal([{ event: 'endpoint', data: '/messages?sessionId=abc', id: '1' }]);
    expect(stream.lastEventId).to.equal('ev-3');
    expect(new FrameDecoderStream().lastEventId).to.equal(undefined);
  });

  it('says which framings it speaks: another is a TypeError naming them', () => {
    expect(() => new FrameDecoderStream({ framing: 'lsp' as 'ndjson' })).to.throw(
      TypeError,
      /frames ndjson, content-length and sse; got framing "lsp"/,
    );
    expect(() => new FrameEncoderStream({ framing: 'lsp' as 'ndjson' })).to.throw(TypeError, /"lsp"/);
    expect(() => new FrameDecoderStream({ maxMessageBytes: 0 })).to.throw(TypeError, /maxMessageBytes/);
  });
});
