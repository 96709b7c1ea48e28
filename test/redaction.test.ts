// The one redaction module: known secrets replaced exactly, the rule for short ones, URLs without credentials.
import { expect } from 'chai';
import { configuredSecrets, MIN_SECRET_LENGTH, replaceSecrets, scrubber, urlWithoutCredentials } from '../lib/redaction.js';

describe('redaction', () => {
  it('replaces known secrets exactly, the longest first, so a secret holding another goes whole', () => {
    expect(replaceSecrets('key sk-abcdef and sk-abcdef-longer', ['sk-abcdef', 'sk-abcdef-longer'])).to.equal('key [REDACTED] and [REDACTED]');
    expect(replaceSecrets('nothing here', ['', 'absent-secret'])).to.equal('nothing here');
    // What it is given it replaces, whatever its length: the callers apply MIN_SECRET_LENGTH.
    expect(replaceSecrets('t=abc', ['abc'])).to.equal('t=[REDACTED]');
  });

  it('looks for configured values of MIN_SECRET_LENGTH and more only, raw and percent-encoded, and the credential after a scheme', () => {
    const url = new URL('https://mcp.example.com/mcp?key=k%2Fsecret-1&x=ab');
    const found = configuredSecrets(url, { Authorization: 'Bearer tok-123456', 'X-Short': 'abc' });
    expect(MIN_SECRET_LENGTH).to.equal(6);
    expect(found).to.include.members(['Bearer tok-123456', 'tok-123456', 'k/secret-1', encodeURIComponent('k/secret-1')]);
    expect(found).to.not.include('abc');
    expect(found).to.not.include('ab');
    const scrub = scrubber(found);
    expect(scrub('echo: Bearer tok-123456 k%2Fsecret-1')).to.equal('echo: [REDACTED] [REDACTED]');
  });

  it('names a URL without its user and password', () => {
    expect(urlWithoutCredentials('redis://user:pa55word@10.0.0.1:6379/0')).to.equal('redis://10.0.0.1:6379/0');
    expect(urlWithoutCredentials('not a url')).to.equal(undefined);
  });

  it("leaves the program's own words alone: a lower-case word after bearer or basic is prose, unless an Authorization key names it", async () => {
    const { redact } = await import('../lib/redaction.js');
    expect(redact('the server refused the bearer token given')).to.equal('the server refused the bearer token given');
    expect(redact('basic auth is not offered')).to.equal('basic auth is not offered');
    expect(redact('Authorization: Bearer abcdefgh')).to.equal('Authorization: Bearer [REDACTED]');
    expect(redact('sent Bearer sk-abc123 twice')).to.equal('sent Bearer [REDACTED] twice');
    expect(redact('Basic dXNlcjpwYXNz')).to.equal('Basic [REDACTED]');
  });
});
