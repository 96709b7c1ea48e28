import { expect } from 'chai';
import fc from 'fast-check';
import { jsonErrorPosition } from '../lib/json-position.js';

describe('jsonErrorPosition', () => {
  it('finds nothing wrong in any JSON text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, pretty) => {
        expect(jsonErrorPosition(JSON.stringify(v, null, pretty ? 2 : undefined))).to.equal(undefined);
      }),
    );
  });

  const cases: Array<[string, number, number]> = [
    ['', 1, 1],
    ['{', 1, 2],
    ['[{"jsonrpc": "2.0",\n  "id": }]', 2, 9],
    ['{"a": 1,}', 1, 9],
    ['[1, 2', 1, 6],
    ['{"a" 1}', 1, 6],
    ['{\n  "command": "node",\n  "args": [\'x\']\n}', 3, 12],
    ['"tab\there"', 1, 5],
    ['"bad \\x escape"', 1, 6],
    ['01', 1, 2],
    ['1.', 1, 3],
    ['tru', 1, 4],
    ['{} {}', 1, 4],
    ['{"a":"\u00e9"', 1, 9],
  ];
  for (const [text, line, column] of cases) {
    it(`places the error in ${JSON.stringify(text)} at line ${line}, column ${column}`, () => {
      expect(() => JSON.parse(text)).to.throw(SyntaxError);
      const at = jsonErrorPosition(text);
      expect(at && [at.line, at.column]).to.deep.equal([line, column]);
    });
  }
});
