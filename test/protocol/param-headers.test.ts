import { expect } from 'chai';
import { paramHeaderValues, scanParamHeaders } from '../../lib/protocol/param-headers.js';

describe('protocol/param-headers: x-mcp-header declarations and their Mcp-Param-* values', () => {
  it('reads the declarations, and refuses annotations that break the rules', () => {
    const ok = scanParamHeaders({
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        opts: { type: 'object', properties: { dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' } } },
      },
    });
    expect(ok).to.deep.equal({
      headers: [
        { name: 'Region', path: ['region'] },
        { name: 'Dry-Run', path: ['opts', 'dry'] },
      ],
    });
    const bad: Array<[unknown, RegExp]> = [
      [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Has Space' } } }, /HTTP token/],
      [{ type: 'object', properties: { a: { type: 'number', 'x-mcp-header': 'A' } } }, /string, integer or boolean/],
      [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'string', 'x-mcp-header': 'a' } } }, /repeats/],
      [{ type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } } }, /reached through "properties"/],
      [{ type: 'object', anyOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'A' } } }] }, /reached through "properties"/],
      [{ type: 'string', 'x-mcp-header': 'Top' }, /reached through "properties"/],
      [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': '' } } }, /HTTP token/],
    ];
    for (const [schema, reason] of bad) expect((scanParamHeaders(schema) as { invalid: string }).invalid, JSON.stringify(schema)).to.match(reason);
  });

  it('encodes values as the transport says: plain ASCII as is, anything else in the Base64 sentinel, null and absent not at all', () => {
    const declared = [
      { name: 'Region', path: ['region'] },
      { name: 'Shard', path: ['shard'] },
      { name: 'Dry', path: ['dry'] },
      { name: 'Gone', path: ['gone'] },
      { name: 'Nothing', path: ['nothing'] },
    ];
    expect(paramHeaderValues(declared, { region: 'zürich', shard: 42, dry: false, nothing: null })).to.deep.equal({
      'mcp-param-region': `=?base64?${Buffer.from('zürich').toString('base64')}?=`,
      'mcp-param-shard': '42',
      'mcp-param-dry': 'false',
    });
    expect(paramHeaderValues(declared, { region: ' padded ' })['mcp-param-region']).to.match(/^=\?base64\?/);
    expect(paramHeaderValues(declared, { region: 'us-west1' })['mcp-param-region']).to.equal('us-west1');
  });
});
