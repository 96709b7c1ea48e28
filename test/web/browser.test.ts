// mcp-frame/web in a real browser: Debian's chromium, headless, loads a page from a server on 127.0.0.1 that
// imports the built entry as it is (unbundled ES modules over HTTP, as a page would), decodes every NDJSON,
// Content-Length and SSE wire fixture whole and byte by byte through FrameDecoderStream, encodes through FrameEncoderStream, and posts what
// came out back to the server. Skipped with a message where chromium is not installed (.ci/run installs it).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import { ROOT } from '../helpers/fixtures.js';
import { tempDir } from '../helpers/temp.js';
import { checkScript, expectChecked, type WebCheck, webFixtures } from '../helpers/web-check.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((bin) => existsSync(bin));

describe('mcp-frame/web in a browser (headless chromium)', function () {
  this.timeout(120_000);

  it('decodes every NDJSON, Content-Length and SSE wire fixture whole and byte by byte as the fixtures expect, and encodes as frame(), frameContentLength() and frameSse()', async function () {
    if (CHROMIUM === undefined) {
      console.error('      skipped: chromium is not installed (apt-get install chromium; .ci/run does it)');
      this.skip();
    }
    const fixtures = webFixtures();
    const check = checkScript('/dist/lib/web/index.js', fixtures, "await fetch('/result', { method: 'POST', body: JSON.stringify(out) });");
    // The check is a module of its own, imported by the page, so that any failure (a load, a parse, a throw) is
    // reported too, not only silence.
    const page = `<!doctype html><meta charset="utf-8"><title>mcp-frame/web</title><script type="module">
import('/check.mjs').catch((err) => fetch('/result', { method: 'POST', body: JSON.stringify({ error: String((err && err.stack) || err) }) }));
</script>`;
    let settle: (body: string) => void = () => undefined;
    const result = new Promise<string>((resolve) => {
      settle = resolve;
    });
    const server = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (req.method === 'POST' && path === '/result') {
        const parts: Buffer[] = [];
        req.on('data', (c: Buffer) => parts.push(c));
        req.on('end', () => {
          res.end();
          settle(Buffer.concat(parts).toString('utf8'));
        });
        return;
      }
      if (path === '/check.html') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
      if (path === '/check.mjs') return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(check);
      // Only the built entry's folder tree is served: dist/lib, as a page would load it.
      const file = normalize(join(ROOT, path));
      if (!path.startsWith('/dist/lib/') || !file.startsWith(join(ROOT, 'dist/lib')) || !existsSync(file)) return void res.writeHead(404).end();
      const type = extname(file) === '.js' ? 'text/javascript; charset=utf-8' : 'application/octet-stream';
      res.writeHead(200, { 'content-type': type }).end(readFileSync(file));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/check.html`;
    const browser = spawn(
      CHROMIUM!,
      ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${tempDir('chromium-')}`, url],
      // A group of its own, so that its helpers (zygote, renderer, GPU) end with it.
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    let stderr = '';
    browser.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-4000);
    });
    const exited = new Promise<void>((resolve) => browser.once('exit', () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    try {
      const body = await Promise.race([
        result,
        exited.then(() => Promise.reject(new Error(`chromium exited before the page reported:\n${stderr}`))),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the page did not report within 60 s:\n${stderr}`)), 60_000);
        }),
      ]);
      const out = JSON.parse(body) as WebCheck & { error?: string };
      if (out.error !== undefined) throw new Error(`the page failed: ${out.error}`);
      expectChecked('chromium', fixtures, out);
    } finally {
      clearTimeout(timer);
      if (browser.exitCode === null && browser.signalCode === null) {
        try {
          process.kill(-browser.pid!, 'SIGKILL');
        } catch {
          browser.kill('SIGKILL');
        }
      }
      await exited;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
