// The optional peers (@redis/client, jose, prom-client, @opentelemetry/api) on a machine that has none of them:
// every entry point loads and frames, and each feature that needs one refuses to start with a line naming the
// package and how to install it (exit 3), before it listens. The packages are hidden by module resolution hooks
// (test/helpers/children/without-hooks.ts), as if they were not installed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ROOT } from './helpers/fixtures.js';
import { run } from './helpers/run.js';
import { tempDir } from './helpers/temp.js';

const PEERS = ['@redis/client', 'jose', 'prom-client', '@opentelemetry/api', '@modelcontextprotocol/sdk', 'smol-toml'];
const WITHOUT = `${ROOT}dist/test/helpers/children/without.js`;
const env = { ...process.env, MCP_FRAME_TEST_HIDE: PEERS.join(',') };

describe('without the optional peers', function () {
  this.timeout(30_000);

  it('loads every entry point and frames', async () => {
    const script = [
      "const root = await import('mcp-frame');",
      "await import('mcp-frame/client');",
      "await import('mcp-frame/serve');",
      "await import('mcp-frame/cassette');",
      'process.stdout.write(root.frame({ a: 1 }));',
    ].join(' ');
    const result = await run(process.execPath, ['--import', WITHOUT, '--input-type=module', '-e', script], { env, cwd: ROOT });
    expect(result.stderr).to.equal('');
    expect(result.stdout).to.equal('{"a":1}\n');
  });

  it('hides what it says it hides: a direct import of each fails', async () => {
    for (const peer of PEERS) {
      const result = await run(process.execPath, ['--import', WITHOUT, '--input-type=module', '-e', `await import('${peer}')`], { env, cwd: ROOT });
      expect(result.code, peer).to.not.equal(0);
      expect(result.stderr, peer).to.include(`Cannot find package '${peer}'`);
    }
  });

  for (const [flags, peer] of [
    [['--store', 'redis://127.0.0.1:1'], '@redis/client'],
    [['--metrics'], 'prom-client'],
    [['--auth-issuer', 'http://127.0.0.1:1'], 'jose'],
  ] as const) {
    it(`serve ${flags[0]} names ${peer} and how to install it, and exits 3 before it listens`, async () => {
      const args = [
        '--import',
        WITHOUT,
        `${ROOT}dist/lib/cli/main.js`,
        'serve',
        '--port',
        '0',
        ...flags,
        '--',
        process.execPath,
        `${ROOT}dist/examples/server.js`,
      ];
      const result = await run(process.execPath, args, { env, cwd: ROOT });
      expect(result.code).to.equal(3);
      expect(result.stderr).to.include(`the ${peer} package, which is not installed (npm install ${peer})`);
      expect(result.stderr).not.to.include('listening on');
    });
  }

  it('reading a Codex config.toml names smol-toml and how to install it (exit 3)', async () => {
    const dir = tempDir('no-toml');
    const file = join(dir, 'config.toml');
    writeFileSync(file, '[mcp_servers.demo]\ncommand = "node"\n');
    const result = await run(process.execPath, ['--import', WITHOUT, `${ROOT}dist/lib/cli/main.js`, 'tools', 'demo', '--config', file], {
      env,
      cwd: ROOT,
    });
    expect(result.code).to.equal(3);
    expect(result.stderr).to.include('the smol-toml package, which is not installed (npm install smol-toml)');
  });
});
