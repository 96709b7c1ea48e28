// npm run fuzz [-- --count N] [--seed S] [--replay file.bin --framing name]
// Runs the fuzzer long (default 2,000 cases per framing from a random seed, printed; each case with one of the
// limits in FUZZ_LIMITS), writing each failing input to fuzz-failures/<framing>.<seed>.max<limit>.bin; --replay runs one such file again. Copy a fixed failure into
// fixtures/fuzz/ and fuzz.test.ts replays it in every `npm test`.
import { mkdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type FramingName, isFramingName } from '../../lib/framings/index.js';
import { fuzz, limitOfFile, runCase } from './fuzz.js';

const { values } = parseArgs({
  options: { count: { type: 'string' }, seed: { type: 'string' }, replay: { type: 'string' }, framing: { type: 'string' } },
});

if (values.replay !== undefined) {
  const framing = values.framing ?? values.replay.split('/').pop()!.split('.')[0]!;
  if (!isFramingName(framing)) throw new Error(`--framing: unknown framing ${framing}`);
  const bytes = readFileSync(values.replay);
  const problem = await runCase({ framing: framing as FramingName, seed: 1, bytes, expected: [], maxMessageBytes: limitOfFile(values.replay) });
  process.stdout.write(problem === undefined ? 'ok\n' : `${problem}\n`);
  process.exitCode = problem === undefined ? 0 : 1;
} else {
  const count = Number(values.count ?? 2000);
  const seed = Number(values.seed ?? Math.floor(Math.random() * 1e9));
  process.stdout.write(`fuzzing ${count} cases per framing from seed ${seed}\n`);
  mkdirSync('fuzz-failures', { recursive: true });
  const started = performance.now();
  const failures = await fuzz(count, seed, 'fuzz-failures', (line) => process.stdout.write(`${line}\n`));
  const rss = Math.round(process.memoryUsage().rss / 1024 / 1024);
  process.stdout.write(`${failures.length} failures in ${Math.round(performance.now() - started)} ms; rss ${rss} MiB\n`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}
