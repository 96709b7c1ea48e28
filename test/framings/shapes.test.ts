import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { ROOT } from '../helpers/fixtures.js';

/**
 * V8 drops optimized code that depends on an object shape once no object of that shape has lived through a few
 * full collections. A child optimizes each function named below on purpose, lets every instance it made die,
 * collects four times, and says whether the function still has its optimized code. A class of the child's own is
 * the control: its code must be seen to go, or the check could not tell.
 */
const SCRIPT = `
  import { FrameConverter, FrameDecoder, frameContentLength, frameSse } from '${ROOT}dist/lib/index.js';
  import { NdjsonDecoder } from '${ROOT}dist/lib/framings/ndjson.js';
  import { ContentLengthDecoder } from '${ROOT}dist/lib/framings/content-length.js';
  import { SseDecoder } from '${ROOT}dist/lib/framings/sse.js';
  const OPTIMIZED = 16;
  const msg = { jsonrpc: '2.0', id: 1, result: { text: 'größe café データ 😀 '.repeat(4) } };
  const framings = {
    ndjson: [NdjsonDecoder, JSON.stringify(msg) + '\\n'],
    'content-length': [ContentLengthDecoder, frameContentLength(msg)],
    sse: [SseDecoder, frameSse(msg)],
  };
  async function decode(framing) {
    const decoder = new FrameDecoder({ framing });
    let n = 0;
    decoder.on('data', () => n++);
    decoder.end(Buffer.from(framings[framing][1].repeat(50)));
    await new Promise((resolve) => decoder.on('end', resolve));
    if (n !== 50) throw new Error(framing + ': ' + n + ' messages');
  }
  async function keepsCode(fn, use) {
    %PrepareFunctionForOptimization(fn);
    for (let i = 0; i < 3; i++) await use();
    %OptimizeFunctionOnNextCall(fn);
    await use();
    if ((%GetOptimizationStatus(fn) & OPTIMIZED) === 0) throw new Error(fn.name + ' was not optimized');
    // A stream that has ended is still held until its close event, a tick later.
    await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 4; i++) gc();
    return (%GetOptimizationStatus(fn) & OPTIMIZED) !== 0;
  }
  class Counter {
    #n = 0;
    bump() { return ++this.#n; }
  }
  const kept = { control: await keepsCode(Counter.prototype.bump, () => new Counter().bump()) };
  for (const [framing, [core]] of Object.entries(framings)) {
    kept[framing] = await keepsCode(core.prototype.write, () => decode(framing));
  }
  kept.FrameDecoder = await keepsCode(Object.getPrototypeOf(FrameDecoder.prototype)._transform, () => decode('sse'));
  kept.FrameConverter = await keepsCode(FrameConverter.prototype.afterDecode, async () => {
    const converter = new FrameConverter({ framing: 'sse', to: 'ndjson' });
    let text = '';
    converter.on('data', (chunk) => (text += chunk));
    converter.end(Buffer.from(framings.sse[1].repeat(50)));
    await new Promise((resolve) => converter.on('end', resolve));
    if (text !== framings.ndjson[1].repeat(50)) throw new Error('FrameConverter: ' + text.length + ' characters');
  });
  console.log(JSON.stringify(kept));`;

describe('decoders and the engine’s shapes', () => {
  it('keep their optimized code while no decoder is alive, as a host whose decoders come and go needs', function () {
    const run = spawnSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--input-type=module', '-e', SCRIPT], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status, run.stderr).to.equal(0);
    const kept = JSON.parse(run.stdout) as Record<string, boolean>;
    // An engine that keeps shapes longer than this one (Node 20's V8) leaves nothing to see here.
    if (kept.control) this.skip();
    expect(kept).to.deep.equal({ control: false, ndjson: true, 'content-length': true, sse: true, FrameDecoder: true, FrameConverter: true });
  });
});
