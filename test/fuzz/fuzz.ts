// The fuzzer: random valid streams in every framing, mutated, decoded whole, byte by byte and at random splits,
// through the pure codec and through the stream in both onInvalid modes. `npm run fuzz` runs it long;
// fuzz.test.ts runs a short seeded part of it in `npm test`.
import { writeFileSync } from 'node:fs';
import { FrameError } from '../../lib/errors.js';
import type { FrameDecoderCore } from '../../lib/framings/codec.js';
import { FRAMINGS, type FramingName } from '../../lib/framings/index.js';
import { byteByByte, randomChunks, rng } from '../helpers/chunkers.js';
import { type DecodeEvent, decodeWithStream, invalidEvent } from '../helpers/decode.js';

/** The largest limit a case runs with: small, so that oversized frames are cheap to make. */
export const FUZZ_MAX_BYTES = 4096;
/**
 * The message limits cases run with, one per seed in turn: from a few bytes, where nearly every frame and long
 * comment line is over the limit and splits fall inside field names and headers, to FUZZ_MAX_BYTES.
 */
export const FUZZ_LIMITS = [16, 64, 300, 1024, FUZZ_MAX_BYTES] as const;
export const FUZZ_MAX_DEPTH = 64;

export interface FuzzCase {
  framing: FramingName;
  seed: number;
  bytes: Buffer;
  /** Messages whose frames were left whole where a reference splitter finds them: each must arrive, in order. */
  expected: unknown[];
  /** The decoders' maxMessageBytes. @defaultValue FUZZ_MAX_BYTES */
  maxMessageBytes?: number;
}

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const int = (random: Random, n: number): number => Math.floor(random() * n);

const WORDS = [
  'ping',
  'tools/call',
  'é',
  '😀',
  'line\nbreak',
  '\u2028',
  'quote"',
  'back\\slash',
  'ünïcödé',
  'data: x',
  ':',
  '\r',
  'Content-Length: 3',
];

function randomMessage(random: Random, i: number): unknown {
  const text = Array.from({ length: 1 + int(random, 4) }, () => pick(random, WORDS)).join(' ');
  switch (int(random, 4)) {
    case 0:
      return { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text } } };
    case 1:
      return { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: text, n: random() * 1e6 } };
    case 2:
      return {
        jsonrpc: '2.0',
        id: `s-${i}`,
        result: { content: [{ type: 'text', text }], list: Array.from({ length: int(random, 5) }, (_, k) => k) },
      };
    default:
      return [
        { jsonrpc: '2.0', id: i, method: 'ping' },
        { jsonrpc: '2.0', method: 'n', params: { text } },
      ];
  }
}

const MUTATIONS = ['flip', 'insert', 'delete', 'invalid-utf8', 'nul', 'lone-cr', 'deep', 'huge-number', 'oversized'] as const;

function nested(depth: number): string {
  return `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

/** One frame's bytes changed by one mutation. */
function mutate(random: Random, frame: Buffer, framing: FramingName, limit: number): Buffer {
  const at = int(random, frame.length);
  switch (pick(random, MUTATIONS)) {
    case 'flip': {
      const out = Buffer.from(frame);
      out[at] = out[at]! ^ (1 << int(random, 8));
      return out;
    }
    case 'insert':
      return Buffer.concat([frame.subarray(0, at), Buffer.from([int(random, 256), int(random, 256)]), frame.subarray(at)]);
    case 'delete':
      return Buffer.concat([frame.subarray(0, at), frame.subarray(at + 1 + int(random, 4))]);
    case 'invalid-utf8':
      return Buffer.concat([frame.subarray(0, at), Buffer.from([pick(random, [0xff, 0xc3, 0xe2, 0x80])]), frame.subarray(at)]);
    case 'nul':
      return Buffer.concat([frame.subarray(0, at), Buffer.from([0]), frame.subarray(at)]);
    case 'lone-cr':
      return Buffer.concat([frame.subarray(0, at), Buffer.from('\r'), frame.subarray(at)]);
    case 'deep':
      return Buffer.from(FRAMINGS[framing].createEncoder().encode(JSON.parse(nested(FUZZ_MAX_DEPTH + 1 + int(random, 40)))));
    case 'huge-number':
      return Buffer.from(FRAMINGS[framing].createEncoder().encode({ jsonrpc: '2.0', id: 1, result: JSON.parse(`1${'0'.repeat(400)}`) }));
    case 'oversized':
      return Buffer.from(
        FRAMINGS[framing].createEncoder().encode({ jsonrpc: '2.0', method: 'big', params: { x: 'y'.repeat(limit + int(random, 64)) } }),
      );
  }
}

/** A random valid stream of `framing`, some frames mutated, and the messages a reference splitter still finds. */
export function makeCase(framing: FramingName, seed: number): FuzzCase {
  const random = rng(seed);
  const limit = FUZZ_LIMITS[seed % FUZZ_LIMITS.length]!;
  const encoder = FRAMINGS[framing].createEncoder();
  const messages = Array.from({ length: 1 + int(random, 12) }, (_, i) => randomMessage(random, i));
  const frames = messages.map((m) => Buffer.from(encoder.encode(m)));
  const mutated = frames.map((f) => (random() < 0.3 ? mutate(random, f, framing, limit) : f));
  if (random() < 0.2) {
    // Truncation: the stream ends inside its last frame.
    const last = mutated.length - 1;
    mutated[last] = mutated[last]!.subarray(0, int(random, mutated[last]!.length));
  }
  const bytes = Buffer.concat(mutated);
  // A message over the limit is reported, not delivered, wherever it stands.
  const fits = (m: unknown): boolean => Buffer.byteLength(JSON.stringify(m)) <= limit;
  return { framing, seed, bytes, expected: referenceMessages(framing, messages, frames, mutated).filter(fits), maxMessageBytes: limit };
}

/**
 * The messages that must arrive. For ndjson, a reference splitter: a line of the final bytes equal to a frame
 * left whole. For the framings with lengths and events, where one bad frame may take the next with it, the
 * frames before the first change.
 */
function referenceMessages(framing: FramingName, messages: unknown[], frames: Buffer[], mutated: Buffer[]): unknown[] {
  if (framing !== 'ndjson') {
    const firstChange = mutated.findIndex((m, i) => !m.equals(frames[i]!));
    return messages.slice(0, firstChange === -1 ? messages.length : firstChange);
  }
  const lines = new Set(Buffer.concat(mutated).toString('latin1').split('\n'));
  return messages.filter((_, i) => mutated[i]!.equals(frames[i]!) && lines.has(frames[i]!.toString('latin1').slice(0, -1)));
}

/** The pure decoder's events for these chunks, checking the memory it holds after each chunk. */
function decodeChecked(core: FrameDecoderCore, chunks: readonly Buffer[], limit: number): DecodeEvent[] {
  const events: DecodeEvent[] = [];
  const sink = {
    message: (message: unknown) => void events.push({ message }),
    invalid: (err: FrameError) => {
      if (!(err instanceof FrameError)) throw new Error(`a sink got ${String(err)}, not a FrameError`);
      events.push(invalidEvent(err));
      return true;
    },
    event: (event: { event: string; data: string }) => void events.push({ event }),
  };
  for (const chunk of chunks) {
    core.write(chunk, sink);
    if (core.bufferedBytes > 2 * limit + 1024) throw new Error(`the decoder holds ${core.bufferedBytes} bytes, past its bound`);
  }
  core.end(sink);
  return events;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Whether `expected` appears in `delivered` in order. */
function inOrder(expected: unknown[], delivered: unknown[]): boolean {
  let i = 0;
  for (const d of delivered) if (i < expected.length && same(d, expected[i])) i++;
  return i === expected.length;
}

/** Runs one case; resolves with what went wrong, or undefined. */
export async function runCase(c: FuzzCase): Promise<string | undefined> {
  const maxMessageBytes = c.maxMessageBytes ?? FUZZ_MAX_BYTES;
  const limits = { maxMessageBytes, maxDepth: FUZZ_MAX_DEPTH };
  const chunkings: Array<[string, Buffer[]]> = [
    ['whole', [c.bytes]],
    ['byte by byte', byteByByte(c.bytes)],
    ['random', randomChunks(c.bytes, rng(c.seed ^ 0x5eed), 1 + (c.seed % 97))],
  ];
  try {
    const reference = decodeChecked(FRAMINGS[c.framing].createDecoder(limits), [c.bytes], maxMessageBytes);
    for (const [how, chunks] of chunkings.slice(1)) {
      const events = decodeChecked(FRAMINGS[c.framing].createDecoder(limits), chunks, maxMessageBytes);
      if (!same(events, reference)) return `the pure decoder ${how} disagrees with whole: ${JSON.stringify(events).slice(0, 300)}`;
    }
    const messages = reference.filter((e) => 'message' in e).map((e) => (e as { message: unknown }).message);
    if (!inOrder(c.expected, messages)) return 'a message from a frame left whole was lost or moved';
    for (const [how, chunks] of chunkings) {
      const skip = await decodeWithStream(chunks, {
        framing: c.framing,
        onInvalid: 'skip',
        maxMessageBytes,
        maxDepth: FUZZ_MAX_DEPTH,
      });
      if (skip.error !== undefined || !same(skip.events, reference)) return `FrameDecoder (skip) ${how} disagrees: ${String(skip.error)}`;
      const fail = await decodeWithStream(chunks, { framing: c.framing, maxMessageBytes, maxDepth: FUZZ_MAX_DEPTH });
      const firstBad = reference.findIndex((e) => 'invalid' in e);
      const before = firstBad === -1 ? reference : reference.slice(0, firstBad);
      if (!same(fail.events, before)) return `FrameDecoder (error) ${how} delivered other messages before failing`;
      if (firstBad !== -1) {
        if (!(fail.error instanceof FrameError)) return `FrameDecoder (error) ${how} failed with ${String(fail.error)}, not a FrameError`;
        if (!same(invalidEvent(fail.error), reference[firstBad])) return `FrameDecoder (error) ${how} failed with another error than skip reported`;
      } else if (fail.error !== undefined) {
        return `FrameDecoder (error) ${how} failed on a clean stream: ${String(fail.error)}`;
      }
    }
  } catch (err) {
    return `threw ${(err as Error).stack ?? String(err)}`;
  }
  return undefined;
}

/** Runs `count` cases per framing from `firstSeed`; writes each failing input to `failDir`. Returns the failures. */
/** The limit a fuzz failure file names (`<framing>.<seed>.max<bytes>.bin`), or FUZZ_MAX_BYTES when none. */
export function limitOfFile(name: string): number {
  const match = /\.max(\d+)\./.exec(name);
  return match === null ? FUZZ_MAX_BYTES : Number(match[1]);
}

export async function fuzz(count: number, firstSeed: number, failDir?: string, log: (line: string) => void = () => undefined): Promise<string[]> {
  const failures: string[] = [];
  for (const framing of Object.keys(FRAMINGS) as FramingName[]) {
    for (let seed = firstSeed; seed < firstSeed + count; seed++) {
      const c = makeCase(framing, seed);
      const problem = await runCase(c);
      if (problem === undefined) continue;
      const line = `${framing} seed ${seed} (maxMessageBytes ${c.maxMessageBytes}): ${problem}`;
      failures.push(line);
      log(line);
      if (failDir !== undefined) writeFileSync(`${failDir}/${framing}.${seed}.max${c.maxMessageBytes ?? FUZZ_MAX_BYTES}.bin`, c.bytes);
    }
    log(`${framing}: ${count} cases from seed ${firstSeed}`);
  }
  return failures;
}
