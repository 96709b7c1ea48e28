import { expect } from 'chai';
import { PASSED_STATE_MS, PassedStates, targetOf } from '../../lib/gateway/input.js';
import type { Caller } from '../../lib/protocol/caller.js';
import type { RpcError } from '../../lib/protocol/rpc-error.js';

const caller = (sub: string): Caller => ({ subject: `iss|${sub}`, scopes: [], claims: { sub } });
const asking = (requestState?: string) => ({
  resultType: 'input_required',
  inputRequests: { user_name: { method: 'elicitation/create', params: { message: 'Name?' } }, greeting: { method: 'sampling/createMessage' } },
  ...(requestState === undefined ? {} : { requestState }),
});

describe("gateway/input: a modern server's input_required result passed on as it came, its requestState the gateway's", () => {
  it("keeps the server's input requests and keys, and puts its state back for the same caller's retry of the same request", () => {
    const passed = new PassedStates('r1.');
    const target = targetOf('tools/call', { name: 'fixture__ask' });
    expect(target).to.equal('tools/call fixture__ask');
    const out = passed.passOn(asking('server-state'), caller('alice'), target);
    expect(out.inputRequests).to.deep.equal(asking().inputRequests);
    expect(out.requestState).to.match(/^r1\.[0-9a-f-]{36}$/);
    const retry = { name: 'fixture__ask', inputResponses: { user_name: {} }, requestState: out.requestState };
    expect(passed.restore(retry, caller('alice'), target)).to.deep.equal({ ...retry, requestState: 'server-state' });
  });

  it('passes other results, and one without a state, as they are; knows no state it did not give', () => {
    const passed = new PassedStates();
    const plain = { content: [], resultType: 'complete' };
    expect(passed.passOn(plain, undefined, 'tools/call x')).to.equal(plain);
    const stateless = asking();
    expect(passed.passOn(stateless, undefined, 'tools/call x')).to.equal(stateless);
    expect(passed.restore({ requestState: 'one of ModernFace' }, undefined, 'tools/call x')).to.equal(undefined);
    expect(passed.restore({}, undefined, 'tools/call x')).to.equal(undefined);
    expect(targetOf('resources/read', { uri: 'test://a' })).to.equal('resources/read test://a');
  });

  it('refuses a state to another caller and for another request, and forgets it after its time', () => {
    const passed = new PassedStates();
    const state = passed.passOn(asking('s'), caller('alice'), 'tools/call a').requestState as string;
    const refusal = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return [(err as RpcError).code, (err as RpcError).message];
      }
      return undefined;
    };
    expect(refusal(() => passed.restore({ requestState: state }, caller('bob'), 'tools/call a'))).to.deep.equal([
      -32602,
      'Invalid requestState: it is not one given to this caller',
    ]);
    expect(refusal(() => passed.restore({ requestState: state }, undefined, 'tools/call a'))).to.have.property('0', -32602);
    expect(refusal(() => passed.restore({ requestState: state }, caller('alice'), 'tools/call b'))).to.deep.equal([
      -32602,
      'Invalid requestState: it was given for tools/call a, not tools/call b',
    ]);
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + PASSED_STATE_MS + 1;
      expect(passed.restore({ requestState: state }, caller('alice'), 'tools/call a')).to.equal(undefined);
    } finally {
      Date.now = realNow;
    }
  });
});
