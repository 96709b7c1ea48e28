// The era verdict kept per server entry: a second connection to a known legacy server skips the probe. (The suite
// forgets the process's verdicts before every test: test/setup.ts.)
import { expect } from 'chai';
import { EraCache } from '../lib/client/connection.js';
import { connect } from '../lib/client/connect.js';
import { hostile, legacyHttp } from './helpers/hostile-http.js';

describe('the era verdict, kept per server entry', function () {
  this.timeout(20_000);

  it('probes a legacy server once, skips the probe on the next connection, and probes again once forgotten', async () => {
    const probes: string[] = [];
    const answer = legacyHttp(() => undefined);
    const server = await hostile((req, res, body) => {
      if (body.includes('"server/discover"')) probes.push(body);
      answer(req, res, body);
    });
    try {
      const eraCache = new EraCache();
      await (await connect({ type: 'http', url: server.url }, { eraCache })).close();
      expect(probes).to.have.length(1);
      const second = await connect({ type: 'http', url: server.url }, { eraCache });
      expect(second.era).to.equal('legacy');
      await second.close();
      expect(probes).to.have.length(1);
      eraCache.forget();
      await (await connect({ type: 'http', url: server.url }, { eraCache })).close();
      expect(probes).to.have.length(2);
      // No cache: every connection probes.
      await (await connect({ type: 'http', url: server.url }, { eraCache: false })).close();
      await (await connect({ type: 'http', url: server.url }, { eraCache: false })).close();
      expect(probes).to.have.length(4);
    } finally {
      await server.close();
    }
  });
});
