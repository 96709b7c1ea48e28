import { expect } from 'chai';
import { deeperThan } from '../../lib/framings/json.js';

/** A value `levels` deep: arrays and objects in turn, each with a few shallow siblings, the deep one last. */
function nested(levels: number): unknown {
  let value: unknown = levels % 2 === 0 ? {} : [];
  for (let level = levels - 1; level >= 1; level--) {
    value = level % 2 === 0 ? { a: 1, b: 'x', c: null, z: value } : [1, 'x', null, {}, value];
  }
  return value;
}

describe('deeperThan', () => {
  for (const max of [1, 2, 10, 999, 1000, 1001, 2500]) {
    it(`tells ${max} levels from ${max + 1}, with maxDepth ${max}`, () => {
      expect(deeperThan(nested(max), max)).to.equal(false);
      expect(deeperThan(nested(max + 1), max)).to.equal(true);
    });
  }

  it('counts {} and [] as one level, and scalars as none', () => {
    expect(deeperThan({}, 1)).to.equal(false);
    expect(deeperThan([[]], 1)).to.equal(true);
    for (const scalar of [null, 1, 'deep', true]) expect(deeperThan(scalar, 1)).to.equal(false);
  });

  it('walks every branch of a wide value: the one deep branch is found wherever it is', () => {
    const wide: object[] = Array.from({ length: 2000 }, (_, i) => ({ id: i, tags: ['a', 'b'] }));
    expect(deeperThan({ items: wide }, 4)).to.equal(false);
    wide[1234] = { id: 1234, deep: [[[[1]]]] };
    expect(deeperThan({ items: wide }, 4)).to.equal(true);
  });

  it('follows an own __proto__ key, as JSON.parse makes it, and nothing inherited', () => {
    expect(deeperThan(JSON.parse('{"__proto__":[[[1]]]}'), 3)).to.equal(true);
    Object.defineProperty(Object.prototype, 'inherited', { value: [[[[1]]]], enumerable: true, configurable: true, writable: true });
    let result: boolean;
    try {
      result = deeperThan({ a: {} }, 2);
    } finally {
      delete (Object.prototype as Record<string, unknown>).inherited;
    }
    expect(result).to.equal(false);
  });

  it('takes nesting far past the recursion without overflowing the stack', () => {
    expect(deeperThan(nested(50_000), 100_000)).to.equal(false);
    expect(deeperThan(nested(50_000), 49_999)).to.equal(true);
  });
});
