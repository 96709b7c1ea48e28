// SSE decoding, alone, for profiling (node --cpu-prof dist/bench/sse-profile.js [small|big]): FrameDecoder
// and eventsource-parser on the inputs of npm run bench's SSE cases, interleaved, medians printed. A third
// argument names the one peer to run (with the floor), so that a profile shows that peer alone.
import { frameSse } from '../lib/framings/sse.js';
import { chunk, imageResult, smallMessages } from './data.js';
import { sseDecoders } from './peers.js';

const which = process.argv[2] ?? 'small';
const messages = which === 'small' ? smallMessages(90_000) : [imageResult(32 * 1024 * 1024)];
const whole = Buffer.from(messages.map((m) => frameSse(m)).join(''));
const chunks = chunk(whole, which === 'small' ? 64 * 1024 : 16 * 1024);
const times = new Map<string, number[]>();
for (let run = 0; run < 7; run++) {
  for (const peer of sseDecoders.filter((p) => process.argv[3] === undefined || p.name === 'floor' || p.name.startsWith(process.argv[3]!))) {
    const start = performance.now();
    const n = await peer.run(chunks, whole);
    if (n !== messages.length) throw new Error(`${peer.name} decoded ${n} messages`);
    times.set(peer.name, [...(times.get(peer.name) ?? []), performance.now() - start]);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const floor = median(times.get('floor')!);
for (const [name, xs] of times) process.stdout.write(`${name}: ${median(xs).toFixed(0)} ms, ${(median(xs) / floor).toFixed(2)}x the floor\n`);
