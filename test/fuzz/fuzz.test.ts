import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { type FramingName, isFramingName } from '../../lib/framings/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { fuzz, limitOfFile, makeCase, runCase } from './fuzz.js';

describe('the fuzzer (a short seeded run; npm run fuzz runs it long)', function () {
  this.timeout(120_000);

  it('finds no exception but FrameError, no chunk-dependent result and no lost message in 60 cases per framing', async () => {
    expect(await fuzz(60, 20261201)).to.deep.equal([]);
  });

  it('makes cases that mutate, and expects the messages left whole', () => {
    const cases = Array.from({ length: 50 }, (_, seed) => makeCase('ndjson', seed));
    expect(cases.filter((c) => c.expected.length > 0)).to.have.length.greaterThan(20);
    // Some cases hold bytes that are not one of the frames' own (a mutation took place).
    expect(cases.filter((c) => c.bytes.toString('latin1').includes('\u00ff') || c.bytes.includes(0))).to.have.length.greaterThan(0);
  });

  it('fails a case whose decoders disagree', async () => {
    // A reference that cannot be met: a message that is not in the bytes.
    const problem = await runCase({ framing: 'ndjson', seed: 1, bytes: Buffer.from('{"a":1}\n'), expected: [{ b: 2 }] });
    expect(problem).to.match(/lost or moved/);
  });

  const dir = `${ROOT}fixtures/fuzz/`;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.bin'))) {
    it(`replays fixtures/fuzz/${file}`, async () => {
      const framing = file.split('.')[0]!;
      expect(isFramingName(framing)).to.equal(true);
      const bytes = readFileSync(`${dir}${file}`);
      expect(await runCase({ framing: framing as FramingName, seed: 7, bytes, expected: [], maxMessageBytes: limitOfFile(file) })).to.equal(
        undefined,
      );
    });
  }
});
