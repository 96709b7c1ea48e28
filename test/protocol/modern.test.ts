import { expect } from 'chai';
import {
  decodeHeaderValue,
  envelopeProblem,
  headerMismatch,
  headerValue,
  isEnvelopeRequest,
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  metaVersion,
  modernHeaders,
  pickModernVersion,
  withModernMeta,
} from '../../lib/protocol/modern.js';

const META = { [META_PROTOCOL_VERSION]: '2026-07-28', [META_CLIENT_CAPABILITIES]: {} };

describe('protocol/modern: the 2026-07-28 revision', () => {
  it('tells a modern request by its _meta version key or its header, a legacy one by neither', () => {
    expect(isEnvelopeRequest({ method: 'tools/list', params: { _meta: { [META_PROTOCOL_VERSION]: 'junk' } } }, undefined)).to.equal(true);
    expect(isEnvelopeRequest({ method: 'tools/list' }, '2026-07-28')).to.equal(true);
    expect(isEnvelopeRequest({ method: 'tools/list' }, '2025-11-25')).to.equal(false);
    expect(isEnvelopeRequest({ method: 'tools/list', params: { _meta: { progressToken: 1 } } }, undefined)).to.equal(false);
    expect(isEnvelopeRequest('nope', ['2026-07-28'])).to.equal(false);
  });

  it("says what is wrong with a request's envelope, one problem at a time", () => {
    expect(envelopeProblem({ params: { _meta: META } })).to.equal(undefined);
    expect(envelopeProblem({ params: 3 })).to.equal('params is not an object');
    expect(envelopeProblem({})).to.match(/^params\._meta is missing/);
    expect(envelopeProblem({ params: { _meta: [] } })).to.equal('params._meta is not an object');
    expect(envelopeProblem({ params: { _meta: { [META_CLIENT_CAPABILITIES]: {} } } })).to.match(/protocolVersion"\] is missing/);
    expect(envelopeProblem({ params: { _meta: { [META_PROTOCOL_VERSION]: '2026-07-28' } } })).to.match(/clientCapabilities"\] is missing/);
    expect(envelopeProblem({ params: { _meta: { ...META, [META_CLIENT_INFO]: 'me' } } })).to.match(/clientInfo"\] is not an object/);
    expect(envelopeProblem({ params: { _meta: { ...META, [META_LOG_LEVEL]: 'loud' } } })).to.match(/logLevel"\] is not a log level/);
    expect(envelopeProblem({ params: { _meta: { ...META, [META_LOG_LEVEL]: 'warning' } } })).to.equal(undefined);
  });

  it("picks the newest revision offered that this side speaks, and reads a request's version", () => {
    expect(pickModernVersion(['2025-11-25', '2026-07-28', '2099-01-01'])).to.equal('2026-07-28');
    expect(pickModernVersion(['2025-11-25'])).to.equal(undefined);
    expect(pickModernVersion('2026-07-28')).to.equal(undefined);
    expect(metaVersion({ params: { _meta: META } })).to.equal('2026-07-28');
    expect(metaVersion({ params: { _meta: { [META_PROTOCOL_VERSION]: 5 } } })).to.equal(undefined);
  });

  it("adds the protocol keys to _meta, keeping the caller's members and leaving other params alone", () => {
    const out = withModernMeta(
      { name: 'x', _meta: { progressToken: 'p', [META_PROTOCOL_VERSION]: 'forged' } },
      { protocolVersion: '2026-07-28', clientInfo: { name: 'c', version: '1' }, capabilities: { roots: {} }, logLevel: 'debug' },
    );
    expect(out).to.deep.equal({
      name: 'x',
      _meta: {
        progressToken: 'p',
        [META_PROTOCOL_VERSION]: '2026-07-28',
        [META_CLIENT_INFO]: { name: 'c', version: '1' },
        [META_CLIENT_CAPABILITIES]: { roots: {} },
        [META_LOG_LEVEL]: 'debug',
      },
    });
    expect(withModernMeta([1], { protocolVersion: 'v', clientInfo: {}, capabilities: {} })).to.deep.equal([1]);
    expect((withModernMeta(undefined, { protocolVersion: 'v', clientInfo: {}, capabilities: {} }) as { _meta: object })._meta).to.not.have.property(
      META_LOG_LEVEL,
    );
  });

  it('writes header values as the Value Encoding has them, and reads back only canonical Base64 of UTF-8', () => {
    expect(headerValue('get_weather')).to.equal('get_weather');
    expect(headerValue('café')).to.equal(`=?base64?${Buffer.from('café').toString('base64')}?=`);
    expect(headerValue(' padded')).to.match(/^=\?base64\?/);
    expect(headerValue('=?base64?abc?=')).to.match(/^=\?base64\?PT9iYXNlNjQ/);
    for (const value of ['café', ' padded', '日本語', '=?base64?abc?=']) expect(decodeHeaderValue(headerValue(value))).to.equal(value);
    expect(decodeHeaderValue('plain')).to.equal('plain');
    expect(decodeHeaderValue('=?base64?Y2FmZQ?=')).to.equal(undefined); // not padded
    expect(decodeHeaderValue('=?base64?Y2FmZR==?=')).to.equal(undefined); // stray bits
    expect(decodeHeaderValue(`=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`)).to.equal(undefined); // not UTF-8
  });

  it("mirrors a request's method and name in headers, and names the first header that does not match", () => {
    const msg = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'café', _meta: META } };
    const headers = modernHeaders(msg, '2026-07-28');
    expect(headers).to.deep.equal({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': headerValue('café') });
    expect(modernHeaders({ method: 'resources/read', params: { uri: 'file:///a' } }, 'v')['mcp-name']).to.equal('file:///a');
    expect(modernHeaders({ method: 'tools/list' }, 'v')).to.not.have.property('mcp-name');
    // The tasks extension's methods name their task (SEP-2663).
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const task = { method, params: { taskId: 't-1', _meta: META } };
      expect(modernHeaders(task, 'v')['mcp-name'], method).to.equal('t-1');
      expect(headerMismatch(task, { ...modernHeaders(task, '2026-07-28'), 'mcp-name': 't-2' }), method).to.match(/mcp-name header \("t-2"\)/);
    }
    expect(headerMismatch(msg, headers)).to.equal(undefined);
    expect(headerMismatch(msg, { ...headers, 'mcp-name': 'cafe' })).to.match(/^the mcp-name header \("cafe"\) does not match the body \("café"\)/);
    expect(headerMismatch(msg, { ...headers, 'mcp-name': '=?base64?Y2FmZQ?=' })).to.match(/Base64 form is malformed/);
    expect(headerMismatch(msg, { 'mcp-protocol-version': '2026-07-28' })).to.equal('the mcp-method header is missing');
    expect(headerMismatch(msg, { ...headers, 'mcp-protocol-version': '2025-11-25' })).to.match(/mcp-protocol-version header/);
  });
});
