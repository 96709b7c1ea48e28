// The gateway's token exchange (RFC 8693) on its own, against a small authorization server on 127.0.0.1 that
// records every request it gets and answers as each case sets.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { TokenExchange } from '../../lib/gateway/exchange.js';

type Json = Record<string, unknown>;

interface Asked {
  authorization: string | undefined;
  params: Record<string, string>;
}

describe('gateway token exchange', () => {
  let server: http.Server;
  let issuer: string;
  let asked: Asked[];
  let answer: (params: Record<string, string>) => { status: number; body: string };
  let metadata: Json | undefined;

  beforeEach(async () => {
    asked = [];
    answer = (p) => ({
      status: 200,
      body: JSON.stringify({ access_token: `for-${p.resource}-${asked.length}`, token_type: 'Bearer', expires_in: 300 }),
    });
    server = http.createServer((req, res) => {
      if (req.url?.startsWith('/.well-known/')) {
        if (metadata === undefined) return void res.writeHead(404).end();
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metadata));
      }
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const params = Object.fromEntries(new URLSearchParams(Buffer.concat(parts).toString('utf8')));
        asked.push({ authorization: req.headers.authorization, params });
        const { status, body } = answer(params);
        // A slow answer, so that calls made at once meet one exchange in flight.
        setTimeout(() => res.writeHead(status, { 'content-type': 'application/json' }).end(body), 20);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    metadata = { issuer, token_endpoint: `${issuer}/token` };
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const exchange = (): TokenExchange => new TokenExchange({ issuer, clientId: 'gate way', clientSecret: 's3cret:x' });

  it('asks with the RFC 8693 parameters as the client named, keeps the token, and shares one exchange between calls made at once', async () => {
    const ex = exchange();
    const target = { resource: 'http://127.0.0.1:9/mcp', audience: 'tools', scope: 'read' };
    const [a, b] = await Promise.all([ex.tokenFor('caller-token', target), ex.tokenFor('caller-token', target)]);
    expect(a).to.equal('for-http://127.0.0.1:9/mcp-1');
    expect(b).to.equal(a);
    expect(asked).to.have.length(1);
    expect(asked[0]!.params).to.deep.equal({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: 'caller-token',
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      resource: 'http://127.0.0.1:9/mcp',
      audience: 'tools',
      scope: 'read',
    });
    const [user, secret] = Buffer.from(asked[0]!.authorization!.replace(/^Basic /, ''), 'base64')
      .toString('utf8')
      .split(':');
    expect([decodeURIComponent(user!), decodeURIComponent(secret!)]).to.deep.equal(['gate way', 's3cret:x']);
    // Kept: asked again for nothing; another caller or another server is another exchange.
    expect(await ex.tokenFor('caller-token', target)).to.equal(a);
    await ex.tokenFor('other-caller', target);
    await ex.tokenFor('caller-token', { resource: 'http://127.0.0.1:9/other' });
    expect(asked).to.have.length(3);
    expect(asked[2]!.params).to.not.have.property('audience');
  });

  it('asks again for a token that expires within 30 s', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ access_token: `t${asked.length}`, expires_in: 20 }) });
    const ex = exchange();
    expect(await ex.tokenFor('x', { resource: 'r' })).to.equal('t1');
    expect(await ex.tokenFor('x', { resource: 'r' })).to.equal('t2');
  });

  it('says why an exchange was refused, with the server’s error and never a token', async () => {
    answer = () => ({ status: 400, body: JSON.stringify({ error: 'invalid_grant', error_description: 'subject token expired' }) });
    const err = (await exchange()
      .tokenFor('secret-subject-token', { resource: 'r' })
      .catch((e: Error) => e)) as Error & { code?: string };
    expect(err.message).to.equal('the authorization server refused the token exchange (invalid_grant: subject token expired)');
    expect(err.code).to.equal('EXCHANGE_REFUSED');
    answer = () => ({ status: 502, body: '<html>bad gateway</html>' });
    const other = (await exchange()
      .tokenFor('secret-subject-token', { resource: 'r' })
      .catch((e: Error) => e)) as Error;
    expect(other.message).to.equal('the authorization server refused the token exchange (HTTP 502)');
    expect(`${err.message} ${other.message}`).to.not.include('secret-subject-token');
  });

  it('names the issuer whose metadata names no token endpoint', async () => {
    metadata = { issuer };
    const err = (await exchange()
      .tokenFor('x', { resource: 'r' })
      .catch((e: Error) => e)) as Error;
    expect(err.message).to.equal(`the authorization server ${issuer} names no token endpoint in its metadata`);
    expect(asked).to.have.length(0);
  });
});
