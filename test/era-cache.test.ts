// The era verdict kept per server entry: a second connection to a known legacy server skips the probe. And, for
// every test of the suite, a root hook that forgets the verdicts first: servers on 127.0.0.1 come and go, and a
// port used again would otherwise inherit the verdict about the server that held it before.
import { expect } from 'chai';
import { connect, forgetEras } from '../lib/client/connection.js';
import { hostile, legacyHttp } from './helpers/hostile-http.js';

beforeEach(() => forgetEras());

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
      await (await connect({ type: 'http', url: server.url })).close();
      expect(probes).to.have.length(1);
      const second = await connect({ type: 'http', url: server.url });
      expect(second.era).to.equal('legacy');
      await second.close();
      expect(probes).to.have.length(1);
      forgetEras();
      await (await connect({ type: 'http', url: server.url })).close();
      expect(probes).to.have.length(2);
    } finally {
      await server.close();
    }
  });
});
