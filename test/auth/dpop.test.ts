// DPoP proofs (RFC 9449) as mcp-frame signs them, checked with jose, an implementation of its own.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, jwtVerify } from 'jose';
import { DpopKey, DpopNonces, dpopKeyFor, htuOf } from '../../lib/client/auth/dpop.js';

describe('DPoP proofs', () => {
  it('signs a proof jose verifies: typ, ES256, the public key only, htm, htu without query or fragment, iat, ath, nonce', async () => {
    const key = DpopKey.generate();
    const proof = key.proof('post', new URL('https://mcp.example.com/mcp?tenant=a#x'), 'the-token', 'n-1');
    const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: ['ES256'] });
    expect(protectedHeader.alg).to.equal('ES256');
    expect(protectedHeader.jwk).to.have.keys('kty', 'crv', 'x', 'y');
    expect(payload).to.include({ htm: 'POST', htu: 'https://mcp.example.com/mcp', nonce: 'n-1' });
    expect(payload.ath).to.equal(createHash('sha256').update('the-token').digest('base64url'));
    expect(Math.abs((payload.iat as number) - Date.now() / 1000)).to.be.below(5);
    expect(await calculateJwkThumbprint(protectedHeader.jwk!)).to.equal(key.thumbprint);
  });

  it('makes every proof new (its own jti), and one without a token carries no ath', async () => {
    const key = DpopKey.generate();
    const a = await jwtVerify(key.proof('POST', 'https://as.example/token'), EmbeddedJWK);
    const b = await jwtVerify(key.proof('POST', 'https://as.example/token'), EmbeddedJWK);
    expect(a.payload.jti).to.be.a('string').and.not.equal(b.payload.jti);
    expect(a.payload).to.not.have.property('ath');
    expect(a.payload).to.not.have.property('nonce');
  });

  it('keeps one key pair per authorization server, and takes back a kept one', () => {
    const issuer = `https://as-${Date.now()}.example`;
    expect(dpopKeyFor(issuer).thumbprint).to.equal(dpopKeyFor(issuer).thumbprint);
    expect(dpopKeyFor(`${issuer}/other`).thumbprint).to.not.equal(dpopKeyFor(issuer).thumbprint);
    const kept = DpopKey.generate();
    const elsewhere = `https://kept-${Date.now()}.example`;
    expect(dpopKeyFor(elsewhere, kept.toJwk()).thumbprint).to.equal(kept.thumbprint);
    expect(decodeProtectedHeader(DpopKey.fromJwk(kept.toJwk()).proof('GET', 'https://x.example/')).jwk).to.deep.equal(kept.publicJwk);
  });

  it('keeps the latest nonce per origin, and ignores one that is no visible ASCII or too long', () => {
    const nonces = new DpopNonces();
    expect(nonces.note(new URL('https://a.example/x'), 'one')).to.equal(true);
    expect(nonces.note(new URL('https://a.example/y'), 'two')).to.equal(true);
    expect(nonces.get(new URL('https://a.example/z'))).to.equal('two');
    expect(nonces.get(new URL('https://b.example/'))).to.equal(undefined);
    expect(nonces.note(new URL('https://a.example/'), 'bad nonce\n')).to.equal(false);
    expect(nonces.note(new URL('https://a.example/'), 'x'.repeat(513))).to.equal(false);
    expect(nonces.note(new URL('https://a.example/'), undefined)).to.equal(false);
    expect(nonces.get(new URL('https://a.example/'))).to.equal('two');
    expect(htuOf('http://127.0.0.1:8080/mcp?q=1')).to.equal('http://127.0.0.1:8080/mcp');
  });
});
