import { expect } from 'chai';
import { type Caller, sameCaller } from '../../lib/protocol/caller.js';

describe('protocol/caller: who is calling', () => {
  const alice: Caller = { subject: 'https://id.example|alice', scopes: ['mcp'], claims: { sub: 'alice' } };
  const aliceAgain: Caller = { subject: 'https://id.example|alice', scopes: [], claims: {} };
  const bob: Caller = { subject: 'https://id.example|bob', scopes: ['mcp'], claims: { sub: 'bob' } };

  it('takes two requests as one caller by the subject alone (scopes and claims may differ between tokens)', () => {
    expect(sameCaller(alice, aliceAgain)).to.equal(true);
    expect(sameCaller(alice, bob)).to.equal(false);
    expect(sameCaller(bob, alice)).to.equal(false);
  });

  it('takes clients without sign-in as one anonymous caller, never the same as a signed-in one', () => {
    expect(sameCaller(undefined, undefined)).to.equal(true);
    expect(sameCaller(undefined, alice)).to.equal(false);
    expect(sameCaller(alice, undefined)).to.equal(false);
  });
});
