import { expect } from 'chai';
import { authChallenge, bearerChallenge, clientSecretBasic, parseChallenges } from '../../lib/protocol/www-authenticate.js';

describe('protocol/www-authenticate: the challenges a server sends', () => {
  it('parses several challenges, quoted values with escapes and token values, keys lower-cased', () => {
    const header =
      'Bearer realm="mcp", Resource_Metadata="https://a.example/.well-known/oauth-protected-resource", scope="read write", ' +
      'DPoP algs="ES256 RS256", error=invalid_token, error_description="say \\"hi\\", then go"';
    expect(parseChallenges(header)).to.deep.equal([
      {
        scheme: 'Bearer',
        params: { realm: 'mcp', resource_metadata: 'https://a.example/.well-known/oauth-protected-resource', scope: 'read write' },
      },
      { scheme: 'DPoP', params: { algs: 'ES256 RS256', error: 'invalid_token', error_description: 'say "hi", then go' } },
    ]);
  });

  it('takes several header lines as one list, a token68, and a scheme with no parameters', () => {
    expect(parseChallenges(['Basic', 'Negotiate abc123==', 'Bearer scope=x'])).to.deep.equal([
      { scheme: 'Basic', params: {} },
      { scheme: 'Negotiate', params: { token68: 'abc123==' } },
      { scheme: 'Bearer', params: { scope: 'x' } },
    ]);
  });

  it('skips what it cannot read and never throws, an unclosed quote included', () => {
    expect(parseChallenges(undefined)).to.deep.equal([]);
    expect(parseChallenges('')).to.deep.equal([]);
    expect(parseChallenges(', ,;; "')).to.deep.equal([]);
    expect(parseChallenges('Bearer scope="unclosed')).to.deep.equal([{ scheme: 'Bearer', params: { scope: 'unclosed' } }]);
  });

  it('signs in by the Bearer challenge, else the DPoP one', () => {
    expect(bearerChallenge('DPoP algs="ES256", Bearer scope=a')?.params).to.deep.equal({ scope: 'a' });
    expect(bearerChallenge('DPoP algs="ES256"')).to.equal(undefined);
    expect(authChallenge('DPoP algs="ES256", Bearer scope=a')?.scheme).to.equal('Bearer');
    expect(authChallenge('DPoP algs="ES256"')?.scheme).to.equal('DPoP');
    expect(authChallenge('Basic realm=x')).to.equal(undefined);
  });

  it('makes client_secret_basic credentials with each part form-encoded (RFC 6749 §2.3.1)', () => {
    const header = clientSecretBasic('my client', 'p:ss%w0rd');
    expect(header).to.match(/^Basic [A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(header.slice(6), 'base64').toString('utf8')).to.equal('my%20client:p%3Ass%25w0rd');
  });
});
