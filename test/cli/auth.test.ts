// Signing in from the real binary: `call` and `bridge` on a remote entry that needs authorization, against the
// authorization server of test/helpers/oauth-server.ts. A headless user agent plays the browser: it reads the URL
// the command prints on stderr, asks the authorization endpoint, and follows the redirect to the command's
// loopback callback (or, with --no-browser, pastes the redirected URL on stdin). Then `auth status` and `logout`.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { statSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ROOT } from '../helpers/fixtures.js';
import { OAuthServer } from '../helpers/oauth-server.js';
import { deviceBrowser, startOidc } from '../helpers/oidc-server.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const TOKEN = /\b(at|rt)-[0-9a-f]{32}\b/;

interface Started {
  proc: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first match of `pattern` in stderr. */
  waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>;
  done: Promise<number | null>;
}

function start(args: string[], env: NodeJS.ProcessEnv, cwd: string): Started {
  const proc = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, ...args], { cwd, env, stdio: 'pipe' });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
    for (const w of waiters.splice(0)) w();
  });
  const done = new Promise<number | null>((resolve) => proc.on('close', resolve));
  const waitFor = (pattern: RegExp): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = pattern.exec(err);
        if (m !== null) return resolve(m);
        if (proc.exitCode !== null) return reject(new Error(`exited ${proc.exitCode} before ${pattern}: ${err}`));
        waiters.push(check);
      };
      void done.then(() => waiters.push(() => undefined) && check());
      check();
    });
  return { proc, stdout: () => out, stderr: () => err, waitFor, done };
}

/** The browser's part: the authorization URL gives a redirect to the callback, which the browser then opens. */
async function browse(url: string, follow: boolean): Promise<{ location: string; callback?: Response }> {
  const res = await fetch(url, { redirect: 'manual' });
  await res.body?.cancel();
  const location = res.headers.get('location')!;
  if (!follow) return { location };
  return { location, callback: await fetch(location) };
}

describe('mcp-frame sign-in on the command line', function () {
  this.timeout(30_000);
  let server: OAuthServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const running: Started[] = [];

  beforeEach(async () => {
    server = await OAuthServer.start();
    dir = tempDir('cli-auth');
    writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { remote: { url: server.url } } }));
    env = { ...process.env, MCP_FRAME_AUTH_DIR: join(dir, 'auth'), DISPLAY: '', WAYLAND_DISPLAY: '' };
  });

  afterEach(async () => {
    for (const r of running.splice(0)) r.proc.kill();
    await server.close();
  });

  it('call: prints the URL and the callback it waits on, takes the redirect there, keeps the tokens 0600 in a 0700 folder', async () => {
    const call = start(['tools', 'remote'], env, dir);
    running.push(call);
    const [, url] = await call.waitFor(/Open this URL to sign in:\s+(\S+)/);
    const [, callbackUri] = await call.waitFor(/waiting on (http:\/\/127\.0\.0\.1:\d+\/callback)/);
    // A redirect that is not this sign-in's is refused; the real one is taken, with no-store.
    const forged = await fetch(`${callbackUri}?code=x&state=forged`);
    expect(forged.status).to.equal(400);
    const { location, callback } = await browse(url!, true);
    expect(location.startsWith(callbackUri!)).to.equal(true);
    expect(callback!.status).to.equal(200);
    expect(callback!.headers.get('cache-control')).to.equal('no-store');
    expect(await call.done).to.equal(0);
    expect(call.stdout()).to.include('whoami');
    expect(call.stderr()).to.include('server "remote" needs authorization');
    expect(call.stderr() + call.stdout()).not.to.match(TOKEN);
    const authDir = join(dir, 'auth');
    expect(statSync(authDir).mode & 0o777).to.equal(0o700);
    const files = readdirSync(authDir);
    expect(files).to.have.length(1);
    expect(statSync(join(authDir, files[0]!)).mode & 0o777).to.equal(0o600);

    // Signed in: the next run needs no browser, and status says so without a token.
    const again = await cli(['call', 'remote', 'whoami', '--arg', 'x=1', '--trace'], { env, cwd: dir });
    expect(again.stderr).not.to.include('needs authorization');
    expect(again.stdout + again.stderr).not.to.match(TOKEN);
    expect(server.counts.authorize).to.equal(1);
    const status = await cli(['auth', 'status', 'remote'], { env, cwd: dir });
    expect(status.stdout).to.match(/^http:\/\/127\.0\.0\.1:\d+\/mcp {2}signed in \(expires /);
    expect(status.stdout).not.to.match(TOKEN);
    const listed = JSON.parse((await cli(['auth', 'status', '--json'], { env, cwd: dir })).stdout) as Array<{ signedIn: boolean }>;
    expect(listed.map((l) => l.signedIn)).to.deep.equal([true]);
    const out = await cli(['auth', 'logout', 'remote'], { env, cwd: dir });
    expect(out.stderr).to.include('signed out of "remote"');
    expect((await cli(['auth', 'status', 'remote'], { env, cwd: dir })).stdout).to.include('not signed in');
  });

  it('call --no-browser: takes the redirected URL pasted on stdin', async () => {
    const call = start(['call', 'remote', 'tools/list', '--no-browser'], env, dir);
    running.push(call);
    const [, url] = await call.waitFor(/Open this URL to sign in:\s+(\S+)/);
    await call.waitFor(/paste here the URL/);
    const { location } = await browse(url!, false);
    call.proc.stdin.write(`not a url\n${location}\n`);
    expect(await call.done).to.equal(0);
    expect(JSON.parse(call.stdout()).tools[0].name).to.equal('whoami');
  });

  it('fails with exit code 7 and AUTH_TIMEOUT when nobody signs in within --auth-timeout', async () => {
    const result = await cli(['tools', 'remote', '--auth-timeout', '500'], { env, cwd: dir });
    expect(result.code).to.equal(7);
    expect(result.stderr).to.include('AUTH_TIMEOUT');
  });

  it('two bridges for one server open one sign-in and share it; neither reads the host for it', async () => {
    const a = start(['bridge', 'remote', '--config', join(dir, '.mcp.json')], env, dir);
    const b = start(['bridge', 'remote', '--config', join(dir, '.mcp.json')], env, dir);
    running.push(a, b);
    const init = (id: number): string =>
      `${JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`;
    a.proc.stdin.write(init(1));
    b.proc.stdin.write(init(2));
    // One of them signs in; the other waits on the store's lock and then uses the tokens.
    const first = await Promise.race([a.waitFor(/Open this URL to sign in:\s+(\S+)/), b.waitFor(/Open this URL to sign in:\s+(\S+)/)]);
    await browse(first[1]!, true);
    const answered = (s: Started): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => (s.stdout().includes('"protocolVersion"') ? resolve() : void setTimeout(check, 20));
        check();
      });
    await Promise.all([answered(a), answered(b)]);
    expect(server.counts.authorize).to.equal(1);
    expect([a.stderr(), b.stderr()].filter((e) => e.includes('Open this URL'))).to.have.length(1);
    a.proc.stdin.end();
    b.proc.stdin.end();
    expect(await a.done).to.equal(0);
    expect(await b.done).to.equal(0);
  });

  it('refuses a client secret written in the config file', async () => {
    writeFileSync(
      join(dir, '.mcp.json'),
      JSON.stringify({ mcpServers: { remote: { url: server.url, auth: { clientId: 'c', clientSecret: 'hunter2-secret' } } } }),
    );
    const result = await cli(['tools', 'remote'], { env, cwd: dir });
    expect(result.code).to.equal(3);
    expect(result.stderr).to.include('mcpServers.remote.auth.clientSecret');
    expect(result.stderr).not.to.include('hunter2');
  });

  it('auth login, status and logout take a URL where a server name goes', async () => {
    const host = new URL(server.url).host;
    const login = start(['auth', 'login', server.url], env, dir);
    running.push(login);
    const [, url] = await login.waitFor(/Open this URL to sign in:\s+(\S+)/);
    await browse(url!, true);
    expect(await login.done).to.equal(0);
    expect(login.stderr()).to.include(`signed in to "${host}"`);
    expect((await cli(['auth', 'status', server.url], { env, cwd: dir })).stdout).to.match(/ {2}signed in \(expires /);
    // Signed in already: said, and no second sign-in.
    const again = await cli(['auth', 'login', server.url], { env, cwd: dir });
    expect(again.code).to.equal(0);
    expect(again.stderr).to.include(`already signed in to "${host}"`);
    expect(again.stderr).not.to.match(TOKEN);
    expect(server.counts.authorize).to.equal(1);
    const out = await cli(['auth', 'logout', server.url], { env, cwd: dir });
    expect(out.stderr).to.include(`signed out of "${server.url}"`);
    expect((await cli(['auth', 'status', server.url], { env, cwd: dir })).stdout).to.include('not signed in');
  });

  it("--authorize-param and an entry's auth.params go into the authorization request; the flow's own parameters are refused", async () => {
    writeFileSync(
      join(dir, '.mcp.json'),
      JSON.stringify({ mcpServers: { remote: { url: server.url, auth: { params: { access_type: 'offline', audience: 'from-entry' } } } } }),
    );
    const call = start(['tools', 'remote', '--authorize-param', 'audience=api://files'], env, dir);
    running.push(call);
    const [, url] = await call.waitFor(/Open this URL to sign in:\s+(\S+)/);
    const asked = new URL(url!).searchParams;
    expect(asked.get('access_type')).to.equal('offline');
    expect(asked.get('audience')).to.equal('api://files');
    await browse(url!, true);
    expect(await call.done).to.equal(0);
    const refused = await cli(['tools', 'remote', '--authorize-param', 'scope=admin'], { env, cwd: dir });
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('--authorize-param may not set scope');
    writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { remote: { url: server.url, auth: { params: { resource: 'x' } } } } }));
    const inEntry = await cli(['tools', 'remote'], { env, cwd: dir });
    expect(inEntry.code).to.equal(3);
    expect(inEntry.stderr).to.include('auth.params may not set resource');
  });

  it('--client-id signs in as a client registered by hand, its secret from MCP_FRAME_CLIENT_SECRET: nothing registered', async () => {
    const secret = 'pre-registered-secret-0123456789';
    server.preRegister('registered-by-hand', secret);
    const call = start(['tools', 'remote', '--client-id', 'registered-by-hand'], { ...env, MCP_FRAME_CLIENT_SECRET: secret }, dir);
    running.push(call);
    const [, url] = await call.waitFor(/Open this URL to sign in:\s+(\S+)/);
    expect(new URL(url!).searchParams.get('client_id')).to.equal('registered-by-hand');
    await browse(url!, true);
    expect(await call.done).to.equal(0);
    expect(server.counts.register).to.equal(0);
    expect(call.stdout() + call.stderr()).not.to.include(secret);
    // The token request proved the client with that secret (Basic, as the server advertises).
    const token = server.log.find((l) => l.path === '/token')!;
    expect(Buffer.from(token.authorization!.replace(/^Basic /, ''), 'base64').toString()).to.equal(`registered-by-hand:${secret}`);
  });

  it("against a provider that refuses the resource parameter: the refusal names --no-resource, which signs in; so does the entry's auth.resource: false", async () => {
    server.faults.refuseResource = true;
    const first = start(['tools', 'remote'], env, dir);
    running.push(first);
    await browse((await first.waitFor(/Open this URL to sign in:\s+(\S+)/))[1]!, true);
    expect(await first.done).to.equal(7);
    expect(first.stderr()).to.include('AADSTS9010010');
    expect(first.stderr()).to.include('--no-resource');
    const second = start(['tools', 'remote', '--no-resource'], env, dir);
    running.push(second);
    const [, url] = await second.waitFor(/Open this URL to sign in:\s+(\S+)/);
    expect(new URL(url!).searchParams.has('resource')).to.equal(false);
    await browse(url!, true);
    expect(await second.done).to.equal(0);
    expect(second.stdout()).to.include('whoami');
    await cli(['auth', 'logout', 'remote'], { env, cwd: dir });
    writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { remote: { url: server.url, auth: { resource: false } } } }));
    const third = start(['tools', 'remote'], env, dir);
    running.push(third);
    await browse((await third.waitFor(/Open this URL to sign in:\s+(\S+)/))[1]!, true);
    expect(await third.done).to.equal(0);
    expect(server.resources.slice(-2)).to.deep.equal([undefined, undefined]);
  });

  it('two processes sharing the store refresh once: the one that waited takes the new tokens, and a provider that revokes on reuse revokes nothing', async () => {
    // 2 s tokens are refreshed after 1 s; a slow token endpoint keeps the first refresh under way while the second process asks.
    server.faults = { accessTtl: 2, tokenDelayMs: 400, revokeOnReuse: true };
    const first = start(['tools', 'remote'], env, dir);
    running.push(first);
    await browse((await first.waitFor(/Open this URL to sign in:\s+(\S+)/))[1]!, true);
    expect(await first.done).to.equal(0);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const [a, b] = await Promise.all([
      cli(['call', 'remote', 'tools/list', '--auth-timeout', '3000'], { env, cwd: dir }),
      cli(['call', 'remote', 'tools/list', '--auth-timeout', '3000'], { env, cwd: dir }),
    ]);
    expect([a.code, b.code], a.stderr + b.stderr).to.deep.equal([0, 0]);
    expect(a.stderr + b.stderr).not.to.include('needs authorization');
    expect(server.counts.refresh).to.equal(1);
    expect(server.counts.refreshReused).to.equal(0);
    expect(server.counts.authorize).to.equal(1);
  });

  it('signs in with the device grant where no browser can open and the provider offers it (no port bound); --device-code fails where it is not offered', async () => {
    const oidc = await startOidc({ device: true });
    try {
      const call = start(['tools', '--url', oidc.url], env, dir);
      running.push(call);
      const [, url] = await call.waitFor(/On any device, open\s+(\S+)\s+and check it shows the code ([A-Z-]+)/);
      expect(call.stderr()).not.to.match(/waiting on http/);
      await deviceBrowser(url!);
      expect(await call.done).to.equal(0);
      expect(call.stdout()).to.include('whoami');
      expect(oidc.counts.authorizations).to.equal(1);
    } finally {
      await oidc.close();
    }
    const refused = await cli(['tools', 'remote', '--device-code'], { env, cwd: dir });
    expect(refused.code).to.equal(7);
    expect(refused.stderr).to.include('offers no device authorization grant (RFC 8628)');
  });
});
