import { expect } from 'chai';
import { requestTarget } from '../../lib/protocol/target.js';

describe('protocol/target: the request-target of an HTTP request', () => {
  it('reads the origin form: the path as sent and the query', () => {
    const target = requestTarget('/mcp?session=a%20b&x=1')!;
    expect(target.path).to.equal('/mcp');
    expect(target.query.get('session')).to.equal('a b');
    expect(target.query.get('x')).to.equal('1');
    expect(requestTarget('/')!.path).to.equal('/');
    // No dot-segment removal nor percent-decoding: only /mcp is /mcp.
    expect(requestTarget('/a/../mcp')!.path).to.equal('/a/../mcp');
    expect(requestTarget('/%6Dcp')!.path).to.equal('/%6Dcp');
  });

  it('gives undefined for anything else, without throwing', () => {
    for (const raw of [undefined, '', 'mcp', '//evil.example/mcp', 'http://[', 'http://host/mcp', '*', '/mcp#frag'])
      expect(requestTarget(raw), String(raw)).to.equal(undefined);
  });
});
