// The parts of signing in that are not the flow: the stores and their locks, where tokens live by default, when
// a browser may open, and a config entry's `auth`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { browserCommand, canOpenBrowser } from '../../lib/cli/auth.js';
import { loopbackAuthorizer } from '../../lib/client/auth/agents.js';
import { ConfigError, parseConfig } from '../../lib/client/config.js';
import { defaultAuthDir, fileAuthStore, memoryAuthStore } from '../../lib/client/auth/store.js';
import { applicationType, resourceAllowed } from '../../lib/client/auth/session.js';
import type { AuthStore } from '../../lib/client/auth/types.js';
import { rawTarget } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/temp.js';

const FROM_ENV = '${env:SECRET}';

const record = (token: string) => ({ resource: 'https://a.example/mcp', tokens: { accessToken: token, tokenType: 'Bearer' } });

/** Two holders of the lock in turn: the second gets it only after the first lets go. */
async function exclusive(a: AuthStore, b: AuthStore): Promise<string[]> {
  const order: string[] = [];
  const releaseA = await a.lock!('k');
  order.push('a locked');
  const second = b.lock!('k').then((release) => {
    order.push('b locked');
    return release;
  });
  await new Promise((resolve) => setTimeout(resolve, 150));
  order.push('a releases');
  await releaseA();
  await (await second)();
  return order;
}

describe('auth stores', () => {
  it('memoryAuthStore keeps copies, deletes, and locks in turn', async () => {
    const store = memoryAuthStore();
    const r = record('at-1');
    await store.set('k', r);
    r.tokens.accessToken = 'changed';
    expect((await store.get('k'))?.tokens?.accessToken).to.equal('at-1');
    await store.delete('k');
    expect(await store.get('k')).to.equal(undefined);
    expect(await exclusive(store, store)).to.deep.equal(['a locked', 'a releases', 'b locked']);
  });

  it('fileAuthStore writes whole files (no temporary left), lists them, and locks across instances', async () => {
    const dir = tempDir('store');
    const a = fileAuthStore({ dir });
    const b = fileAuthStore({ dir });
    await a.set('https://a.example/mcp', record('at-1'));
    await a.set('https://b.example/mcp', record('at-2'));
    expect((await b.get('https://a.example/mcp'))?.tokens?.accessToken).to.equal('at-1');
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).to.deep.equal([]);
    expect((await b.list()).map((e) => e.key)).to.have.members(['https://a.example/mcp', 'https://b.example/mcp']);
    await b.delete('https://a.example/mcp');
    expect(await a.get('https://a.example/mcp')).to.equal(undefined);
    expect(await exclusive(a, b)).to.deep.equal(['a locked', 'a releases', 'b locked']);
  });

  it('takes over a lock left by a process that is gone, and not one whose process lives', async () => {
    const dir = tempDir('store');
    const store = fileAuthStore({ dir, lockTimeoutMs: 500 });
    await store.set('k', record('x'));
    const lockFile = join(
      dir,
      readdirSync(dir)
        .find((f) => f.endsWith('.json'))!
        .replace(/\.json$/, '.lock'),
    );
    writeFileSync(lockFile, JSON.stringify({ pid: 2 ** 22 + 12345, at: Date.now() }));
    const started = Date.now();
    await (await store.lock!('k'))();
    expect(Date.now() - started).to.be.lessThan(400);
    writeFileSync(lockFile, JSON.stringify({ pid: process.pid, at: Date.now() }));
    const err = await store.lock!('k').then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/held for more than 500 ms/);
  });

  it("lets one waiter take over a dead holder's lock when several judge it stale at once, and never two hold it", async () => {
    const dir = tempDir('store');
    const stores = Array.from({ length: 8 }, () => fileAuthStore({ dir, lockTimeoutMs: 10_000 }));
    await stores[0]!.set('k', record('x'));
    const lockFile = join(
      dir,
      readdirSync(dir)
        .find((f) => f.endsWith('.json'))!
        .replace(/\.json$/, '.lock'),
    );
    for (let round = 0; round < 5; round++) {
      writeFileSync(lockFile, JSON.stringify({ pid: 2 ** 22 + 12345 + round, at: Date.now() }));
      let holders = 0;
      let most = 0;
      await Promise.all(
        stores.map(async (store) => {
          const release = await store.lock!('k');
          most = Math.max(most, ++holders);
          await new Promise((resolve) => setTimeout(resolve, 20));
          holders--;
          await release();
        }),
      );
      expect(most, `round ${round}`).to.equal(1);
    }
  });

  it('releases only its own lock: one another process took over is left in place', async () => {
    const dir = tempDir('store');
    const store = fileAuthStore({ dir });
    await store.set('k', record('x'));
    const release = await store.lock!('k');
    const lockFile = join(dir, readdirSync(dir).find((f) => f.endsWith('.lock'))!);
    // Judged stale elsewhere (a long sign-in) and taken over by another process: the file is now that one's.
    const theirs = JSON.stringify({ pid: process.pid, at: Date.now(), nonce: 'another-process' });
    writeFileSync(lockFile, theirs);
    await release();
    expect(readFileSync(lockFile, 'utf8')).to.equal(theirs);
  });

  it('lives in $MCP_FRAME_AUTH_DIR, else $XDG_CONFIG_HOME/mcp-frame/auth, else ~/.config/mcp-frame/auth', () => {
    expect(defaultAuthDir({ MCP_FRAME_AUTH_DIR: '/x/auth', XDG_CONFIG_HOME: '/y' })).to.equal('/x/auth');
    expect(defaultAuthDir({ XDG_CONFIG_HOME: '/y' })).to.equal('/y/mcp-frame/auth');
    expect(defaultAuthDir({})).to.match(/\/\.config\/mcp-frame\/auth$/);
  });
});

describe('signing in: small rules', () => {
  it('opens a browser only on a terminal with a display, and never over SSH', () => {
    const display = { DISPLAY: ':0' };
    expect(canOpenBrowser(display, true)).to.equal(true);
    expect(canOpenBrowser(display, false)).to.equal(false);
    expect(canOpenBrowser({ ...display, SSH_CONNECTION: '1.2.3.4 5 6.7.8.9 22' }, true)).to.equal(false);
    expect(canOpenBrowser({ ...display, SSH_TTY: '/dev/pts/1' }, true)).to.equal(false);
    if (process.platform === 'linux') expect(canOpenBrowser({}, true)).to.equal(false);
  });

  it('opens the browser without a shell on every platform: an authorization URL full of & stays one argument', () => {
    const url = new URL('http://host.example/authorize&calc.exe&rem=?a=1&b=2|x^y');
    expect(browserCommand(url, 'win32')).to.deep.equal(['rundll32', ['url.dll,FileProtocolHandler', url.href]]);
    expect(browserCommand(url, 'darwin')).to.deep.equal(['open', [url.href]]);
    expect(browserCommand(url, 'linux')).to.deep.equal(['xdg-open', [url.href]]);
    for (const platform of ['win32', 'darwin', 'linux'] as const) {
      const [command, args] = browserCommand(url, platform)!;
      expect(command).not.to.match(/^(cmd|cmd\.exe|sh|bash|powershell)$/i);
      expect(args.at(-1)).to.equal(url.href);
    }
    // What a hostile server's metadata may name besides http(s) is never handed to an opener.
    for (const other of ['file:///etc/passwd', 'javascript:alert(1)', 'ms-settings:', 'smb://host/share']) {
      expect(browserCommand(new URL(other), 'win32'), other).to.equal(undefined);
    }
  });

  it('the loopback callback answers 400 to a request-target that is not a path, and keeps waiting for the redirect', async () => {
    const authorize = loopbackAuthorizer({ timeoutMs: 10_000 });
    try {
      const redirectUri = await authorize.redirectUri();
      const url = new URL('https://as.example/authorize?state=s-1');
      const signal = new AbortController().signal;
      const done = authorize({ url, redirectUri, signal });
      const port = Number(new URL(redirectUri).port);
      for (const target of ['//', 'http://[', '//evil.example/callback']) {
        expect(await rawTarget(port, target), target).to.match(/^HTTP\/1\.1 400 /);
      }
      const back = await fetch(`${redirectUri}?code=c-1&state=s-1`);
      expect(back.status).to.equal(200);
      expect((await done).searchParams.get('code')).to.equal('c-1');
    } finally {
      await authorize.close();
    }
  });

  it('one loopback authorizer serves two sign-ins at once: each redirect ends its own', async () => {
    const authorize = loopbackAuthorizer({ timeoutMs: 10_000 });
    try {
      const redirectUri = await authorize.redirectUri();
      const signal = new AbortController().signal;
      const first = authorize({ url: new URL('https://a.example/authorize?state=first'), redirectUri, signal });
      const second = authorize({ url: new URL('https://b.example/authorize?state=second'), redirectUri, signal });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await fetch(`${redirectUri}?code=c-a&state=first`)).status).to.equal(200);
      expect((await first).searchParams.get('code')).to.equal('c-a');
      // The server stays for the one still waiting.
      expect((await fetch(`${redirectUri}?code=c-b&state=second`)).status).to.equal(200);
      expect((await second).searchParams.get('code')).to.equal('c-b');
      expect((await fetch(`${redirectUri}?code=c-c&state=unknown`).catch(() => undefined))?.status).to.not.equal(200);
    } finally {
      await authorize.close();
    }
  });

  it('takes a resource that is the server or a path prefix of it, on its origin only', () => {
    const server = new URL('https://a.example/api/mcp');
    expect(resourceAllowed('https://a.example/api/mcp', server)).to.equal(true);
    expect(resourceAllowed('https://a.example/api', server)).to.equal(true);
    expect(resourceAllowed('https://a.example/', server)).to.equal(true);
    expect(resourceAllowed('https://a.example/ap', server)).to.equal(false);
    expect(resourceAllowed('https://a.example/api/mcp/more', server)).to.equal(false);
    expect(resourceAllowed('https://b.example/api/mcp', server)).to.equal(false);
    expect(resourceAllowed('http://a.example/api/mcp', server)).to.equal(false);
    expect(resourceAllowed('not a url', server)).to.equal(false);
  });

  it('registers a loopback or private-scheme redirect as a native client, any other as web', () => {
    expect(applicationType('http://127.0.0.1:8765/callback')).to.equal('native');
    expect(applicationType('http://localhost/cb')).to.equal('native');
    expect(applicationType('http://[::1]:9/cb')).to.equal('native');
    expect(applicationType('com.example.app:/cb')).to.equal('native');
    expect(applicationType('https://app.example/cb')).to.equal('web');
  });

  it("reads a config entry's auth, secrets from the environment only", () => {
    const parse = (auth: unknown) =>
      parseConfig(JSON.stringify({ mcpServers: { s: { url: 'https://a.example/mcp', auth } } }), '/p/.mcp.json', { env: { SECRET: 's3cr3t-value' } });
    expect(
      parse({ clientId: 'id', clientSecret: FROM_ENV, scope: 'a b', clientMetadataUrl: 'https://c.example/m.json', callbackPort: 8765 }).mcpServers.s,
    ).to.deep.equal({
      type: 'http',
      url: 'https://a.example/mcp',
      auth: { clientId: 'id', clientSecret: 's3cr3t-value', scope: 'a b', clientMetadataUrl: 'https://c.example/m.json', callbackPort: 8765 },
    });
    const problems = [
      [{ clientSecret: 'written-here' }, 'auth.clientSecret'],
      [{ callbackPort: 70000 }, 'auth.callbackPort'],
      [{ callbackPort: '8765' }, 'auth.callbackPort'],
      [{ clientid: 'x' }, 'auth.clientid'],
      ['yes', 'auth'],
    ] as const;
    for (const [auth, path] of problems) {
      const err = (() => {
        try {
          parse(auth);
        } catch (e) {
          return e;
        }
      })() as ConfigError;
      expect(err, JSON.stringify(auth)).to.be.instanceOf(ConfigError);
      expect(err.jsonPath).to.equal(`mcpServers.s.${path}`);
      expect(err.message).not.to.include('written-here');
    }
  });
});
