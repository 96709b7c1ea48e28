import { expect } from 'chai';
import { parseClusterUrl, parseSentinelUrl } from '../../lib/serve/replicas/sentinel-url.js';

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

describe('serve --store redis+cluster:// URLs', () => {
  it('reads the nodes, the credentials and whether TLS is asked for', () => {
    expect(parseClusterUrl('redis+cluster://:s%40cret@10.0.0.1:7000,[::1]:7001,n3')).to.deep.equal({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
        { host: 'n3', port: 6379 },
      ],
      username: undefined,
      password: 's@cret',
      tls: false,
    });
    expect(parseClusterUrl('rediss+cluster://n1:7000/')).to.deep.include({ tls: true });
  });

  it('says what a Cluster URL looks like for one it cannot read (a database among them: a Cluster has only 0)', () => {
    for (const bad of ['redis+cluster://', 'redis+cluster://n1:x', 'redis+cluster://n1:7000/2']) {
      expect(parseClusterUrl(bad), bad).to.be.a('string');
    }
  });
});
