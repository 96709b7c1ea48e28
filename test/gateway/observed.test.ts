import { expect } from 'chai';
import { type GatewayObserver, observeCall, type UpstreamRecord } from '../../lib/gateway/observed.js';
import { RpcError } from '../../lib/protocol/rpc-error.js';
import type { Caller } from '../../lib/protocol/caller.js';

describe('gateway/observed: what a gateway reports of each call it sends on', () => {
  const caller: Caller = { subject: 'https://idp alice', scopes: [], claims: { iss: 'https://idp', sub: 'alice' } };

  it('reports the call once it ends: its server, method, name, caller, outcome and time; the params go on as they came without tracing', async () => {
    const records: UpstreamRecord[] = [];
    const observer: GatewayObserver = { upstreamRequest: (r) => void records.push(r) };
    const params = { name: 'echo', arguments: {} };
    const watch = observeCall(observer, false, { upstream: 'a', method: 'tools/call', params, name: 'a__echo', caller });
    expect(watch.params).to.equal(params);
    await new Promise((resolve) => setTimeout(resolve, 5));
    watch.end('tool_error');
    expect(records).to.have.length(1);
    expect(records[0]).to.deep.include({ upstream: 'a', method: 'tools/call', name: 'a__echo', caller, outcome: 'tool_error' });
    expect(records[0]!.seconds).to.be.greaterThan(0.004);
  });

  it('leaves out a name and a caller it does not have, reports an error ending, and does nothing with no observer', () => {
    const records: UpstreamRecord[] = [];
    const watch = observeCall({ upstreamRequest: (r) => void records.push(r) }, false, {
      upstream: 'b',
      method: 'completion/complete',
      params: {},
      name: undefined,
      caller: undefined,
    });
    watch.end('error', new RpcError(-32602, 'bad'));
    expect(Object.keys(records[0]!).sort()).to.deep.equal(['method', 'outcome', 'seconds', 'upstream']);
    expect(() =>
      observeCall(undefined, false, { upstream: 'b', method: 'x', params: {}, name: undefined, caller: undefined }).end('ok'),
    ).not.to.throw();
  });
});
