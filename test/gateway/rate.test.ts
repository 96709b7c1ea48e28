// Rate limits' arithmetic: the notation, the sliding log, and a policy rule's rate.
import { expect } from 'chai';
import { Policy, PolicyError } from '../../lib/gateway/policy.js';
import { LocalRates, parseRate } from '../../lib/gateway/rate.js';

describe('rate limits', () => {
  it('reads <n>/<s|m|h>, and refuses anything else naming where', () => {
    expect(parseRate('10/m', 'x')).to.deep.equal({ count: 10, periodMs: 60_000, text: '10/m' });
    expect(parseRate(' 3 / s ', 'x')).to.deep.equal({ count: 3, periodMs: 1000, text: '3/s' });
    expect(parseRate('1/h', 'x').periodMs).to.equal(3_600_000);
    for (const bad of ['0/s', '10', '10/d', '-1/s', 'ten/m', 10, '10001/h'])
      expect(() => parseRate(bad, '--rate-limit'), String(bad)).to.throw(RangeError, /^--rate-limit: a rate is <n>\/<s\|m\|h>/);
  });

  it('takes n at once, never more than n in any period wherever it starts, and says when the oldest call leaves it', () => {
    const rates = new LocalRates();
    const rate = parseRate('4/s', 'x');
    const t0 = 1_000_000;
    for (let i = 0; i < 4; i++) expect(rates.take('k', rate, t0 + i)).to.equal(0);
    expect(rates.take('k', rate, t0 + 10)).to.equal(990);
    expect(rates.take('k', rate, t0 + 100)).to.equal(900);
    expect(rates.take('other', rate, t0), 'another key counts apart').to.equal(0);
    expect(rates.take('k', rate, t0 + 1000), 'the first call has left the period').to.equal(0);
    expect(rates.take('k', rate, t0 + 1000)).to.equal(1);
    // Calls every 10 ms for 5 s: in every window of one second, at most 4 taken; 4 a second in all.
    const fresh = new LocalRates();
    const taken: number[] = [];
    for (let t = 0; t < 5000; t += 10) if (fresh.take('k', rate, t0 + t) === 0) taken.push(t);
    for (const start of taken) expect(taken.filter((t) => t >= start && t < start + 1000).length).to.be.at.most(4);
    expect(taken).to.have.length(20);
    // A key with no call in its period holds nothing.
    fresh.take('late', rate, t0 + 10_000);
    expect(fresh.size).to.equal(1);
  });

  it('takes a policy rule’s rate for the tools it matches, for the callers it allows; a wrong one names its rule', () => {
    const policy = Policy.parse(
      JSON.stringify({
        rules: [{ tools: ['a__*'], rate: '2/m' }, { tools: ['a__echo'], claims: { groups: 'eng' }, rate: '1/s' }, { tools: ['b__*'] }],
      }),
    );
    const eng = { subject: 'i ada', scopes: [], claims: { groups: ['eng'] } };
    expect(policy.rates(eng, 'a__echo').map((r) => [r.key, r.rate.text])).to.deep.equal([
      ['rules[0]', '2/m'],
      ['rules[1]', '1/s'],
    ]);
    expect(policy.rates(undefined, 'a__echo').map((r) => r.key)).to.deep.equal(['rules[0]']);
    expect(policy.rates(eng, 'b__x')).to.deep.equal([]);
    expect(() => Policy.parse('{"rules":[{"tools":["*"],"rate":"5 per minute"}]}')).to.throw(PolicyError, /rules\[0\]\.rate: a rate is/);
  });
});
