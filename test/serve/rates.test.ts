// Rate limits on tools/call, per caller (the arithmetic is test/gateway/rate.test.ts): serve's --rate-limit over
// Streamable HTTP (429 with Retry-After), on a legacy SSE session (the error on the stream), for signed-in
// callers apart with a policy rule's rate, and across two replicas on a real Redis.
import { expect } from 'chai';
import type { ServerConfig } from '../../lib/client/config.js';
import { connect } from '../../lib/client/connect.js';
import { RpcError } from '../../lib/client/connection.js';
import { Policy } from '../../lib/gateway/policy.js';
import { type ServeHandle, type ServeOptions, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { type Idp, startIdp } from '../helpers/idp.js';
import { modernPost, rawRequest } from '../helpers/raw-http.js';
import { requireRedis, startRedis } from '../helpers/redis.js';
import { cli } from '../helpers/run.js';

const PEER: ServerConfig = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, 'a'] };
const echo = (id: number, headers: Record<string, string> = {}) =>
  modernPost(id, 'tools/call', { name: 'a__echo', arguments: { text: `${id}` } }, headers);

describe('rate limits', function () {
  this.timeout(30_000);

  describe('in serve', () => {
    const served: ServeHandle[] = [];
    const start = async (options: ServeOptions): Promise<ServeHandle> => {
      const s = await serve({ a: PEER }, { log: () => undefined, gateway: true, ...options });
      served.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of served.splice(0)) await s.close();
    });

    it('answers a call over --rate-limit 429 with Retry-After and a JSON-RPC error (data.retryAfterMs), having run nothing', async () => {
      const s = await start({ rateLimit: '2/m' });
      for (const id of [1, 2]) expect((await rawRequest(s.url!, echo(id))).status).to.equal(200);
      const over = await rawRequest(s.url!, echo(3));
      expect(over.status).to.equal(429);
      expect(Number(over.headers['retry-after'])).to.be.within(59, 60);
      const body = JSON.parse(over.body) as { id: number; error: { code: number; message: string; data: { retryAfterMs: number } } };
      expect(body.id).to.equal(3);
      expect(body.error.message).to.match(/^rate limit 2\/m of tools\/call reached: try again in (59|60) s/);
      expect(body.error.data.retryAfterMs).to.be.within(59_000, 60_000);
      // Other methods are not counted.
      expect((await rawRequest(s.url!, modernPost(4, 'tools/list', {}))).status).to.equal(200);
    });

    it('on a legacy SSE session: the error on the stream, the rest of the session going on', async () => {
      const s = await start({ rateLimit: '1/m' });
      const c = await connect({ type: 'sse', url: s.url!.replace('/mcp', '/sse') }, { protocolVersion: '2025-11-25' });
      try {
        expect(await c.request('tools/call', { name: 'a__echo', arguments: { text: 'one' } })).to.deep.equal({
          content: [{ type: 'text', text: 'a: one' }],
        });
        const over = (await c.request('tools/call', { name: 'a__echo', arguments: { text: 'two' } }).catch((e: Error) => e)) as RpcError;
        expect(over).to.be.instanceOf(RpcError);
        expect(over.message).to.match(/rate limit 1\/m of tools\/call reached/);
        expect((over.data as { retryAfterMs: number }).retryAfterMs).to.be.within(59_000, 60_000);
        expect(await c.request('ping', {})).to.deep.equal({});
      } finally {
        await c.close();
      }
    });

    it('counts each signed-in caller apart, and a policy rule’s rate for its tools only', async () => {
      const idp: Idp = await startIdp({ ada: {}, bob: {} });
      try {
        const policy = Policy.parse(JSON.stringify({ rules: [{ tools: ['a__echo'], rate: '1/m' }, { tools: ['a__*'] }] }));
        const s = await start({ auth: { issuer: idp.issuer }, policy });
        const as = async (who: string) => ({ authorization: `Bearer ${await idp.mint({ aud: s.url!, sub: who })}` });
        expect((await rawRequest(s.url!, echo(1, await as('ada')))).status).to.equal(200);
        expect((await rawRequest(s.url!, echo(2, await as('ada')))).status).to.equal(429);
        expect((await rawRequest(s.url!, echo(3, await as('bob')))).status, 'bob has his own').to.equal(200);
        const other = modernPost(4, 'tools/call', { name: 'a__a-only', arguments: {} }, await as('ada'));
        expect((await rawRequest(s.url!, other)).status, 'a tool the rate does not name').to.equal(200);
      } finally {
        await idp.close();
      }
    });

    it('counts a call_tool of tool search as a call of the tool it names', async () => {
      const policy = Policy.parse(JSON.stringify({ rules: [{ tools: ['a__echo'], rate: '1/m' }, { tools: ['a__*'] }] }));
      const s = await start({ toolSearch: true, policy });
      const through = (id: number, name: string) =>
        modernPost(id, 'tools/call', { name: 'call_tool', arguments: { name, arguments: { text: 'x' } } });
      expect((await rawRequest(s.url!, through(1, 'a__echo'))).status).to.equal(200);
      expect((await rawRequest(s.url!, through(2, 'a__echo'))).status).to.equal(429);
      expect((await rawRequest(s.url!, echo(3))).status, 'by its name too').to.equal(429);
      expect((await rawRequest(s.url!, through(4, 'a__a-only'))).status).to.equal(200);
    });

    it('holds a limit across replicas sharing a store, not one per replica', async function () {
      if (!requireRedis(this)) return;
      const redis = await startRedis();
      try {
        const a = await start({ rateLimit: '3/m', store: redis.url });
        const b = await start({ rateLimit: '3/m', store: redis.url });
        const statuses = [];
        for (const [i, s] of [a, b, a, b].entries()) statuses.push((await rawRequest(s.url!, echo(i))).status);
        expect(statuses).to.deep.equal([200, 200, 200, 429]);
      } finally {
        for (const s of served.splice(0)) await s.close();
        await redis.close();
      }
    });

    it('refuses a rate that is not one: serve() a TypeError, the command line exit 2', async () => {
      let err: unknown;
      try {
        await serve({ a: PEER }, { rateLimit: '10/day', log: () => undefined });
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(TypeError);
      expect((err as Error).message).to.match(/serve: rateLimit: a rate is/);
      const run = await cli(['serve', '--rate-limit', 'lots', '--', process.execPath, 'dist/examples/server.js']);
      expect(run.code).to.equal(2);
      expect(run.stderr).to.include('--rate-limit: a rate is <n>/<s|m|h>');
    });
  });
});
