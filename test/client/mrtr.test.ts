// One handler API for both eras: connection.onRequest('elicitation/create' | 'sampling/createMessage' |
// 'roots/list') answers a legacy server's own requests and a modern server's input_required results (multi
// round-trip requests), with the same handler code. And the handshake's edge cases between eras: -32022 with
// only legacy versions, a server that starts slowly and fixed its era on the probe, the log level.
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { type Connection, MAX_INPUT_ROUNDS } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { ConnectionError } from '../../lib/client/errors.js';
import { ROOT } from '../helpers/fixtures.js';
import { FILLED_FORM } from '../helpers/elicitation.js';
import { sdk2Http } from '../helpers/sdk2.js';
import { rejection } from '../helpers/rejection.js';

const server = (name: string, ...args: string[]) => ({
  command: process.execPath,
  args: [fileURLToPath(new URL(`../helpers/servers/${name}.js`, import.meta.url)), ...args],
});
const everything = { command: process.execPath, args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'] };

describe('one handler API for server-to-client requests, both eras', function () {
  this.timeout(30_000);
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  /** The handlers a host registers once: the same code for a legacy and a modern server. */
  function handlers(seen: string[]) {
    return (c: Connection): void => {
      c.onRequest('elicitation/create', (params) => {
        seen.push(`elicit: ${String((params as { message: string }).message)}`);
        return {
          action: 'accept',
          content: FILLED_FORM,
        };
      });
      c.onRequest('sampling/createMessage', () => {
        seen.push('sample');
        return { role: 'assistant', content: { type: 'text', text: 'old pond, a frog' }, model: 'test-model', stopReason: 'endTurn' };
      });
      c.onRequest('roots/list', () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
    };
  }

  const open2 = async (entry: { command: string; args: string[] }, seen: string[]): Promise<Connection> => {
    const c = await connect(entry, { onSpawn: handlers(seen) });
    open.push(c);
    return c;
  };

  it('completes an elicitation-driven tool call on a modern server (input_required, then the call again)', async () => {
    const seen: string[] = [];
    const c = await open2(server('sdk2', 'modern'), seen);
    expect(c.era).to.equal('modern');
    const result = (await c.request('tools/call', { name: 'deploy', arguments: { env: 'prod' } })) as { content: Array<{ text: string }> };
    // The server's requestState came back byte for byte (non-ASCII included).
    expect(result.content[0]!.text).to.equal('deployed to prod (state deploy:prod:✓)');
    expect(seen).to.deep.equal(['elicit: Deploy to prod?']);
  });

  it('completes one on a legacy server (its own elicitation/create request) with the same handlers', async () => {
    const seen: string[] = [];
    const c = await open2(everything, seen);
    expect(c.era).to.equal('legacy');
    const result = (await c.request('tools/call', { name: 'trigger-elicitation-request', arguments: {} })) as { content: Array<{ text: string }> };
    expect(JSON.stringify(result.content)).to.include('Ada');
    expect(seen).to.have.length(1);
  });

  it('answers sampling and roots the modern way, and declares the capabilities its handlers give', async () => {
    const seen: string[] = [];
    const c = await open2(server('sdk2', 'modern'), seen);
    const poem = (await c.request('tools/call', { name: 'haiku', arguments: {} })) as { content: Array<{ text: string }> };
    expect(poem.content[0]!.text).to.equal('poem: old pond, a frog');
    const roots = (await c.request('tools/call', { name: 'roots', arguments: {} })) as { content: Array<{ text: string }> };
    expect(roots.content[0]!.text).to.equal('file:///work');
  });

  it('fails with NO_HANDLER, naming the method, when no handler answers what the server asks', async () => {
    // Declared by the option, not by a handler: the server asks, and nothing here can answer.
    const c = await connect(server('sdk2', 'modern'), { capabilities: { elicitation: {} } });
    open.push(c);
    const err = (await rejection(c.request('tools/call', { name: 'deploy', arguments: { env: 'x' } }))) as ConnectionError;
    expect(err.code).to.equal('NO_HANDLER');
    expect(err.message).to.include("connection.onRequest('elicitation/create'");
    // Without the capability declared at all, the server itself refuses to ask (-32021): nothing is retried.
    const bare = await connect(server('sdk2', 'modern'), {});
    open.push(bare);
    expect(((await rejection(bare.request('tools/call', { name: 'deploy', arguments: { env: 'x' } }))) as unknown as { code: number }).code).to.equal(
      -32021,
    );
  });

  it(`gives up after ${MAX_INPUT_ROUNDS} rounds on a server that asks forever`, async () => {
    const seen: string[] = [];
    const c = await open2(server('sdk2', 'modern'), seen);
    const err = (await rejection(c.request('tools/call', { name: 'pester', arguments: {} }))) as ConnectionError;
    expect(err.code).to.equal('INPUT_ROUNDS');
    expect(seen).to.have.length(MAX_INPUT_ROUNDS);
  });
});

describe('the handshake between eras', function () {
  this.timeout(30_000);

  it('falls back to initialize at the newest shared legacy version when -32022 names only legacy ones', async () => {
    const c = await connect(server('era-quirks', 'legacy-only'));
    try {
      expect(c.era).to.equal('legacy');
      expect(c.protocolVersion).to.equal('2025-06-18');
      expect((c.initializeResult!.serverInfo as { name: string }).name).to.equal('legacy-only asked 2025-06-18');
    } finally {
      await c.close();
    }
  });

  it('speaks modern to a slow server that fixed its era on the probe it answered late, never rejecting with an RpcError', async () => {
    const c = await connect(server('era-quirks', 'slow-dual'), { probeTimeoutMs: 200 });
    try {
      expect(c.era).to.equal('modern');
      const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
      expect(tools[0]!.name).to.equal('modern-tool');
    } finally {
      await c.close();
    }
  });

  it('asks for a log level per request of a modern server, and with logging/setLevel of a legacy one', async () => {
    const modern = await sdk2Http('modern');
    try {
      const c = await connect({ type: 'http', url: modern.url }, { logLevel: 'warning' });
      await c.request('tools/list');
      await c.close();
      const listed = modern.seen.map((r) => r.body).find((b) => b.includes('"tools/list"'))!;
      expect(JSON.parse(listed).params._meta['io.modelcontextprotocol/logLevel']).to.equal('warning');
    } finally {
      await modern.close();
    }
    const sent: string[] = [];
    const legacy = await connect(everything, {
      logLevel: 'error',
      onSpawn: (c) => c.on('frame', (t: { direction: string; preview: string }) => t.direction === 'send' && sent.push(t.preview)),
    });
    await legacy.close();
    expect(sent.some((p) => p.includes('"method":"logging/setLevel"') && p.includes('"level":"error"'))).to.equal(true);
  });
});
