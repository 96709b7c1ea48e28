import { expect } from 'chai';
import { CODES } from '../../lib/protocol/codes.js';
import { Refusal } from '../../lib/protocol/refusal.js';

describe('protocol/refusal: a request refused, with its status and its JSON-RPC error', () => {
  it('is an Error whose reason is its message, a server error of no request by default', () => {
    const refusal = new Refusal(503, '32 sessions are open already');
    expect(refusal).to.be.instanceOf(Error);
    expect(refusal.name).to.equal('Refusal');
    expect([refusal.status, refusal.reason, refusal.code, refusal.id]).to.deep.equal([
      503,
      '32 sessions are open already',
      CODES.serverError,
      undefined,
    ]);
    expect(refusal.headers).to.deep.equal({});
    expect(refusal.body()).to.deep.equal({ jsonrpc: '2.0', id: null, error: { code: -32000, message: '32 sessions are open already' } });
  });

  it('carries its headers, code and data into the answer, and becomes the refusal of a request by its id', () => {
    const refusal = new Refusal(400, 'unsupported protocol version "1999-01-01"', {
      code: CODES.unsupportedProtocolVersion,
      data: { supported: ['2026-07-28'] },
      headers: { 'Retry-After': '1' },
    });
    const of = refusal.of(7);
    expect(of).to.not.equal(refusal);
    expect(refusal.id, 'the first is not changed').to.equal(undefined);
    expect(of.headers).to.deep.equal({ 'Retry-After': '1' });
    expect(of.body()).to.deep.equal({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32022, message: 'unsupported protocol version "1999-01-01"', data: { supported: ['2026-07-28'] } },
    });
  });
});
