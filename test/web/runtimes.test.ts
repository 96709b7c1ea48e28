// mcp-frame/web outside Node: the built entry imported as it is (unbundled ES modules) by Deno and by Bun, from
// their npm packages pinned in peers/ (installed by .ci/run; skipped with a message where they are not), each
// decoding the NDJSON, Content-Length and SSE wire fixtures through FrameDecoderStream in skip mode, byte by byte and whole, and encoding
// with FrameEncoderStream: the same messages, codes and positions as the fixtures expect, the same bytes as frame().
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/fixtures.js';
import { tempDir } from '../helpers/temp.js';
import { checkScript, expectChecked, type WebCheck, webFixtures } from '../helpers/web-check.js';

const RUNTIMES = {
  deno: { bin: `${ROOT}peers/node_modules/.bin/deno`, args: (file: string) => ['run', '--quiet', '--no-config', file] },
  bun: { bin: `${ROOT}peers/node_modules/.bin/bun`, args: (file: string) => ['run', file] },
};

function run(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      bin,
      args,
      { maxBuffer: 64 * 1024 * 1024, timeout: 60_000, env: { ...process.env, DENO_DIR: tempDir('deno-dir-'), NO_COLOR: '1' } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
}

describe('mcp-frame/web in Deno and Bun', function () {
  this.timeout(120_000);
  const fixtures = webFixtures();

  for (const [name, runtime] of Object.entries(RUNTIMES)) {
    it(`${name}: decodes every NDJSON, Content-Length and SSE wire fixture whole and byte by byte as the fixtures expect, and encodes as frame(), frameContentLength() and frameSse()`, async function () {
      if (!existsSync(runtime.bin)) {
        console.log(`      skipped: ${name} is not installed (npm ci --prefix peers; .ci/run does it)`);
        this.skip();
      }
      const file = join(tempDir(`web-${name}-`), 'check.mjs');
      writeFileSync(file, checkScript(pathToFileURL(`${ROOT}dist/lib/web/index.js`).href, fixtures, 'console.log(JSON.stringify(out));'));
      expectChecked(name, fixtures, JSON.parse(await run(runtime.bin, runtime.args(file))) as WebCheck);
    });
  }
});
