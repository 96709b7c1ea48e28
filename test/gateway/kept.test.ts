import { expect } from 'chai';
import { KeptFor } from '../../lib/gateway/kept.js';

describe('gateway/kept: values kept for a while, at most so many', () => {
  it('gives a value back while its time lasts, and nothing for an id never kept or not a string', () => {
    const kept = new KeptFor<number>(10);
    kept.set('a', 1, 60_000);
    expect(kept.get('a')).to.equal(1);
    expect(kept.get('b')).to.equal(undefined);
    expect(kept.get(1)).to.equal(undefined);
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + 60_001;
      expect(kept.get('a'), 'past its time').to.equal(undefined);
    } finally {
      Date.now = realNow;
    }
  });

  it('lets the oldest go past the most it keeps, and what is past its time when it keeps more', () => {
    const kept = new KeptFor<string>(3);
    for (const id of ['a', 'b', 'c', 'd']) kept.set(id, id.toUpperCase(), 60_000);
    expect(['a', 'b', 'c', 'd'].map((id) => kept.get(id))).to.deep.equal([undefined, 'B', 'C', 'D']);
    // Keeping one again moves it to the newest: the oldest now is c.
    kept.set('b', 'B2', 60_000);
    kept.set('e', 'E', 60_000);
    expect(['b', 'c', 'd', 'e'].map((id) => kept.get(id))).to.deep.equal(['B2', undefined, 'D', 'E']);
    const short = new KeptFor<string>(100);
    short.set('gone', 'x', -1);
    short.set('kept', 'y', 60_000);
    expect([short.get('gone'), short.get('kept')]).to.deep.equal([undefined, 'y']);
  });
});
