// Against MCP servers that no one here wrote, installed from npm at pinned versions (devDependencies).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import type { FrameError } from '../../lib/errors.js';
import { startEverything } from '../helpers/everything-http.js';
import { ROOT } from '../helpers/fixtures.js';
import { tempDir } from '../helpers/temp.js';

const pkg = (name: string): string => `${ROOT}node_modules/@modelcontextprotocol/${name}/dist/index.js`;

describe('real MCP servers from npm', function () {
  this.timeout(60_000);
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  describe('@modelcontextprotocol/server-everything over HTTP, as a child process', () => {
    for (const [mode, type] of [
      ['streamableHttp', 'http'],
      ['sse', 'sse'],
    ] as const) {
      it(`initializes, lists its tools and echoes in its ${mode} mode, reached at 127.0.0.1`, async () => {
        const everything = await startEverything(mode);
        try {
          const c = await connect({ type, url: everything.url }, { name: `everything-${mode}` });
          open.push(c);
          expect((c.initializeResult as { serverInfo: { name: string } }).serverInfo.name).to.be.a('string');
          const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
          expect(tools.map((t) => t.name)).to.include('echo');
          const message = 'over http: ünïcödé 👋\nand a second line';
          const result = (await c.request('tools/call', { name: 'echo', arguments: { message } })) as { content: Array<{ text: string }> };
          expect(result.content[0]!.text).to.equal(`Echo: ${message}`);
          await c.close();
          open.pop();
        } finally {
          await everything.stop();
        }
      });
    }
  });

  describe('@modelcontextprotocol/server-everything', () => {
    it('initializes, lists its tools, and echoes text with newlines, U+2028 and emoji exactly', async () => {
      const invalid: FrameError[] = [];
      const c = await connect(
        { command: process.execPath, args: [pkg('server-everything'), 'stdio'] },
        {
          name: 'everything',
          onSpawn: (conn) => conn.on('invalid', (e: FrameError) => invalid.push(e)),
        },
      );
      open.push(c);
      // The newest handshake revision, which it speaks too.
      expect(c.initializeResult).to.have.property('protocolVersion', '2025-11-25');
      expect(c.protocolVersion).to.equal('2025-11-25');
      expect((c.initializeResult as { serverInfo: { name: string } }).serverInfo.name).to.be.a('string');
      const { tools } = (await c.request('tools/list')) as { tools: Array<{ name: string }> };
      expect(tools.map((t) => t.name)).to.include('echo');
      const message = 'first line\nsecond line\u2028after a line separator, 👩‍👩‍👧 🎉 and ünïcödé';
      const result = (await c.request('tools/call', { name: 'echo', arguments: { message } })) as { content: Array<{ type: string; text: string }> };
      expect(result.content).to.have.length(1);
      expect(result.content[0]!.type).to.equal('text');
      expect(result.content[0]!.text).to.equal(`Echo: ${message}`);
      expect(invalid).to.deep.equal([]);
    });
  });

  describe('@modelcontextprotocol/server-filesystem', () => {
    it("returns a 12 MiB random file through read_media_file byte for byte (one message over the SDK's 10 MB cap)", async () => {
      const dir = tempDir('fs');
      const bytes = randomBytes(12 * 1024 * 1024);
      const file = join(dir, 'random.bin');
      writeFileSync(file, bytes);
      const frames: Array<{ direction: string; bytes: number }> = [];
      const c = await connect(
        { command: process.execPath, args: [pkg('server-filesystem'), dir] },
        {
          name: 'filesystem',
          onSpawn: (conn) => conn.on('frame', (f: { direction: string; bytes: number }) => frames.push(f)),
        },
      );
      open.push(c);
      const result = (await c.request('tools/call', { name: 'read_media_file', arguments: { path: file } })) as {
        content: Array<{ type: string; data?: string; resource?: { blob?: string } }>;
      };
      const block = result.content[0]!;
      const base64 = block.data ?? block.resource?.blob;
      expect(base64, JSON.stringify(block).slice(0, 200)).to.be.a('string');
      expect(Buffer.from(base64!, 'base64').equals(bytes)).to.equal(true);
      const largest = Math.max(...frames.filter((f) => f.direction === 'receive').map((f) => f.bytes));
      expect(largest).to.be.greaterThan(10 * 1024 * 1024);
    });
  });
});
