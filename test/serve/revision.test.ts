// serve and the 2026-07-28 revision's rules, on real children: the shared child's era found by serve's own
// probe, the envelope, version and header errors with their statuses and ids, and for a translated legacy child
// per-request capabilities, the removed methods, and listen served from its notifications.
import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ServeHandle } from '../../lib/serve/index.js';
import { FILLED_FORM } from '../helpers/elicitation.js';
import { ROOT } from '../helpers/fixtures.js';
import { MCP_HEADERS, openStream, rawRequest } from '../helpers/raw-http.js';
import { served } from '../helpers/served.js';

const SDK2_DUAL = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/sdk2.js`, 'dual'] };
const EVERYTHING = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };
const CONFORMANCE = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/conformance.js`] };
const SUBSCRIBER = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/subscriber.js`] };

const VERSION = 'io.modelcontextprotocol/protocolVersion';
const CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const META = { [VERSION]: '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' }, [CAPABILITIES]: {} };

/** A raw POST of one request; the answer's status and parsed body. */
async function post(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': String(body.method) },
): Promise<{ status: number; body: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } } }> {
  const res = await rawRequest(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify({ jsonrpc: '2.0', ...body }) });
  return { status: res.status, body: JSON.parse(res.body) };
}

describe('serve: the 2026-07-28 revision, exactly', function () {
  this.timeout(30_000);
  let bridge: ServeHandle;
  let log: string[];
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
    await bridge.close();
  });

  it("finds the shared child's era with its own server/discover: a first request with a broken envelope decides nothing", async () => {
    ({ bridge, log } = await served(SDK2_DUAL));
    // The very first modern request lacks its client capabilities: refused at the door, 400 with its id.
    const broken = await post(bridge.url!, { id: 7, method: 'server/discover', params: { _meta: { [VERSION]: '2026-07-28' } } });
    expect(broken.status).to.equal(400);
    expect(broken.body.id).to.equal(7);
    expect(broken.body.error?.code).to.equal(-32602);
    expect(broken.body.error?.message).to.include(CAPABILITIES);
    // The dual-era child is spoken to as the modern server it is, never translated.
    const c = await connect({ type: 'http', url: bridge.url! });
    open.push(c);
    expect(c.era).to.equal('modern');
    expect(await c.request('tools/call', { name: 'echo', arguments: { text: 'modern ✓' } })).to.deep.include({
      content: [{ type: 'text', text: 'modern ✓' }],
    });
    expect(log.some((l) => l.includes('translating'))).to.equal(false);
  });

  it('answers envelope, header and version errors with 400, the revision codes, data and the request id', async () => {
    ({ bridge, log } = await served(SDK2_DUAL));
    const url = bridge.url!;
    // MCP-Protocol-Version: 2026-07-28 makes a request modern even when its _meta is gone or broken.
    const noMeta = await post(url, { id: 'a', method: 'tools/list', params: {} });
    expect([noMeta.status, noMeta.body.id, noMeta.body.error?.code]).to.deep.equal([400, 'a', -32602]);
    const noVersion = await post(url, { id: 'b', method: 'tools/list', params: { _meta: { [CAPABILITIES]: {} } } });
    expect([noVersion.status, noVersion.body.id, noVersion.body.error?.code]).to.deep.equal([400, 'b', -32602]);
    const badLevel = await post(url, { id: 'c', method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'loud' } } });
    expect([badLevel.status, badLevel.body.error?.code]).to.deep.equal([400, -32602]);
    // The body names a version the header does not: HeaderMismatch, before any version question.
    const mismatch = await post(url, { id: 'd', method: 'tools/list', params: { _meta: { ...META, [VERSION]: 'v999.0.0' } } });
    expect([mismatch.status, mismatch.body.id, mismatch.body.error?.code]).to.deep.equal([400, 'd', -32020]);
    // A Base64 form that is not padded, canonical Base64 is refused in Mcp-Name as in Mcp-Param-*.
    const unpadded = await post(
      url,
      { id: 'n', method: 'tools/call', params: { _meta: META, name: 'zh', arguments: {} } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': '=?base64?emg?=' },
    );
    expect([unpadded.status, unpadded.body.id, unpadded.body.error?.code]).to.deep.equal([400, 'n', -32020]);
    expect(unpadded.body.error?.message).to.include('malformed');
    // Both name one serve does not speak: UnsupportedProtocolVersion, with what is supported and what was asked.
    const future = await post(
      url,
      { id: 'e', method: 'tools/list', params: { _meta: { ...META, [VERSION]: '2099-01-01' } } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );
    expect([future.status, future.body.id, future.body.error?.code]).to.deep.equal([400, 'e', -32022]);
    expect(future.body.error?.data).to.deep.equal({ supported: ['2026-07-28'], requested: '2099-01-01' });
    // A legacy request with an unknown header version: the same error, listing every version serve speaks.
    const legacy = await post(
      url,
      { id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { 'mcp-protocol-version': 'v9' },
    );
    expect([legacy.status, legacy.body.id, legacy.body.error?.code]).to.deep.equal([400, 1, -32022]);
    const data = legacy.body.error!.data as { requested: string; supported: string[] };
    expect(data.requested).to.equal('v9');
    expect(data.supported).to.include.members(['2026-07-28', '2025-11-25']);
  });

  it("sends a modern child's own envelope refusal (-32602 naming the envelope) as 400, and its other -32602s as answers", async () => {
    ({ bridge, log } = await served(CONFORMANCE));
    // serve's own check passes this one (capabilities is an object); the child finds sampling malformed.
    const refused = await post(bridge.url!, { id: 3, method: 'tools/list', params: { _meta: { ...META, [CAPABILITIES]: { sampling: 'yes' } } } });
    expect([refused.status, refused.body.id, refused.body.error?.code]).to.deep.equal([400, 3, -32602]);
    const missing = await post(
      bridge.url!,
      { id: 4, method: 'resources/read', params: { _meta: META, uri: 'test://nothing-here' } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': 'test://nothing-here' },
    );
    expect([missing.status, missing.body.id, missing.body.error?.code]).to.deep.equal([200, 4, -32602]);
  });

  describe('a translated legacy child', () => {
    it('answers the methods the revision removed with 404 and -32601, itself', async () => {
      ({ bridge, log } = await served(EVERYTHING));
      for (const method of ['ping', 'initialize', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']) {
        const answer = await post(bridge.url!, {
          id: method,
          method,
          params: { _meta: META, uri: 'demo://resource/static/document/architecture.md', level: 'info' },
        });
        expect([method, answer.status, answer.body.id, answer.body.error?.code]).to.deep.equal([method, 404, method, -32601]);
      }
      expect(log.some((l) => l.includes('translating'))).to.equal(true);
    });

    it("takes each request's capabilities: a question the caller did not declare gets it -32021; another caller's call completes", async () => {
      ({ bridge, log } = await served(EVERYTHING));
      // The first client declares nothing: it must not fix what the shared session can ask of every client.
      const plain = await connect({ type: 'http', url: bridge.url! });
      open.push(plain);
      const refused = await plain.request('tools/call', { name: 'trigger-elicitation-request', arguments: {} }).catch((err: unknown) => err);
      expect((refused as { code?: number }).code).to.equal(-32021);
      expect((refused as { data?: unknown }).data).to.deep.equal({ requiredCapabilities: { elicitation: {} } });
      const asking = await connect(
        { type: 'http', url: bridge.url! },
        { onSpawn: (conn) => conn.onRequest('elicitation/create', () => ({ action: 'accept', content: FILLED_FORM })) },
      );
      open.push(asking);
      const done = (await asking.request('tools/call', { name: 'trigger-elicitation-request', arguments: {} })) as { content: unknown[] };
      expect(JSON.stringify(done.content)).to.include('Ada');
      // The refused call was cancelled, and the child goes on answering.
      expect(await plain.request('tools/call', { name: 'echo', arguments: { message: 'still here' } })).to.deep.include({
        content: [{ type: 'text', text: 'Echo: still here' }],
      });
    });

    it('answers a roots request the child makes of its own accord during a call of a client without roots as a legacy client would (-32601), and the call goes on', async () => {
      ({ bridge, log } = await served({ command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/asks-roots.js`] }));
      const plain = await connect({ type: 'http', url: bridge.url! });
      open.push(plain);
      expect(plain.era).to.equal('modern');
      expect(await plain.request('tools/call', { name: 'any', arguments: {} })).to.deep.equal({
        content: [{ type: 'text', text: 'roots: error -32601' }],
      });
    });

    it("serves subscriptions/listen from the child's resources/subscribe: acknowledged first, then only the URIs asked, with the listen's id", async () => {
      ({ bridge, log } = await served(SUBSCRIBER));
      const uri = 'file:///watched.txt';
      const stream = await openStream(bridge.url!, {
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'listen-1',
          method: 'subscriptions/listen',
          params: { _meta: META, notifications: { resourceSubscriptions: [uri], toolsListChanged: true } },
        }),
      });
      expect(stream.status).to.equal(200);
      await stream.until(4);
      const messages = stream.events.map((e) => JSON.parse(e.data!) as { method: string; params: Record<string, unknown> });
      expect(messages[0]!.method).to.equal('notifications/subscriptions/acknowledged');
      // The child declares resource subscriptions but no list changes: only what it can give is acknowledged.
      expect(messages[0]!.params).to.deep.equal({
        notifications: { resourceSubscriptions: [uri] },
        _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' },
      });
      for (const m of messages.slice(1)) {
        expect(m).to.deep.equal({
          jsonrpc: '2.0',
          method: 'notifications/resources/updated',
          params: { uri, _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } },
        });
      }
      stream.drop();
      await stream.ended;
    });
  });
});
