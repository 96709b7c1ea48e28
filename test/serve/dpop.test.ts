// DPoP at serve's resource server (RFC 9449 §4.3, §7.1): a token bound to a key is taken only with a proof of the
// very request, each way a proof can be wrong refused with invalid_dpop_proof; no downgrade to Bearer; `require`
// takes bound tokens only; a real identity provider (oidc-provider) binding the tokens the project's client asks
// for; and a proof replayed at another replica, through a real Redis.
import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { importJWK, type JWK, SignJWT } from 'jose';
import { DpopKey } from '../../lib/client/auth/dpop.js';
import { memoryAuthStore } from '../../lib/client/auth/store.js';
import type { ServerConfig } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { type Idp, INTROSPECTION_CLIENT, startIdp } from '../helpers/idp.js';
import { browser } from '../helpers/oidc-server.js';
import { MCP_HEADERS, rawRequest } from '../helpers/raw-http.js';
import { requireRedis, startRedis } from '../helpers/redis.js';
import { INIT } from '../helpers/served.js';
import { REDIRECT } from '../helpers/sdk-oauth.js';

const PEER: ServerConfig = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, 'a'] };

/** A POST of `body` with `authorization` and, when given, a DPoP header. */
const post = (url: string, authorization: string | undefined, proof?: string, body: string = INIT) =>
  rawRequest(url, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...(authorization === undefined ? {} : { authorization }), ...(proof === undefined ? {} : { dpop: proof }) },
    body,
  });

/** A proof signed with `key`, its claims and header as a sound one has them, `claims` and `header` over them. */
async function crafted(key: DpopKey, url: string, token: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) {
  const { d: _d, ...publicJwk } = key.toJwk() as JWK;
  const payload = {
    htm: 'POST',
    htu: url,
    iat: Math.floor(Date.now() / 1000),
    jti: randomUUID(),
    ath: createHash('sha256').update(token).digest('base64url'),
    ...claims,
  };
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: publicJwk, ...header })
    .sign(await importJWK(key.toJwk() as JWK, 'ES256'));
}

describe('serve checks DPoP proofs (RFC 9449) of tokens bound to a key', function () {
  this.timeout(30_000);
  let idp: Idp;
  const served: ServeHandle[] = [];
  const start = async (options: ServeOptions['auth'] & object): Promise<ServeHandle> => {
    const s = await serve({ a: PEER }, { log: () => undefined, auth: options });
    served.push(s);
    return s;
  };

  before(async () => {
    idp = await startIdp({ ada: {} });
  });
  afterEach(async () => {
    for (const s of served.splice(0)) await s.close();
  });
  after(async () => {
    await idp.close();
  });

  it('takes a bound token with a proof of the request; refuses it as Bearer, without a proof, or with a proof wrong in any one way', async () => {
    const s = await start({ issuer: idp.issuer });
    const url = s.url!;
    const key = DpopKey.generate();
    const token = await idp.mint({ aud: url, cnf: { jkt: key.thumbprint } });
    const ok = await post(url, `DPoP ${token}`, key.proof('POST', url, token));
    expect(ok.status, ok.body).to.equal(200);

    const bearer = await post(url, `Bearer ${token}`, key.proof('POST', url, token));
    expect(bearer.status).to.equal(401);
    expect(bearer.headers['www-authenticate']).to.match(/^Bearer .*error="invalid_token", error_description="the token is bound to a key \(DPoP\)/);

    const other = DpopKey.generate();
    const stranger = await (async () => {
      const { d: _d, ...jwk } = { kty: 'oct', k: Buffer.from('a-shared-secret-of-32-bytes-long').toString('base64url') } as JWK & { d?: string };
      return new SignJWT({ htm: 'POST', htu: url, iat: Math.floor(Date.now() / 1000), jti: randomUUID() })
        .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk })
        .sign(Buffer.from('a-shared-secret-of-32-bytes-long'));
    })();
    const wrong: Array<[string, string | undefined, RegExp]> = [
      ['no proof', undefined, /no DPoP proof/],
      ['not a JWT', 'not-a-jwt', /not one JWT/],
      ['another method', key.proof('GET', url, token), /the proof is for another method \(htm\), not this POST/],
      ['another URL', key.proof('POST', url.replace('/mcp', '/other'), token), /another URL \(htu\)/],
      ['another token', key.proof('POST', url, 'another-token'), /another token \(ath\)/],
      ['another key', other.proof('POST', url, token), /a key the token is not bound to/],
      ['made long ago', await crafted(key, url, token, { iat: Math.floor(Date.now() / 1000) - 120 }), /not made within 60 s/],
      ['made in the future', await crafted(key, url, token, { iat: Math.floor(Date.now() / 1000) + 60 }), /not made within 60 s/],
      ['another typ', await crafted(key, url, token, {}, { typ: 'JWT' }), /typ is not dpop\+jwt/],
      ['no jti', await crafted(key, url, token, { jti: undefined }), /no jti/],
      ['a MAC', stranger, /no public key|algorithm this server does not take/],
    ];
    for (const [how, proof, said] of wrong) {
      const refused = await post(url, `DPoP ${token}`, proof);
      expect(refused.status, how).to.equal(401);
      const challenge = refused.headers['www-authenticate'] as string;
      expect(challenge, how).to.match(/^DPoP error="invalid_dpop_proof", error_description="[^"]+", algs="ES256 [^"]+", resource_metadata="/);
      expect(challenge, how).to.match(said);
    }
    // A proof is taken once.
    const once = key.proof('POST', url, token);
    expect((await post(url, `DPoP ${token}`, once)).status).to.equal(200);
    const replayed = await post(url, `DPoP ${token}`, once);
    expect(replayed.status).to.equal(401);
    expect(replayed.headers['www-authenticate']).to.match(/used before \(its jti is replayed\)/);
    // The DPoP scheme is for bound tokens only.
    const unbound = await idp.mint({ aud: url });
    const asDpop = await post(url, `DPoP ${unbound}`, key.proof('POST', url, unbound));
    expect(asDpop.status).to.equal(401);
    expect(asDpop.headers['www-authenticate']).to.match(/the token is not bound to a key/);
    // And an unbound token is a bearer token, by default.
    expect((await post(url, `Bearer ${unbound}`)).status).to.equal(200);
  });

  it('takes htu as the public URL names it, a proxy’s path prefix included', async () => {
    const s = await start({ issuer: idp.issuer, resource: 'http://mcp.test/team/mcp' });
    const key = DpopKey.generate();
    const token = await idp.mint({ aud: 'http://mcp.test/team/mcp', cnf: { jkt: key.thumbprint } });
    const at = (proof: string) =>
      rawRequest(`http://127.0.0.1:${s.port}/mcp`, {
        method: 'POST',
        headers: { ...MCP_HEADERS, host: 'mcp.test', authorization: `DPoP ${token}`, dpop: proof },
        body: INIT,
      });
    expect((await at(key.proof('POST', 'http://mcp.test/team/mcp', token))).status).to.equal(200);
    const local = await at(key.proof('POST', 'http://mcp.test/mcp', token));
    expect(local.status).to.equal(401);
    expect(local.headers['www-authenticate']).to.match(/another URL \(htu\)/);
  });

  it('with dpop require: refuses an unbound token with a DPoP challenge, and says so in its metadata', async () => {
    const s = await start({ issuer: idp.issuer, dpop: 'require' });
    const url = s.url!;
    const meta = JSON.parse((await rawRequest(`${new URL(url).origin}/.well-known/oauth-protected-resource/mcp`)).body) as Record<string, unknown>;
    expect(meta.dpop_bound_access_tokens_required).to.equal(true);
    expect(meta.dpop_signing_alg_values_supported).to.include('ES256');
    const none = await post(url, undefined);
    expect(none.status).to.equal(401);
    expect(none.headers['www-authenticate']).to.match(/^DPoP resource_metadata="[^"]+", algs="ES256/);
    const unbound = await post(url, `Bearer ${await idp.mint({ aud: url })}`);
    expect(unbound.status).to.equal(401);
    expect(unbound.headers['www-authenticate']).to.match(
      /^DPoP .*error="invalid_token", error_description="this server takes DPoP-bound tokens only"/,
    );
    const key = DpopKey.generate();
    const bound = await idp.mint({ aud: url, cnf: { jkt: key.thumbprint } });
    expect((await post(url, `DPoP ${bound}`, key.proof('POST', url, bound))).status).to.equal(200);
  });

  it('the project’s client signs in to a dpop require serve at oidc-provider, which binds its tokens (JWT and introspected), and calls with proofs', async () => {
    for (const format of ['jwt', 'opaque'] as const) {
      const bound = await startIdp({ ada: {} }, { dpop: true, format });
      try {
        const s = await start({
          issuer: bound.issuer,
          dpop: 'require',
          ...(format === 'opaque' ? { introspection: { endpoint: `${bound.issuer}/token/introspection`, ...INTROSPECTION_CLIENT } } : {}),
        });
        const c = await connect(
          { type: 'http', url: s.url! },
          { protocolVersion: '2025-11-25', auth: { authorize: browser, redirectUri: REDIRECT, store: memoryAuthStore() } },
        );
        try {
          for (let i = 0; i < 3; i++)
            expect(await c.request('tools/call', { name: 'echo', arguments: { text: `${format} ${i}` } }), format).to.deep.equal({
              content: [{ type: 'text', text: `a: ${format} ${i}` }],
            });
        } finally {
          await c.close();
        }
      } finally {
        await bound.close();
      }
    }
  });

  it('refuses a proof replayed at another replica (the jti claimed in Redis)', async function () {
    if (!requireRedis(this)) return;
    const redis = await startRedis();
    const url = (port: number) => `http://127.0.0.1:${port}/mcp`;
    try {
      const first = await serve(
        { a: PEER },
        { log: () => undefined, store: redis.url, auth: { issuer: idp.issuer, resource: 'http://mcp.test/mcp' } },
      );
      served.push(first);
      const second = await serve(
        { a: PEER },
        { log: () => undefined, store: redis.url, auth: { issuer: idp.issuer, resource: 'http://mcp.test/mcp' } },
      );
      served.push(second);
      const key = DpopKey.generate();
      const token = await idp.mint({ aud: 'http://mcp.test/mcp', cnf: { jkt: key.thumbprint } });
      const proof = key.proof('POST', 'http://mcp.test/mcp', token);
      const at = (s: ServeHandle) =>
        rawRequest(url(s.port!), {
          method: 'POST',
          headers: { ...MCP_HEADERS, host: 'mcp.test', authorization: `DPoP ${token}`, dpop: proof },
          body: INIT,
        });
      expect((await at(first)).status).to.equal(200);
      const again = await at(second);
      expect(again.status).to.equal(401);
      expect(again.headers['www-authenticate']).to.match(/its jti is replayed/);
    } finally {
      for (const s of served.splice(0)) await s.close();
      await redis.close();
    }
  });
});
