// Streamable HTTP over a local socket: serve --http-socket offers /mcp, /sse and /healthz on a Unix socket made
// 0600, beside TCP or instead of it, the Host check admitting localhost; an entry's socketPath reaches it from
// connect() and from every command (a config file's, read from the file's folder).
import http from 'node:http';
import { statSync, writeFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { MCP_HEADERS } from '../helpers/raw-http.js';
import { INIT, serveProcess } from '../helpers/served.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const DEMO = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };
const WINDOWS = process.platform === 'win32';

/** One request over the socket at `path`, with `host` as its Host header. */
function overSocket(path: string, target: string, host = 'localhost', body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: path, path: target, method: body === undefined ? 'GET' : 'POST', headers: { host, ...(body === undefined ? {} : MCP_HEADERS) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('Streamable HTTP over a local socket (serve --http-socket)', function () {
  this.timeout(30_000);
  before(function () {
    if (WINDOWS) this.skip();
  });

  it('serves /mcp, /sse and /healthz on a 0600 socket alone; the clients of both eras and the legacy SSE one reach it by socketPath', async () => {
    const socketPath = join(tempDir('http-socket-'), 'mcp.sock');
    const bridge = await serve(DEMO, { http: false, httpSocket: socketPath, log: () => undefined });
    try {
      expect(bridge.url).to.equal(undefined);
      expect(bridge.httpSocketPath).to.equal(socketPath);
      expect(statSync(socketPath).mode & 0o777).to.equal(0o600);
      for (const [type, path, protocolVersion] of [
        ['http', '/mcp', '2025-11-25'],
        ['http', '/mcp', '2026-07-28'],
        ['sse', '/sse', '2025-11-25'],
      ] as const) {
        const c = await connect({ type, url: `http://localhost${path}`, socketPath }, { protocolVersion });
        try {
          expect(
            await c.request('tools/call', { name: 'echo', arguments: { text: `${type} ${protocolVersion}` } }),
            `${type} ${protocolVersion}`,
          ).to.deep.equal({
            content: [{ type: 'text', text: `${type} ${protocolVersion}` }],
          });
        } finally {
          await c.close();
        }
      }
      expect((await overSocket(socketPath, '/healthz')).status).to.equal(200);
      // The Host check still holds: a name serve does not answer to is refused.
      const foreign = await overSocket(socketPath, '/mcp', 'evil.example', INIT);
      expect(foreign.status).to.equal(403);
    } finally {
      await bridge.close();
    }
    expect(existsSync(socketPath), 'the socket removed at close').to.equal(false);
  });

  it('beside TCP: the same sessions table serves both', async () => {
    const socketPath = join(tempDir('http-socket-'), 'mcp.sock');
    const bridge = await serve(DEMO, { httpSocket: socketPath, log: () => undefined });
    try {
      const tcp = await connect({ type: 'http', url: bridge.url! }, { protocolVersion: '2025-11-25' });
      const local = await connect({ type: 'http', url: 'http://localhost/mcp', socketPath }, { protocolVersion: '2025-11-25' });
      try {
        expect(bridge.sessions).to.equal(2);
        expect(await local.request('tools/call', { name: 'echo', arguments: { text: 'local' } })).to.deep.equal({
          content: [{ type: 'text', text: 'local' }],
        });
        expect(await tcp.request('tools/call', { name: 'echo', arguments: { text: 'tcp' } })).to.deep.equal({
          content: [{ type: 'text', text: 'tcp' }],
        });
      } finally {
        await Promise.all([tcp.close(), local.close()]);
      }
    } finally {
      await bridge.close();
    }
  });

  it('mcp-frame serve --http-socket --no-http, and mcp-frame call of a config entry whose socketPath is read from the file’s folder', async () => {
    const dir = tempDir('http-socket-cli-');
    const socketPath = join(dir, 'serve.sock');
    const served = await serveProcess(['--http-socket', socketPath, '--no-http', '--', process.execPath, 'dist/examples/server.js']);
    try {
      expect(served.stderr()).to.include(`listening on http+unix:${socketPath}`);
      const config = join(dir, 'mcp.json');
      writeFileSync(config, JSON.stringify({ mcpServers: { local: { type: 'http', url: 'http://localhost/mcp', socketPath: 'serve.sock' } } }));
      const run = await cli(['call', 'local', '--config', config, 'tools/call', '{"name":"echo","arguments":{"text":"through the socket"}}']);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.include('through the socket');
      const byUrl = await cli([
        'call',
        '--url',
        'http://localhost/mcp',
        '--socket-path',
        socketPath,
        'tools/call',
        '{"name":"echo","arguments":{"text":"by url"}}',
      ]);
      expect(byUrl.code, byUrl.stderr).to.equal(0);
      expect(byUrl.stdout).to.include('by url');
      const named = await cli(['call', 'local', '--config', config, '--socket-path', socketPath, 'tools/list']);
      expect(named.code).to.equal(2);
      expect(named.stderr).to.include('--socket-path is for a server named by --url');
    } finally {
      served.proc.kill('SIGTERM');
      expect(await served.exited).to.equal(0);
    }
    expect(existsSync(socketPath)).to.equal(false);
    const same = await cli(['serve', '--http-socket', socketPath, '--socket', socketPath, '--', process.execPath, 'dist/examples/server.js']);
    expect(same.code).to.equal(2);
    expect(same.stderr).to.include('two sockets');
  });
});
