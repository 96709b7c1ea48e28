import { expect } from 'chai';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { FrameError } from '../../lib/errors.js';
import type { DecodeSink } from '../../lib/framings/codec.js';
import { formatEvent, frameSse, SseDecoder } from '../../lib/framings/sse.js';
import { byteByByte, chunkings, randomChunks, rng, splitAt } from '../helpers/chunkers.js';
import { decodeWithCore, type DecodeEvent } from '../helpers/decode.js';
import { wireFixtures } from '../helpers/fixtures.js';

const decode = (chunks: Buffer[], max = 64 * 1024 * 1024): DecodeEvent[] => decodeWithCore(new SseDecoder({ maxMessageBytes: max }), chunks);

/** What eventsource-parser makes of the same bytes, as our decoder reports events: messages parsed, others as they are. */
function withEventsourceParser(chunks: Buffer[]): DecodeEvent[] {
  const out: DecodeEvent[] = [];
  const parser = createParser({
    onEvent: (e: EventSourceMessage) => {
      if ((e.event ?? 'message') === 'message') out.push({ message: JSON.parse(e.data) as unknown });
      else out.push({ event: { event: e.event!, data: e.data } });
    },
  });
  const text = new TextDecoder();
  for (const c of chunks) parser.feed(text.decode(c, { stream: true }));
  parser.feed(text.decode());
  return out;
}

/**
 * Each message's id and the position the decoder gives for it (lastPosition), and each bad frame's code and position,
 * in order, as the core alone reports them for `chunks`.
 */
function positions(
  chunks: Buffer[],
): Array<{ id?: unknown; at?: unknown; invalid?: string; index?: number | undefined; line?: number | undefined; offset?: number | undefined }> {
  const core = new SseDecoder({ maxMessageBytes: 1 << 20 });
  const out: ReturnType<typeof positions> = [];
  const sink: DecodeSink = {
    message: (m) => void out.push({ id: (m as { id?: unknown }).id, at: core.lastPosition() }),
    invalid: (e) => {
      out.push({ invalid: e.code, index: e.index, line: e.line, offset: e.offset });
      return true;
    },
  };
  for (const c of chunks) core.write(c, sink);
  core.end(sink);
  return out;
}

describe('sse framing', () => {
  it('writes event: message and one data line of compact JSON, with an id line when asked', () => {
    const msg = { jsonrpc: '2.0', id: 1, result: { text: 'a\nb\r\nc' } };
    expect(frameSse(msg)).to.equal(`event: message\ndata: ${JSON.stringify(msg)}\n\n`);
    expect(frameSse(msg, 42)).to.equal(`id: 42\nevent: message\ndata: ${JSON.stringify(msg)}\n\n`);
    expect(formatEvent({ event: 'endpoint', data: 'line one\nline two', retry: 1500 })).to.equal(
      'event: endpoint\nretry: 1500\ndata: line one\ndata: line two\n\n',
    );
    expect(() => formatEvent({ data: 'x', id: 'a\nb' })).to.throw(TypeError);
  });

  for (const fixture of wireFixtures('sse')) {
    it(`decodes fixtures/wire/${fixture.name}.sse the same under every chunking`, () => {
      for (const [how, chunks] of chunkings(fixture.bytes)) expect(decode(chunks), how).to.deep.equal(fixture.events);
    });
  }

  it('dispatches the same events as eventsource-parser, split at every point', () => {
    const fixture = wireFixtures('sse').find((f) => f.name === 'sse-basic')!;
    const ours = decode([fixture.bytes]).map((e) => ('event' in e ? { event: { event: e.event.event, data: e.event.data } } : e));
    expect(ours.length).to.be.greaterThan(4);
    for (let at = 0; at <= fixture.bytes.length; at++) {
      expect(withEventsourceParser(splitAt(fixture.bytes, at)), `split at ${at}`).to.deep.equal(ours);
    }
    expect(withEventsourceParser(byteByByte(fixture.bytes))).to.deep.equal(ours);
  });

  it('agrees with eventsource-parser on random streams of framed messages', () => {
    const msgs = Array.from({ length: 40 }, (_, i) => ({ jsonrpc: '2.0', id: i, result: { text: `é😀 ${'z'.repeat(i * 37)}\u2028` } }));
    const bytes = Buffer.from(msgs.map((m, i) => frameSse(m, i % 3 === 0 ? i : undefined)).join(': ping\r\n\r\n'));
    for (let seed = 1; seed <= 10; seed++) {
      const chunks = randomChunks(bytes, rng(seed), 97);
      const ours = decode(chunks);
      expect(ours).to.deep.equal(msgs.map((message) => ({ message })));
      expect(withEventsourceParser(chunks)).to.deep.equal(ours);
    }
  });

  it('keeps the last event id and the retry time', () => {
    const decoder = new SseDecoder({ maxMessageBytes: 1000 });
    const sink: DecodeSink = { message: () => undefined, invalid: () => true };
    decoder.write(Buffer.from('retry: 2500\nid: abc\ndata: {}\n\nretry: soon\nid: x\0y\ndata: {}\n\n'), sink);
    expect(decoder.lastEventId).to.equal('abc');
    expect(decoder.retry).to.equal(2500);
    decoder.write(Buffer.from('id\ndata: {}\n\n'), sink);
    expect(decoder.lastEventId).to.equal('');
  });

  it('reads `event: message` and `id:` lines in either order before the data, and keeps lastEventId as line by line, at every split', () => {
    const m = (n: number, text = ''): string => JSON.stringify({ jsonrpc: '2.0', id: n, result: { text } });
    const stream = [
      `event: message\nid: 1\ndata: ${m(1)}\n\n`,
      `id: 2\nevent: message\ndata: ${m(2, 'é😀')}\n\n`,
      `id: 3\ndata: ${m(3)}\n\n`,
      `data: ${m(4)}\n\n`,
      `id: a\0b\nevent: message\ndata: ${m(5)}\n\n`,
      `id: ${'x'.repeat(300)}\ndata: ${m(6)}\n\n`,
      `event: message\nid: 7\nid: 8\ndata: ${m(7)}\n\n`,
      `id: 9\nevent: other\ndata: not a message\n\n`,
      `id: 東京\nevent: message\ndata: ${m(10, 'データ')}\n\n`,
      `id:11\ndata: ${m(11)}\n\n`,
      `id: 12\nevent: message\ndata: {"jsonrpc":\n\n`,
      `event: message\nid: 13\ndata: ${m(13)}\n\n`,
    ].join('');
    const bytes = Buffer.from(stream);
    const expected = [
      [1, '1', 1],
      [2, '2', 5],
      [3, '3', 9],
      [4, '3', 12],
      [5, '3', 14],
      [6, 'x'.repeat(300), 18],
      [7, '8', 21],
      [10, '東京', 30],
      [11, '11', 34],
      ['INVALID_JSON', '12', 37],
      [13, '13', 41],
    ];
    for (const [how, chunks] of chunkings(bytes)) {
      const core = new SseDecoder({ maxMessageBytes: 1 << 20 });
      const seen: unknown[] = [];
      const sink: DecodeSink = {
        message: (msg) => void seen.push([(msg as { id: number }).id, core.lastEventId, core.lastPosition().line]),
        invalid: (e) => {
          seen.push([e.code, core.lastEventId, e.line]);
          return true;
        },
      };
      for (const c of chunks) core.write(c, sink);
      core.end(sink);
      expect(seen, how).to.deep.equal(expected);
    }
  });

  it('counts a CRLF split across chunks once', () => {
    const bytes = Buffer.from('data: {"a":1}\r\n\r\ndata: {"b":2}\r\n\r\n');
    for (let at = 0; at <= bytes.length; at++) {
      expect(decode(splitAt(bytes, at)), `split at ${at}`).to.deep.equal([{ message: { a: 1 } }, { message: { b: 2 } }]);
    }
  });

  it('does not count keep-alive comments as a partial message', () => {
    const decoder = new SseDecoder({ maxMessageBytes: 1000 });
    const sink: DecodeSink = { message: () => undefined, invalid: () => true };
    decoder.write(Buffer.from(': ping\n\n: ping\n'), sink);
    expect(decoder.partialBytes).to.equal(0);
    decoder.write(Buffer.from('data: {"a"'), sink);
    expect(decoder.partialBytes).to.be.greaterThan(0);
  });

  it('moves lastEventId when an event ends, priming events included, and not for an event cut off by the end', () => {
    const bytes = Buffer.from('id: 1\nretry: 500\ndata: \n\nid: 2\ndata: {"a":1}\n\nid: 3\ndata: {"b"');
    for (const [how, chunks] of chunkings(bytes)) {
      const decoder = new SseDecoder({ maxMessageBytes: 1000 });
      const seen: string[] = [];
      const sink: DecodeSink = {
        message: () => void seen.push(`message after id ${decoder.lastEventId}`),
        invalid: (e: FrameError) => {
          seen.push(e.code);
          return true;
        },
      };
      chunks.forEach((c, i) => {
        decoder.write(c, sink);
        // The priming event (id 1, empty data) is neither a message nor an error, but its id counts.
        if (i === chunks.length - 1) expect(decoder.lastEventId, how).to.equal('2');
      });
      decoder.end(sink);
      expect(seen, how).to.deep.equal(['message after id 2', 'TRUNCATED']);
      expect(decoder.lastEventId, how).to.equal('2');
      expect(decoder.retry, how).to.equal(500);
    }
  });

  describe("the fast path (a chunk's complete lines decoded at once)", () => {
    /** A long stream in every shape the fast path meets, multibyte text throughout; and what it must decode to. */
    function mixedStream(lineEnd: string): { bytes: Buffer; expected: DecodeEvent[] } {
      const expected: DecodeEvent[] = [];
      let text = '';
      for (let i = 0; i < 300; i++) {
        const msg = { jsonrpc: '2.0', id: i, result: { text: `東京 ü 😀 ${'x'.repeat((i * 53) % 700)}` } };
        const json = JSON.stringify(msg);
        switch (i % 6) {
          case 0: // the MCP shape
            text += `event: message${lineEnd}data: ${json}${lineEnd}${lineEnd}`;
            break;
          case 1: // no type line, and an id
            text += `id: ${i}${lineEnd}data: ${json}${lineEnd}${lineEnd}`;
            break;
          case 2: // the data split over lines, joined with LF (inside a JSON string that would be a raw LF: use JSON whitespace)
            text += `data: ${json.slice(0, 10)}${lineEnd}data: ${json.slice(10)}${lineEnd}${lineEnd}`;
            break;
          case 3: // a comment, another event type, then a message
            text += `: keep-alive ö${lineEnd}event: endpoint${lineEnd}data: /messages?id=${i}${lineEnd}${lineEnd}data:${json}${lineEnd}${lineEnd}`;
            expected.push({ event: { event: 'endpoint', data: `/messages?id=${i}` } });
            break;
          case 4: // a line with a U+FEFF before its field name is no field: the event has no data
            text += `\uFEFFdata: ${json}${lineEnd}${lineEnd}data: ${json}${lineEnd}${lineEnd}`;
            break;
          default: // not JSON: reported, and the next one goes on
            text += `data: {"broken": ö${lineEnd}${lineEnd}data: ${json}${lineEnd}${lineEnd}`;
            expected.push({ invalid: { code: 'INVALID_JSON' } });
        }
        expected.push({ message: msg });
      }
      // The BOM at the very start is the stream's own, and dropped.
      return { bytes: Buffer.from(`\uFEFF${text}`), expected };
    }

    const shape = (events: DecodeEvent[]): DecodeEvent[] =>
      events.map((e) =>
        'invalid' in e ? { invalid: { code: e.invalid.code } } : 'event' in e ? { event: { event: e.event.event, data: e.event.data } } : e,
      );

    for (const [name, lineEnd] of [
      ['LF', '\n'],
      ['CRLF', '\r\n'],
      ['CR', '\r'],
    ] as const) {
      it(`decodes a long multibyte stream with ${name} line ends the same whole, byte by byte and in random chunks, positions and all`, () => {
        const { bytes, expected } = mixedStream(lineEnd);
        const reference = decode(byteByByte(bytes));
        expect(shape(reference)).to.deep.equal(expected);
        expect(decode([bytes])).to.deep.equal(reference);
        for (let seed = 1; seed <= 6; seed++) {
          for (const max of [300, 5000, 70_000])
            expect(decode(randomChunks(bytes, rng(seed * 31 + max), max)), `seed ${seed} ≤${max}`).to.deep.equal(reference);
        }
      });
    }

    it('reports the byte offset and line of a bad event among multibyte ones, as the byte path does', () => {
      const good = frameSse({ jsonrpc: '2.0', id: 1, result: { text: 'データ'.repeat(200) } });
      const bytes = Buffer.from(`${good}${good}data: nope 東京\n\n${good}`);
      const events = decode([bytes]);
      const offset = Buffer.byteLength(good + good);
      expect(events[2]).to.deep.equal({ invalid: { code: 'INVALID_JSON', index: 3, line: 7, offset } });
      expect(decode(byteByByte(bytes))).to.deep.equal(events);
    });

    it('reads a chunk of many regions as the byte path does: cut after events, inside an event, and in a long line', () => {
      const msg = (id: number, text: string) => ({ jsonrpc: '2.0', id, result: { text } });
      let text = '';
      // Events of the usual shape, then an event whose data is 100 short lines (more than 32 KiB without a blank
      // line), then a bad event, then an event of one 40 KiB line, and more events of the usual shape after each.
      for (let i = 0; i < 120; i++) text += frameSse(msg(i, `東京 ${'ü'.repeat(i * 3)}`));
      // The lines are joined with LF, which is JSON whitespace between the array's elements.
      const parts = Array.from({ length: 100 }, (_, k) => `"${'データ'.repeat(40)} ${k}"${k < 99 ? ',' : ''}`);
      const lines = ['{"jsonrpc":"2.0","id":1000,"result":{"parts":[', ...parts, ']}}'];
      text += `event: message\n${lines.map((line) => `data: ${line}\n`).join('')}\n`;
      for (let i = 0; i < 60; i++) text += frameSse(msg(2000 + i, `é ${'x'.repeat(i * 7)}`));
      text += 'data: {"broken": 東京\n\n';
      text += frameSse(msg(3000, 'ö'.repeat(20_000)));
      for (let i = 0; i < 200; i++) text += frameSse(msg(4000 + i, `😀 ${'y'.repeat(i)}`));
      const bytes = Buffer.from(text);
      expect(bytes.length).to.be.greaterThan(4 * 32 * 1024);

      const whole = positions([bytes]);
      expect(whole).to.have.length(120 + 1 + 60 + 1 + 1 + 200);
      expect(whole[120]).to.deep.include({ id: 1000 });
      expect(Buffer.byteLength(lines.join('\n'))).to.be.greaterThan(32 * 1024);
      expect(whole[181]).to.deep.include({ invalid: 'INVALID_JSON', index: 182 });
      expect(whole[182]).to.deep.include({ id: 3000 });
      expect(positions(byteByByte(bytes))).to.deep.equal(whole);
      for (let seed = 1; seed <= 3; seed++) expect(positions(randomChunks(bytes, rng(seed), 100_000)), `seed ${seed}`).to.deep.equal(whole);
    });

    it('gives the position of each message to validation, as the byte path does', () => {
      const body = { jsonrpc: '2.0', id: 1, result: { text: 'ünï'.repeat(500) } };
      const bytes = Buffer.from(`${frameSse(body)}${frameSse({ not: 'json-rpc', text: 'é'.repeat(600) })}`);
      const at = (chunks: Buffer[]): unknown[] => positions(chunks).map((entry) => entry.at);
      expect(at([bytes])).to.deep.equal([
        { index: 1, line: 1, offset: 0 },
        { index: 2, line: 4, offset: Buffer.byteLength(frameSse(body)) },
      ]);
      expect(at(byteByByte(bytes))).to.deep.equal(at([bytes]));
    });

    it('takes invalid UTF-8 in a large chunk line by line, reporting only the bad event', () => {
      const good = frameSse({ jsonrpc: '2.0', id: 1, result: { text: 'ö'.repeat(800) } });
      const bytes = Buffer.concat([
        Buffer.from(good),
        Buffer.from('data: {"a":"'),
        Buffer.from([0xe2, 0x82]),
        Buffer.from('"}\n\n'),
        Buffer.from(good),
      ]);
      const events = decode([bytes]);
      expect(shape(events)).to.deep.equal([
        { message: JSON.parse(good.slice(good.indexOf('{'), good.lastIndexOf('}') + 1)) },
        { invalid: { code: 'INVALID_UTF8' } },
        events[0],
      ]);
      expect(decode(byteByByte(bytes))).to.deep.equal(events);
    });

    it('holds the value of a data line that spans chunks, not its field name', () => {
      const core = new SseDecoder({ maxMessageBytes: 1 << 20 });
      const sink: DecodeSink = { message: () => undefined, invalid: () => true };
      core.write(Buffer.from('event: message\ndata: {"jsonrpc":'), sink);
      core.write(Buffer.from(`"2.0","id":1,"result":{"text":"${'é'.repeat(50_000)}`), sink);
      expect(core.bufferedBytes).to.equal(Buffer.byteLength(`{"jsonrpc":"2.0","id":1,"result":{"text":"${'é'.repeat(50_000)}`));
    });

    it('counts data bytes, not characters, against the limit: multibyte data one byte over is refused', () => {
      const data = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: '東京'.repeat(400) } });
      const limit = Buffer.byteLength(data);
      const bytes = Buffer.from(`data: ${data}\n\ndata: ${data.replace('"id":1', '"id":12')}\n\n`);
      const events = decode([bytes], limit);
      expect(shape(events)).to.deep.equal([{ message: JSON.parse(data) }, { invalid: { code: 'MESSAGE_TOO_LARGE' } }]);
      expect(decode(byteByByte(bytes), limit)).to.deep.equal(events);
    });
  });

  describe('maxMessageBytes', () => {
    const body = (n: number): string => `{"t":"${'x'.repeat(n - 8)}"}`;
    it('passes data of exactly the limit and rejects one byte more, then goes on after the event', () => {
      const good = Buffer.from(`data: ${body(64)}\n\ndata: [1]\n\n`);
      const bad = Buffer.from(`data: ${body(65)}\n\ndata: [1]\n\n`);
      for (let at = 0; at <= good.length; at++) {
        expect(decode(splitAt(good, at), 64), `split at ${at}`).to.deep.equal([{ message: JSON.parse(body(64)) }, { message: [1] }]);
        expect(decode(splitAt(bad, at), 64), `split at ${at}`).to.deep.equal([
          { invalid: { code: 'MESSAGE_TOO_LARGE', index: 1, line: 1, offset: 0 } },
          { message: [1] },
        ]);
      }
    });

    it('drops a comment or another field longer than the limit, keeping its event, however the bytes are split', () => {
      const long = 'x'.repeat(300);
      const bytes = Buffer.from(`id: 5\n: ${long}\nevent: message\nunknown-${long}: y\ndata: {"ok":1}\n\ndata: [2]\n\n`);
      for (const [how, chunks] of chunkings(bytes)) {
        expect(decode(chunks, 64), how).to.deep.equal([{ message: { ok: 1 } }, { message: [2] }]);
      }
    });

    it('takes a long line whose name only starts like data (datax: ...) as another field, however the bytes are split', () => {
      const bytes = Buffer.from(`data: {"a":1}\ndatax: ${'x'.repeat(100)}\n\ndata: [2]\n\n`);
      for (const [how, chunks] of chunkings(bytes)) {
        expect(decode(chunks, 16), how).to.deep.equal([{ message: { a: 1 } }, { message: [2] }]);
      }
    });

    it('counts the same bytes of a data line against the limit however its field name is split, and reports a line cut off the same way', () => {
      // Cut off inside its data line: within the limit by its value alone, over it with "data: " counted.
      const bytes = Buffer.from('data: [1]\n\nevent: message\ndata: {"jsonrpc":"2.0","i":1');
      for (const [how, chunks] of chunkings(bytes)) {
        expect(decode(chunks, 16), how).to.deep.equal([{ message: [1] }, { invalid: { code: 'TRUNCATED', index: 2, line: 3, offset: 11 } }]);
      }
    });

    it('reports an oversized event once and drops its later lines, long or not, up to its blank line, however the bytes are split', () => {
      const bytes = Buffer.from(`data: ${'1'.repeat(40)}\n\x80\ndata: ${'2'.repeat(40)}\n\ndata: 3\n\n`);
      for (const [how, chunks] of chunkings(bytes)) {
        expect(decode(chunks, 16), how).to.deep.equal([{ invalid: { code: 'MESSAGE_TOO_LARGE', index: 1, line: 1, offset: 0 } }, { message: 3 }]);
      }
    });

    it('reports an oversized first data line after a BOM however it is split, where it was dropped without a word once it spanned chunks', () => {
      const bytes = Buffer.from(`\uFEFFdata: ${'1'.repeat(40)}\n\ndata: 3\n\n`);
      for (const [how, chunks] of chunkings(bytes)) {
        expect(decode(chunks, 16), how).to.deep.equal([{ invalid: { code: 'MESSAGE_TOO_LARGE', index: 1, line: 1, offset: 0 } }, { message: 3 }]);
      }
    });

    it('counts data joined from several lines, and holds none of an oversized line', () => {
      expect(decode([Buffer.from(`data: ${'1'.repeat(40)}\ndata: ${'2'.repeat(40)}\n\ndata: 3\n\n`)], 64)).to.deep.equal([
        { invalid: { code: 'MESSAGE_TOO_LARGE', index: 1, line: 1, offset: 0 } },
        { message: 3 },
      ]);
      const decoder = new SseDecoder({ maxMessageBytes: 1000 });
      const codes: string[] = [];
      const sink: DecodeSink = {
        message: () => codes.push('message'),
        invalid: (e: FrameError) => {
          codes.push(e.code);
          return true;
        },
      };
      decoder.write(Buffer.from('data: '), sink);
      for (let i = 0; i < 200; i++) {
        decoder.write(Buffer.alloc(1000, 0x61), sink);
        expect(decoder.bufferedBytes).to.be.at.most(1000 + 64);
      }
      decoder.write(Buffer.from('\n\ndata: {}\n\n'), sink);
      expect(codes).to.deep.equal(['MESSAGE_TOO_LARGE', 'message']);
    });
  });
});
