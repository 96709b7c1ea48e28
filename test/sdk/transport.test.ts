import { Client as Client2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StdioTransport } from '../../lib/sdk/stdio.js';
import { ROOT } from '../helpers/fixtures.js';
import { gone } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../helpers/poll.js';

const pkg = (name: string): string => `${ROOT}node_modules/@modelcontextprotocol/${name}/dist/index.js`;
const testServer = (name: string, ...args: string[]) => ({
  command: process.execPath,
  args: [fileURLToPath(new URL(`../helpers/servers/${name}.js`, import.meta.url)), ...args],
});

describe("mcp-frame/sdk: StdioTransport under the MCP SDK's Client", function () {
  this.timeout(60_000);
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  const client = (): Client => {
    const c = new Client({ name: 'sdk-host', version: '1.0.0' });
    clients.push(c);
    return c;
  };

  it('talks to server-everything: tools listed, echo exact', async () => {
    const c = client();
    await c.connect(new StdioTransport({ command: process.execPath, args: [pkg('server-everything'), 'stdio'] }));
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name)).to.include('echo');
    const message = 'line\nbreak \u2028 👩‍👩‍👧 ünïcödé';
    expect(await c.callTool({ name: 'echo', arguments: { message } })).to.deep.include({ content: [{ type: 'text', text: `Echo: ${message}` }] });
  });

  it("reads server-filesystem's 12 MiB file, one message past the SDK's own 10 MB cap", async () => {
    const dir = tempDir('sdk');
    const bytes = randomBytes(12 * 1024 * 1024);
    const file = join(dir, 'random.bin');
    writeFileSync(file, bytes);
    const c = client();
    await c.connect(new StdioTransport({ command: process.execPath, args: [pkg('server-filesystem'), dir] }));
    const result = (await c.callTool({ name: 'read_media_file', arguments: { path: file } }, undefined, { timeout: 30_000 })) as {
      content: Array<{ data?: string; resource?: { blob?: string } }>;
    };
    const base64 = result.content[0]!.data ?? result.content[0]!.resource?.blob;
    expect(Buffer.from(base64!, 'base64').equals(bytes)).to.equal(true);
  });

  it('survives banner lines on stdout, reporting them through onerror', async () => {
    const c = client();
    const errors: Error[] = [];
    c.onerror = (err) => void errors.push(err);
    await c.connect(new StdioTransport(testServer('banner')));
    const { tools } = await c.listTools();
    expect(tools).to.have.length(1);
    expect(errors.map((e) => (e as { code?: string }).code)).to.include('INVALID_JSON');
    // What was skipped is in the message, short and redacted, as the SDK's own transport shows the line.
    expect(errors.map((e) => e.message).join('\n')).to.match(/line is not valid JSON: .*banner/i);
  });

  it("shows the server's stderr on this process's, as the SDK's transport does, unless stderr: 'pipe'", async () => {
    const shown: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (String(chunk).includes('from the server')) shown.push(String(chunk));
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stderr.write;
    const script = "process.stderr.write('a word from the server\\n'); setInterval(() => undefined, 1000)";
    try {
      for (const stderr of ['inherit', 'pipe'] as const) {
        const transport = new StdioTransport({ command: process.execPath, args: ['-e', script] }, { stderr });
        await transport.start();
        await until(1000, 'the stderr tail', () => !(transport.stderrTail.length === 0), 10);
        expect(transport.stderrTail, stderr).to.deep.equal(['a word from the server']);
        await transport.close();
      }
    } finally {
      process.stderr.write = write;
    }
    expect(shown).to.deep.equal(['a word from the server\n']);
  });

  it("puts a server's exit code and last stderr lines in the error the SDK's Client rejects with", async () => {
    const c = client();
    const errors: Error[] = [];
    c.onerror = (err) => void errors.push(err);
    const err = await c.connect(new StdioTransport(testServer('crash'))).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/exited with code 3; its last stderr lines: .*DEMO_API_KEY is not set/);
    expect(errors.map((e) => e.message).join('\n')).to.match(/exited with code 3/);
  });

  it("lets the MCP SDK 2.x client's auto negotiation find a legacy server that ignores the probe, and a modern one", async () => {
    const legacy = new Client2({ name: 'sdk2-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 500 } } });
    await legacy.connect(new StdioTransport(testServer('ignores-probe')));
    try {
      expect(await legacy.callTool({ name: 'x', arguments: {} })).to.deep.include({ content: [{ type: 'text', text: 'legacy' }] });
    } finally {
      await legacy.close();
    }
    const modern = new Client2({ name: 'sdk2-host', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await modern.connect(new StdioTransport(testServer('sdk2', 'modern')));
    try {
      expect(await modern.callTool({ name: 'echo', arguments: { text: 'modern ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'modern ✓' }],
      });
    } finally {
      await modern.close();
    }
  });

  it('closes a server that ignores SIGTERM, escalating to SIGKILL, and calls onclose', async function () {
    this.timeout(15_000);
    const transport = new StdioTransport(testServer('stubborn'), { shutdownGraceMs: 200 });
    let closed = 0;
    const c = new Client({ name: 'sdk-host', version: '1.0.0' });
    await c.connect(transport);
    transport.onclose = ((previous) => () => {
      closed++;
      previous?.();
    })(transport.onclose);
    const pid = transport.pid!;
    await c.close();
    expect(closed).to.equal(1);
    expect(await gone(pid)).to.equal(true);
  });
});
