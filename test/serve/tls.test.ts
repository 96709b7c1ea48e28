import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import { type ServeHandle, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { until } from '../helpers/poll.js';
import { MCP_HEADERS } from '../helpers/raw-http.js';
import { INIT, serveProcess } from '../helpers/served.js';
import { cli } from '../helpers/run.js';
import { tempDir } from '../helpers/temp.js';

const DEMO = { command: process.execPath, args: [`${ROOT}dist/examples/server.js`] };

/** A self-signed certificate for 127.0.0.1 and its key, made by openssl in `dir` under `name`. */
function certificate(dir: string, name: string): { cert: string; key: string; certFile: string; keyFile: string } {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ]),
    { stdio: 'ignore' },
  );
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}

/** POSTs an initialize over HTTPS trusting `ca`: the status, and the fingerprint of the certificate the server showed. */
function initialize(url: string, ca: string): Promise<{ status: number | undefined; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', headers: MCP_HEADERS, ca, agent: false }, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, fingerprint }));
    });
    req.on('error', reject);
    req.end(INIT);
  });
}

/** The fingerprint openssl gives a certificate file, as Node writes it (AA:BB:...). */
const fingerprintOf = (certFile: string): string =>
  execFileSync('openssl', ['x509', '-noout', '-fingerprint', '-sha256', '-in', certFile], { encoding: 'utf8' }).trim().split('=')[1]!;

describe('serve over TLS: HTTPS on the same port, the certificate renewed without a restart', function () {
  this.timeout(30_000);
  let served: ServeHandle | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  it('serves HTTPS with the certificate given, refuses plain HTTP there, and takes a renewed certificate for new connections', async () => {
    const dir = tempDir('serve-tls-');
    const first = certificate(dir, 'first');
    const second = certificate(dir, 'second');
    served = await serve(DEMO, { tls: { cert: first.cert, key: first.key }, log: () => undefined });
    expect(served.url).to.match(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const answered = await initialize(served.url!, first.cert);
    expect(answered).to.deep.equal({ status: 200, fingerprint: fingerprintOf(first.certFile) });
    // Plain HTTP gets no MCP answer on that port.
    const plain = await new Promise<string>((resolve) => {
      const req = http.request(served!.url!.replace('https:', 'http:'), { method: 'POST', headers: MCP_HEADERS, agent: false }, (res) =>
        resolve(`HTTP ${res.statusCode}`),
      );
      req.on('error', (err) => resolve(err.message));
      req.end(INIT);
    });
    expect(plain).not.to.equal('HTTP 200');
    served.setTls({ cert: second.cert, key: second.key });
    expect((await initialize(served.url!, second.cert)).fingerprint).to.equal(fingerprintOf(second.certFile));
  });

  it('refuses tls with http off, and setTls when serve was started without it', async () => {
    let caught: unknown;
    try {
      await serve(DEMO, { http: false, socket: join(tempDir('serve-tls-'), 's.sock'), tls: { cert: 'x', key: 'y' }, log: () => undefined });
    } catch (err) {
      caught = err;
    }
    expect((caught as Error).message).to.equal('serve: tls is for HTTP, and http is false');
    served = await serve(DEMO, { log: () => undefined });
    expect(() => served!.setTls({ cert: 'x', key: 'y' })).to.throw('setTls: serve was started without tls');
  });

  it('mcp-frame serve --tls-cert --tls-key: a client that trusts the certificate calls through it, and SIGHUP reads renewed files', async () => {
    const dir = tempDir('serve-tls-');
    const first = certificate(dir, 'first');
    const live = { cert: join(dir, 'live.crt'), key: join(dir, 'live.key') };
    writeFileSync(live.cert, first.cert);
    writeFileSync(live.key, first.key);
    const { proc, stderr, exited, url } = await serveProcess(['--tls-cert', live.cert, '--tls-key', live.key, '--', DEMO.command, ...DEMO.args]);
    try {
      expect(url, stderr()).to.match(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const env = { ...process.env, NODE_EXTRA_CA_CERTS: first.certFile };
      const call = await cli(['call', '--url', url!, 'tools/call', '{"name":"echo","arguments":{"text":"over TLS ✓"}}'], { env });
      expect(call.code, call.stderr).to.equal(0);
      expect(call.stdout).to.include('over TLS ✓');
      const second = certificate(dir, 'second');
      writeFileSync(live.cert, second.cert);
      writeFileSync(live.key, second.key);
      proc.kill('SIGHUP');
      await until(5000, 'the certificate reloaded', () => stderr().includes('SIGHUP: reloaded the certificate'), 20);
      expect((await initialize(url!, second.cert)).fingerprint).to.equal(fingerprintOf(second.certFile));
      // A file that is no certificate is refused; the one in force stays, and serve goes on.
      writeFileSync(live.cert, 'not a certificate');
      proc.kill('SIGHUP');
      await until(5000, 'the reload refused', () => stderr().includes('SIGHUP: kept the certificate in force'), 20);
      expect((await initialize(url!, second.cert)).status).to.equal(200);
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
  });

  it('refuses --tls-cert without --tls-key, and a file with no certificate in it, naming the file', async () => {
    const lone = await cli(['serve', '--tls-cert', '/nonexistent.crt', '--', DEMO.command, ...DEMO.args]);
    expect(lone.code).to.equal(2);
    expect(lone.stderr).to.include('--tls-cert and --tls-key go together');
    const dir = tempDir('serve-tls-');
    const file = join(dir, 'empty.pem');
    writeFileSync(file, 'nothing here');
    const empty = await cli(['serve', '--tls-cert', file, '--tls-key', file, '--', DEMO.command, ...DEMO.args]);
    expect(empty.code).to.equal(3);
    expect(empty.stderr).to.include(`--tls-cert ${file}: no PEM certificate in it`);
  });
});
