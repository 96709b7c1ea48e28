// Corporate proxies: HTTPS_PROXY, HTTP_PROXY and NO_PROXY with NODE_USE_ENV_PROXY=1 or --use-env-proxy, through a
// CONNECT tunnel of a real proxy (Debian's tinyproxy, started here), for the requests to a remote server and to
// its authorization server. The real binary, against server-everything over HTTP and the test authorization server.
import { expect } from 'chai';
import { proxyFor } from '../../lib/client/proxy.js';
import { startEverything } from '../helpers/everything-http.js';
import { OAuthServer } from '../helpers/oauth-server.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';
import { requireTinyproxy, startTinyproxy, type Tinyproxy } from '../helpers/tinyproxy.js';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import net from 'node:net';
import { ROOT } from '../helpers/fixtures.js';
import { until } from '../helpers/poll.js';

describe('proxies from the environment', function () {
  this.timeout(60_000);

  it('picks the proxy by scheme, only when switched on, and not for what NO_PROXY names', () => {
    const on = { NODE_USE_ENV_PROXY: '1', HTTPS_PROXY: 'http://proxy.corp:3128', HTTP_PROXY: 'http://plain.corp:8080' };
    expect(proxyFor(new URL('https://mcp.example.com/mcp'), on)?.href).to.equal('http://proxy.corp:3128/');
    expect(proxyFor(new URL('http://mcp.example.com/mcp'), on)?.href).to.equal('http://plain.corp:8080/');
    expect(proxyFor(new URL('https://mcp.example.com/mcp'), { ...on, NODE_USE_ENV_PROXY: undefined })).to.equal(undefined);
    const no = (NO_PROXY: string, url = 'https://api.mcp.example.com:8443/mcp') => proxyFor(new URL(url), { ...on, NO_PROXY });
    expect(no('example.com')).to.equal(undefined);
    expect(no('.example.com')).to.equal(undefined);
    expect(no('*.example.com')).to.equal(undefined);
    expect(no('other.com, api.mcp.example.com:8443')).to.equal(undefined);
    expect(no('*')).to.equal(undefined);
    expect(no('api.mcp.example.com:443')?.host).to.equal('proxy.corp:3128');
    expect(no('ample.com')?.host).to.equal('proxy.corp:3128');
    expect(no('127.0.0.1', 'http://127.0.0.1:9/mcp')).to.equal(undefined);
  });

  it('says at once that a proxy closed the CONNECT without answering, and names the proxy, not the server', async () => {
    const connects: string[] = [];
    const hangsUp = net.createServer((socket) => {
      socket.once('data', (d: Buffer) => {
        connects.push(d.toString('latin1').split('\r\n')[0]!);
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => hangsUp.listen(0, '127.0.0.1', resolve));
    try {
      const proxyUrl = `http://127.0.0.1:${(hangsUp.address() as net.AddressInfo).port}`;
      const started = Date.now();
      const run = await cli(['tools', '--use-env-proxy', '--timeout', '20000', '--url', 'http://mcp.example.test/mcp'], {
        env: { ...process.env, HTTP_PROXY: proxyUrl, NO_PROXY: '' },
      });
      expect(run.code).to.not.equal(0);
      expect(Date.now() - started, 'it did not wait out its timeout').to.be.below(10_000);
      expect(run.stderr).to.include(
        `the proxy 127.0.0.1:${new URL(proxyUrl).port} closed the connection without answering CONNECT to mcp.example.test:80`,
      );
      expect(connects[0]).to.equal('CONNECT mcp.example.test:80 HTTP/1.1');
    } finally {
      await new Promise((resolve) => hangsUp.close(resolve));
    }
  });

  describe('through tinyproxy', () => {
    let proxy: Tinyproxy;
    before(function () {
      requireTinyproxy(this);
    });
    beforeEach(async () => {
      proxy = await startTinyproxy();
    });
    afterEach(async () => {
      await proxy.close();
    });

    it('call --use-env-proxy reaches a remote server through the tunnel; without the switch, or with NO_PROXY, directly', async () => {
      const everything = await startEverything('streamableHttp');
      try {
        const target = new URL(everything.url).host;
        const env = { ...process.env, HTTP_PROXY: proxy.url, NO_PROXY: '' };
        const through = await cli(['tools', '--use-env-proxy', '--url', everything.url], { env });
        expect(through.code, through.stderr).to.equal(0);
        expect(through.stdout).to.match(/^echo\s/m);
        expect(proxy.tunnels()).to.include(target);
        const before = proxy.tunnels().length;
        const direct = await cli(['tools', '--url', everything.url], { env });
        expect(direct.code, direct.stderr).to.equal(0);
        const bypassed = await cli(['tools', '--url', everything.url], { env: { ...env, NODE_USE_ENV_PROXY: '1', NO_PROXY: '127.0.0.1' } });
        expect(bypassed.code, bypassed.stderr).to.equal(0);
        expect(proxy.tunnels()).to.have.length(before);
        // NODE_USE_ENV_PROXY=1 alone is the same switch.
        const byEnv = await cli(['tools', '--url', everything.url], { env: { ...env, NODE_USE_ENV_PROXY: '1' } });
        expect(byEnv.code, byEnv.stderr).to.equal(0);
        expect(proxy.tunnels().length).to.be.greaterThan(before);
      } finally {
        await everything.stop();
      }
    });

    it('signs in through the proxy too: discovery, registration and the token request each through a tunnel', async () => {
      const server = await OAuthServer.start();
      const dir = tempDir('proxy-auth-');
      try {
        const env = { ...process.env, HTTP_PROXY: proxy.url, NO_PROXY: '', MCP_FRAME_AUTH_DIR: join(dir, 'auth'), DISPLAY: '', WAYLAND_DISPLAY: '' };
        const proc = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'tools', '--use-env-proxy', '--url', server.url], { env, cwd: dir });
        let stderr = '';
        let stdout = '';
        proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        const done = new Promise<number | null>((resolve) => proc.on('close', resolve));
        await until(10000, 'the sign-in URL on stderr', () => /Open this URL to sign in:\s+\S+/.test(stderr), 25);
        const url = /Open this URL to sign in:\s+(\S+)/.exec(stderr)![1]!;
        // The user's browser goes directly, as a browser would.
        const authorize = await fetch(url, { redirect: 'manual' });
        await fetch(authorize.headers.get('location')!);
        expect(await done, stderr).to.equal(0);
        expect(stdout).to.include('whoami');
        const origin = new URL(server.url).host;
        // Metadata (two documents), registration and the token request on tunnels of their own, beside the MCP requests'.
        expect(proxy.tunnels().filter((t) => t === origin).length).to.be.at.least(5);
        expect(server.authServerRequests.map((l) => l.path)).to.include.members(['/register', '/token']);
      } finally {
        await server.close();
      }
    });
  });
});
