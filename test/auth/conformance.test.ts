// The MCP conformance suite's auth scenarios, run against mcp-frame's client (test/conformance-client.ts) by the
// suite itself. The suite needs Node >= 22: peers/ holds it and the node package that brings one, installed
// by .ci/run (`npm ci --prefix peers`). Without that install these tests say they are skipped.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { tempDir } from '../helpers/temp.js';
import { note } from '../helpers/note.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const NODE22 = join(ROOT, 'peers/node_modules/node/bin/node');
const SUITE = join(ROOT, 'peers/node_modules/@modelcontextprotocol/conformance/dist/index.js');
const CLIENT = join(ROOT, 'dist/test/conformance-client.js');

interface Check {
  id: string;
  status: string;
  description?: string;
  errorMessage?: string;
}

/** Every checks.json under `dir`, with its checks. */
function checksUnder(dir: string): Check[] {
  const found: Check[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name === 'checks.json')
      found.push(...(JSON.parse(readFileSync(join(entry.parentPath, entry.name), 'utf8')) as Check[]));
  }
  return found;
}

describe('the MCP conformance suite, auth scenarios', function () {
  this.timeout(60_000);
  const installed = existsSync(NODE22) && existsSync(SUITE);
  const scenarios = installed
    ? [...spawnSync(NODE22, [SUITE, 'list'], { encoding: 'utf8' }).stdout.matchAll(/^\s+- (auth\/[a-z0-9-]+)/gm)].map((m) => m[1]!)
    : [];

  before(function () {
    if (!installed) {
      note('skipped: the conformance suite is not installed (npm ci --prefix peers; .ci/run does it)');
      this.skip();
    }
  });

  it('lists the 22 auth scenarios this client is held to', () => {
    expect(scenarios).to.have.length(22);
  });

  for (const scenario of installed ? scenarios : []) {
    it(`${scenario}: passes every check, no warning`, () => {
      const out = tempDir('conformance');
      const run = spawnSync(NODE22, [SUITE, 'client', '--command', `"${process.execPath}" "${CLIENT}"`, '--scenario', scenario, '-o', out], {
        encoding: 'utf8',
        timeout: 50_000,
      });
      const checks = checksUnder(out);
      const bad = checks.filter((c) => c.status !== 'SUCCESS' && c.status !== 'INFO');
      expect(bad.map((c) => `${c.id} ${c.status}: ${c.errorMessage ?? c.description}`)).to.deep.equal([]);
      expect(checks.filter((c) => c.status === 'SUCCESS').length, 'checks passed').to.be.greaterThan(0);
      expect(run.status, run.stdout.slice(-2000)).to.equal(0);
    });
  }
});
