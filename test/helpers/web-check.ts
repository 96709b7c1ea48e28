// What the tests of mcp-frame/web outside Node run there (Deno, Bun, a browser): each NDJSON, Content-Length and
// SSE wire fixture's bytes through FrameDecoderStream in skip mode, whole and byte by byte, and messages through
// FrameEncoderStream in each framing; and how what came out is held to the fixtures, frame(),
// frameContentLength() and frameSse().
import { expect } from 'chai';
import { frameContentLength } from '../../lib/framings/content-length.js';
import { frame } from '../../lib/framings/ndjson.js';
import { frameSse } from '../../lib/framings/sse.js';
import type { DecodeEvent } from './decode.js';
import { type WireFixture, wireFixtures } from './fixtures.js';

/** A wire fixture and the framing its bytes are in. */
export type WebFixture = WireFixture & { framing: 'ndjson' | 'content-length' | 'sse' };

/** Every wire fixture of the framings mcp-frame/web speaks. */
export function webFixtures(): WebFixture[] {
  return (['ndjson', 'content-length', 'sse'] as const).flatMap((framing) => wireFixtures(framing).map((f) => ({ ...f, framing })));
}

/** The messages encoded, as the runtime's FrameEncoderStream must write them. */
export const ENCODED = [
  { jsonrpc: '2.0', id: 1, result: { text: 'ünïcödé ✓ \u2028 end' } },
  { jsonrpc: '2.0', method: 'ping' },
];

type Decoded = { messages: unknown[]; invalid: unknown[]; events: unknown[] };
/** What the script reports: per fixture, what came out whole and byte by byte; and the encoders' bytes, base64. */
export type WebCheck = Record<string, { whole: Decoded; bytes: Decoded }> & { encoded: string; encodedContentLength: string; encodedSse: string };

/** The script, an ES module importing the entry from `entry`; `report` is its last statement, given `out`. */
export function checkScript(entry: string, fixtures: readonly WebFixture[], report: string): string {
  const given = fixtures.map((f) => ({ name: f.name, framing: f.framing, base64: f.bytes.toString('base64') }));
  return `
import { FrameDecoderStream, FrameEncoderStream } from ${JSON.stringify(entry)};
const bytesOf = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
async function decode(chunks, framing) {
  const invalid = [];
  const oninvalid = (e) => invalid.push({ code: e.code, index: e.index, line: e.line, offset: e.offset });
  const events = [];
  const stream = new FrameDecoderStream({ framing, onInvalid: 'skip', oninvalid, onevent: (e) => events.push(e) });
  const writer = stream.writable.getWriter();
  const messages = [];
  const reading = (async () => { for await (const m of stream.readable) messages.push(m); })();
  for (const c of chunks) await writer.write(c);
  await writer.close();
  await reading;
  return { messages, invalid, events };
}
const out = {};
for (const f of ${JSON.stringify(given)}) {
  const bytes = bytesOf(f.base64);
  out[f.name] = { whole: await decode([bytes], f.framing), bytes: await decode([...bytes].map((b) => new Uint8Array([b])), f.framing) };
}
async function encode(framing) {
  const encoder = new FrameEncoderStream({ framing });
  const w = encoder.writable.getWriter();
  const parts = [];
  const read = (async () => { for await (const c of encoder.readable) parts.push(...c); })();
  for (const m of ${JSON.stringify(ENCODED)}) await w.write(m);
  await w.close();
  await read;
  return btoa(String.fromCharCode(...parts));
}
out.encoded = await encode('ndjson');
out.encodedContentLength = await encode('content-length');
out.encodedSse = await encode('sse');
${report}
`;
}

const messagesOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('message' in e ? [e.message] : []));
const invalidOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('invalid' in e ? [e.invalid] : []));
const eventsOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('event' in e ? [e.event] : []));

/** What `where` reported, held to the fixtures (messages, codes, frames or lines, offsets, other events) and the encoders to frame(), frameContentLength() and frameSse(). */
export function expectChecked(where: string, fixtures: readonly WebFixture[], out: WebCheck): void {
  expect(fixtures.filter((f) => f.framing === 'content-length').length).to.be.greaterThan(0);
  expect(fixtures.filter((f) => f.framing === 'ndjson').length).to.be.greaterThan(0);
  expect(fixtures.filter((f) => f.framing === 'sse').length).to.be.greaterThan(0);
  for (const f of fixtures) {
    for (const how of ['whole', 'bytes'] as const) {
      const got = out[f.name]![how];
      expect(got.messages, `${where} ${f.name} ${how}`).to.deep.equal(messagesOf(f.events));
      expect(got.invalid, `${where} ${f.name} ${how}`).to.deep.equal(invalidOf(f.events));
      expect(got.events, `${where} ${f.name} ${how}`).to.deep.equal(eventsOf(f.events));
    }
  }
  expect(Buffer.from(out.encoded, 'base64').equals(Buffer.from(ENCODED.map((m) => frame(m)).join('')))).to.equal(true);
  const contentLength = Buffer.from(ENCODED.map((m) => frameContentLength(m)).join(''));
  expect(Buffer.from(out.encodedContentLength, 'base64').equals(contentLength), `${where}: Content-Length`).to.equal(true);
  const sse = Buffer.from(ENCODED.map((m) => frameSse(m)).join(''));
  expect(Buffer.from(out.encodedSse, 'base64').equals(sse), `${where}: SSE`).to.equal(true);
}
