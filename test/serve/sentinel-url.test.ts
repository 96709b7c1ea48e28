import { expect } from 'chai';
import { parseSentinelUrl } from '../../lib/serve/sentinel-url.js';

describe('serve --store redis+sentinel:// URLs', () => {
  it('reads the Sentinels, the master name, the database and the data nodes’ credentials', () => {
    expect(parseSentinelUrl('redis+sentinel://u%40x:p%3Aw@10.0.0.1:26379,[::1]:26380,s3/my%20set/2')).to.deep.equal({
      nodes: [
        { host: '10.0.0.1', port: 26379 },
        { host: '::1', port: 26380 },
        { host: 's3', port: 26379 },
      ],
      name: 'my set',
      database: 2,
      username: 'u@x',
      password: 'p:w',
    });
    expect(parseSentinelUrl('redis+sentinel://s1:26379/mcp')).to.deep.include({ name: 'mcp', database: undefined, password: undefined });
  });

  it('says what a Sentinel URL looks like for one it cannot read', () => {
    for (const bad of ['redis+sentinel://s1:26379', 'redis+sentinel://s1:x/m', 'redis+sentinel:///m']) {
      expect(parseSentinelUrl(bad), bad).to.be.a('string');
    }
  });
});
