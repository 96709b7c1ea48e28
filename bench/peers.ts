/** The decoders and encoders measured side by side, each behind the same small interface. */
import { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { createParser } from 'eventsource-parser';
import { EventSourceParserStream as WebEventSourceParserStream } from 'eventsource-parser/stream';
import * as ndjson from 'ndjson';
import { transcode } from 'node:buffer';
import { PassThrough, Transform, type TransformCallback } from 'node:stream';
import split2 from 'split2';
import * as rpc from 'vscode-jsonrpc/node';
import { SseDecoder } from '../lib/framings/sse.js';
import { FrameDecoder, FrameEncoder } from '../lib/index.js';
import { WebContentLengthDecoder } from '../lib/web/content-length.js';
import { WebNdjsonDecoder } from '../lib/web/ndjson.js';
import { WebSseDecoder } from '../lib/web/sse.js';
import { FrameDecoderStream } from '../lib/web/index.js';

export interface DecoderPeer {
  name: string;
  /** Super-linear on long lines: measured once, not repeated, on large inputs. */
  slowOnLongLines?: boolean;
  /** Decodes the chunks; resolves with the number of messages. `whole` is the same bytes in one buffer. */
  run(chunks: readonly Buffer[], whole: Buffer): Promise<number> | number;
}

function throughStream(make: () => Transform, chunks: readonly Buffer[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = make();
    let n = 0;
    stream.on('data', () => n++);
    stream.on('end', () => resolve(n));
    stream.on('error', reject);
    for (const c of chunks) stream.write(c);
    stream.end();
  });
}

/** The floor: one pass over the whole input, indexOf, toString and JSON.parse per line, nothing else. */
export function floorDecode(whole: Buffer): number {
  let n = 0;
  let start = 0;
  for (;;) {
    const nl = whole.indexOf(10, start);
    if (nl === -1) break;
    JSON.parse(whole.toString('utf8', start, nl));
    n++;
    start = nl + 1;
  }
  return n;
}

/**
 * The copy floors: the least a streaming decoder must do with lines that span chunks. The chunks are copied into
 * one buffer of the known total size (which a decoder cannot know), then each line is decoded and parsed as the
 * floor does. With `fresh`, the buffer is a resizable ArrayBuffer whose pages are given back before the parse,
 * as FrameDecoder does past 16 MiB: fresh pages every time, against memory the allocator may hand back from the
 * run before. Giving them back first means decoding the whole buffer in one call (the floor decodes line by
 * line from the buffer, which must then live through every parse); on the one-line cases it is run on, the
 * two are the same work.
 */
export function copyFloor(chunks: readonly Buffer[], fresh = false): number {
  let total = 0;
  for (const c of chunks) total += c.length;
  const storage = fresh ? new ArrayBuffer(total, { maxByteLength: total }) : undefined;
  const buf = storage === undefined ? Buffer.allocUnsafeSlow(total) : Buffer.from(storage);
  let at = 0;
  for (const c of chunks) {
    buf.set(c, at);
    at += c.length;
  }
  if (storage === undefined) return floorDecode(buf);
  const text = buf.toString('utf8');
  storage.resize(0);
  let n = 0;
  for (let start = 0, nl = text.indexOf('\n'); nl !== -1; start = nl + 1, nl = text.indexOf('\n', start)) {
    JSON.parse(text.slice(start, nl));
    n++;
  }
  return n;
}

export const decoders: DecoderPeer[] = [
  { name: 'floor', run: (_chunks, whole) => floorDecode(whole) },
  { name: 'FrameDecoder', run: (chunks) => throughStream(() => new FrameDecoder(), chunks) },
  { name: 'split2(JSON.parse)', slowOnLongLines: true, run: (chunks) => throughStream(() => split2(JSON.parse), chunks) },
  { name: 'ndjson.parse()', slowOnLongLines: true, run: (chunks) => throughStream(() => ndjson.parse(), chunks) },
  {
    name: 'MCP SDK ReadBuffer',
    slowOnLongLines: true,
    run: (chunks) => {
      // Its 10 MB default cap is raised so that it can finish the large cases.
      const buffer = new ReadBuffer({ maxBufferSize: 1 << 30 } as ConstructorParameters<typeof ReadBuffer>[0]);
      let n = 0;
      for (const c of chunks) {
        buffer.append(c);
        while (buffer.readMessage() !== null) n++;
      }
      return n;
    },
  },
];

export interface EncoderPeer {
  name: string;
  /** Encodes every message; resolves with the number of bytes produced. */
  run(messages: readonly object[]): Promise<number> | number;
}

function encodeThrough(stream: Transform, messages: readonly object[]): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    stream.on('data', (c: Buffer | string) => (bytes += typeof c === 'string' ? Buffer.byteLength(c) : c.length));
    stream.on('end', () => resolve(bytes));
    stream.on('error', reject);
    for (const m of messages) stream.write(m);
    stream.end();
  });
}

export const encoders: EncoderPeer[] = [
  {
    name: 'floor',
    run: (messages) => {
      let bytes = 0;
      for (const m of messages) bytes += Buffer.from(`${JSON.stringify(m)}\n`).length;
      return bytes;
    },
  },
  { name: 'FrameEncoder', run: (messages) => encodeThrough(new FrameEncoder(), messages) },
  { name: 'ndjson.stringify()', run: (messages) => encodeThrough(ndjson.stringify(), messages) },
];

/** The Content-Length floor: one pass over the whole input, reading each header and parsing each body. */
export function contentLengthFloor(whole: Buffer): number {
  let n = 0;
  let at = 0;
  while (at < whole.length) {
    const end = whole.indexOf('\r\n\r\n', at);
    if (end === -1) break;
    const length = Number(/content-length:\s*(\d+)/i.exec(whole.toString('latin1', at, end))![1]);
    JSON.parse(whole.toString('utf8', end + 4, end + 4 + length));
    n++;
    at = end + 4 + length;
  }
  return n;
}

/** The SSE floor: one pass, each event's single data line parsed. */
export function sseFloor(whole: Buffer): number {
  let n = 0;
  let at = 0;
  for (;;) {
    const data = whole.indexOf('data: ', at);
    if (data === -1) break;
    const eol = whole.indexOf(10, data);
    JSON.parse(whole.toString('utf8', data + 6, eol));
    n++;
    at = eol + 2;
  }
  return n;
}

export const contentLengthDecoders: DecoderPeer[] = [
  { name: 'floor', run: (_chunks, whole) => contentLengthFloor(whole) },
  { name: 'FrameDecoder', run: (chunks) => throughStream(() => new FrameDecoder({ framing: 'content-length' }), chunks) },
  {
    name: 'vscode-jsonrpc StreamMessageReader',
    run: (chunks) =>
      new Promise<number>((resolve) => {
        const pipe = new PassThrough({ highWaterMark: 1 << 30 });
        const reader = new rpc.StreamMessageReader(pipe);
        let n = 0;
        reader.listen(() => n++);
        pipe.on('end', () =>
          // The reader hands messages on from its own data handler; let it finish the last one.
          setImmediate(() => {
            reader.dispose();
            resolve(n);
          }),
        );
        for (const c of chunks) pipe.write(c);
        pipe.end();
      }),
  },
];

/** The names of the SSE peers that bench/run.ts compares by name. */
export const SSE_PEER = {
  esp: 'eventsource-parser + JSON.parse',
  espStream: 'eventsource-parser + JSON.parse in an object-mode Transform',
  codec: 'SseDecoder, the codec without a stream',
  bare: 'bare loop: TextDecoder + JSON.parse per data line',
  bareTranscode: 'bare loop: transcode + JSON.parse per data line',
} as const;

/** Parses each `data: ` line of `text`, which holds whole lines; returns how many. */
function parseDataLines(text: string): number {
  let n = 0;
  for (let data = text.indexOf('data: '), eol = 0; data !== -1; data = text.indexOf('data: ', eol + 1)) {
    eol = text.indexOf('\n', data);
    JSON.parse(text.slice(data + 6, eol));
    n++;
  }
  return n;
}

export const sseDecoders: DecoderPeer[] = [
  { name: 'floor', run: (_chunks, whole) => sseFloor(whole) },
  { name: 'FrameDecoder', run: (chunks) => throughStream(() => new FrameDecoder({ framing: 'sse' }), chunks) },
  {
    name: SSE_PEER.esp,
    run: (chunks) => {
      let n = 0;
      const parser = createParser({
        onEvent: (e) => {
          JSON.parse(e.data);
          n++;
        },
      });
      const text = new TextDecoder();
      for (const c of chunks) parser.feed(text.decode(c, { stream: true }));
      parser.feed(text.decode());
      return n;
    },
  },
];

/**
 * eventsource-parser as a host would pipe it: in an object-mode Transform that pushes each event's parsed data,
 * with FrameDecoder's readable high-water mark. What it adds to the plain function is the stream's own cost.
 */
class EventSourceParserStream extends Transform {
  readonly #text = new TextDecoder();
  readonly #parser = createParser({ onEvent: (e) => this.push(JSON.parse(e.data)) });

  constructor() {
    super({ readableObjectMode: true, readableHighWaterMark: 16 });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#parser.feed(this.#text.decode(chunk, { stream: true }));
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.#parser.feed(this.#text.decode());
    callback();
  }
}

/**
 * The codec's sink, one for every run. A sink made per run, with a closure that counts, gave the codec's call
 * `sink.message()` a new target each time: V8 built that target into the decoder's optimized code, threw the code
 * away when the closure died, and FrameDecoder, which runs the same code, paid for building it again in every
 * timing (bench/analysis.md, "Issue 29's ninth pass").
 */
const counting = {
  n: 0,
  textUnused: true,
  message(): void {
    counting.n++;
  },
  invalid: (): boolean => true,
};

/**
 * Four more on small SSE messages, to show where the time goes. eventsource-parser in a stream (above), to
 * set beside FrameDecoder. The codec alone: SseDecoder fed the chunks with a sink that counts, no stream around
 * it, as eventsource-parser is measured. And the bound: a bare loop that does only what any decoder of these
 * bytes must, a streaming TextDecoder over each chunk and a JSON.parse of each `data: ` line, with none of the
 * format's other rules (no CR, no other fields, no limits, no positions). Its carry is joined to the next chunk
 * as text, which is quadratic on a line longer than a chunk: small messages only. Last, the same loop on text
 * decoded the codec's way.
 */
export const sseSmallPeers: DecoderPeer[] = [
  ...sseDecoders,
  {
    name: SSE_PEER.espStream,
    run: (chunks) => throughStream(() => new EventSourceParserStream(), chunks),
  },
  {
    name: SSE_PEER.codec,
    run: (chunks) => {
      counting.n = 0;
      const decoder = new SseDecoder({ maxMessageBytes: 1 << 30 });
      for (const c of chunks) decoder.write(c, counting);
      decoder.end(counting);
      return counting.n;
    },
  },
  {
    name: SSE_PEER.bare,
    run: (chunks) => {
      let n = 0;
      let carry = '';
      const text = new TextDecoder();
      for (const c of chunks) {
        const s = carry + text.decode(c, { stream: true });
        const end = s.lastIndexOf('\n') + 1;
        n += parseDataLines(s.slice(0, end));
        carry = s.slice(end);
      }
      return n;
    },
  },
  {
    // The same loop on text decoded as the codec decodes it: each chunk's complete lines transcoded to UTF-16 at
    // once, and the line that spans two chunks on its own.
    name: SSE_PEER.bareTranscode,
    run: (chunks) => {
      let n = 0;
      let carry = Buffer.alloc(0);
      const decode = (bytes: Buffer): string => transcode(bytes, 'utf8', 'utf16le').toString('utf16le');
      for (const c of chunks) {
        const first = c.indexOf(10) + 1;
        const last = c.lastIndexOf(10) + 1;
        if (first === 0) {
          carry = Buffer.concat([carry, c]);
          continue;
        }
        n += parseDataLines(decode(Buffer.concat([carry, c.subarray(0, first)]))) + parseDataLines(decode(c.subarray(first, last)));
        carry = Buffer.from(c.subarray(last));
      }
      return n;
    },
  },
];

/** Decoding with and without JSON-RPC validation, on the same ndjson input. */
export const validationPeers: DecoderPeer[] = [
  { name: 'floor', run: (_chunks, whole) => floorDecode(whole) },
  { name: 'FrameDecoder', run: (chunks) => throughStream(() => new FrameDecoder(), chunks) },
  { name: 'FrameDecoder, validate: true', run: (chunks) => throughStream(() => new FrameDecoder({ validate: true }), chunks) },
];

/** Chunks through a Web Streams readable and writable pair, written as a host's pipe writes them (none awaited), messages counted. */
async function throughWebStream(
  stream: { readable: ReadableStream<unknown>; writable: WritableStream<Uint8Array> },
  chunks: readonly Buffer[],
): Promise<number> {
  let n = 0;
  const reading = (async () => {
    for await (const _ of stream.readable) n++;
  })();
  const writer = stream.writable.getWriter();
  for (const c of chunks) void writer.write(c);
  await writer.close();
  await reading;
  return n;
}

/**
 * mcp-frame/web beside the Node decoder, on the same NDJSON input: FrameDecoderStream, and its portable codec
 * (Uint8Array and TextDecoder, a line at a time) fed the chunks with no stream around it, so that what the Web
 * Streams machinery costs shows apart from what the portable codec costs.
 */
export const webDecoders: DecoderPeer[] = [
  { name: 'floor', run: (_chunks, whole) => floorDecode(whole) },
  { name: 'FrameDecoder', run: (chunks) => throughStream(() => new FrameDecoder(), chunks) },
  { name: 'FrameDecoderStream (mcp-frame/web)', run: (chunks) => throughWebStream(new FrameDecoderStream(), chunks) },
  {
    name: 'WebNdjsonDecoder, the portable codec without a stream',
    run: (chunks) => bareCodec(new WebNdjsonDecoder({ maxMessageBytes: 1 << 30 }), chunks),
  },
];

/** A portable codec of mcp-frame/web fed the chunks with no stream around it (see webDecoders). */
function bareCodec(
  decoder: { write(c: Uint8Array, sink: typeof counting): boolean; end(sink: typeof counting): void },
  chunks: readonly Buffer[],
): number {
  counting.n = 0;
  for (const c of chunks) decoder.write(c, counting);
  decoder.end(counting);
  return counting.n;
}

/** The names of the Web Streams SSE peers that bench/run.ts compares by name. */
export const WEB_SSE_PEER = {
  stream: 'FrameDecoderStream sse (mcp-frame/web)',
  codec: 'WebSseDecoder, the portable codec without a stream',
  esp: "eventsource-parser's EventSourceParserStream + JSON.parse",
} as const;

/**
 * mcp-frame/web's SSE beside the Node decoder and eventsource-parser's own Web Streams class, on the same SSE input:
 * EventSourceParserStream behind a TextDecoderStream (it takes text), each event's data parsed as it is read, as a
 * host would; the chunks written as to the other Web Streams decoder.
 */
export const webSseDecoders: DecoderPeer[] = [
  ...sseDecoders.slice(0, 2),
  { name: WEB_SSE_PEER.stream, run: (chunks) => throughWebStream(new FrameDecoderStream({ framing: 'sse' }), chunks) },
  { name: WEB_SSE_PEER.codec, run: (chunks) => bareCodec(new WebSseDecoder({ maxMessageBytes: 1 << 30 }), chunks) },
  {
    name: WEB_SSE_PEER.esp,
    run: (chunks) => {
      const text = new TextDecoderStream();
      const parsed = text.readable.pipeThrough(new WebEventSourceParserStream());
      const messages = parsed.pipeThrough(new TransformStream({ transform: (e, controller) => controller.enqueue(JSON.parse(e.data)) }));
      return throughWebStream({ readable: messages, writable: text.writable }, chunks);
    },
  },
];

/** mcp-frame/web's Content-Length beside the Node decoder, on the same input. */
export const webContentLengthDecoders: DecoderPeer[] = [
  ...contentLengthDecoders.slice(0, 2),
  {
    name: 'FrameDecoderStream content-length (mcp-frame/web)',
    run: (chunks) => throughWebStream(new FrameDecoderStream({ framing: 'content-length' }), chunks),
  },
  {
    name: 'WebContentLengthDecoder, the portable codec without a stream',
    run: (chunks) => bareCodec(new WebContentLengthDecoder({ maxMessageBytes: 1 << 30 }), chunks),
  },
];
