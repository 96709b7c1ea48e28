// mcp-frame/web outside Node: the built entry imported as it is (unbundled ES modules) by Deno and by Bun, from
// their npm packages pinned in peers/ (installed by .ci/run; skipped with a message where they are not), each
// decoding the NDJSON wire fixtures through FrameDecoderStream in skip mode, byte by byte and whole, and encoding
// with FrameEncoderStream: the same messages, codes and positions as the fixtures expect, the same bytes as frame().
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { frame } from '../../lib/framings/ndjson.js';
import type { DecodeEvent } from '../helpers/decode.js';
import { ROOT, wireFixtures } from '../helpers/fixtures.js';
import { tempDir } from '../helpers/temp.js';

const RUNTIMES = {
  deno: { bin: `${ROOT}peers/node_modules/.bin/deno`, args: (file: string) => ['run', '--quiet', '--no-config', file] },
  bun: { bin: `${ROOT}peers/node_modules/.bin/bun`, args: (file: string) => ['run', file] },
};

const messagesOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('message' in e ? [e.message] : []));
const invalidOf = (events: DecodeEvent[]): unknown[] => events.flatMap((e) => ('invalid' in e ? [e.invalid] : []));

/** A script for the runtime: each fixture's bytes through the streams, whole and byte by byte; what came out, as JSON. */
function script(fixtures: Array<{ name: string; base64: string }>, encoded: unknown[]): string {
  return `
import { FrameDecoderStream, FrameEncoderStream } from ${JSON.stringify(pathToFileURL(`${ROOT}dist/lib/web/index.js`).href)};
const bytesOf = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
async function decode(chunks) {
  const invalid = [];
  const stream = new FrameDecoderStream({ onInvalid: 'skip', oninvalid: (e) => invalid.push({ code: e.code, line: e.line, offset: e.offset }) });
  const writer = stream.writable.getWriter();
  const messages = [];
  const reading = (async () => { for await (const m of stream.readable) messages.push(m); })();
  for (const c of chunks) await writer.write(c);
  await writer.close();
  await reading;
  return { messages, invalid };
}
const out = {};
for (const f of ${JSON.stringify(fixtures)}) {
  const bytes = bytesOf(f.base64);
  out[f.name] = { whole: await decode([bytes]), bytes: await decode([...bytes].map((b) => new Uint8Array([b]))) };
}
const encoder = new FrameEncoderStream();
const w = encoder.writable.getWriter();
const parts = [];
const read = (async () => { for await (const c of encoder.readable) parts.push(...c); })();
for (const m of ${JSON.stringify(encoded)}) await w.write(m);
await w.close();
await read;
out.encoded = btoa(String.fromCharCode(...parts));
console.log(JSON.stringify(out));
`;
}

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
  const fixtures = wireFixtures('ndjson');
  const encoded = [
    { jsonrpc: '2.0', id: 1, result: { text: 'ünïcödé ✓ \u2028 end' } },
    { jsonrpc: '2.0', method: 'ping' },
  ];

  for (const [name, runtime] of Object.entries(RUNTIMES)) {
    it(`${name}: decodes every NDJSON wire fixture whole and byte by byte as the fixtures expect, and encodes as frame()`, async function () {
      if (!existsSync(runtime.bin)) {
        console.log(`      skipped: ${name} is not installed (npm ci --prefix peers; .ci/run does it)`);
        this.skip();
      }
      const file = join(tempDir(`web-${name}-`), 'check.mjs');
      writeFileSync(
        file,
        script(
          fixtures.map((f) => ({ name: f.name, base64: f.bytes.toString('base64') })),
          encoded,
        ),
      );
      const out = JSON.parse(await run(runtime.bin, runtime.args(file))) as Record<string, { whole: Json; bytes: Json }> & { encoded: string };
      expect(fixtures.length).to.be.greaterThan(0);
      for (const f of fixtures) {
        for (const how of ['whole', 'bytes'] as const) {
          const got = out[f.name]![how];
          expect(got.messages, `${name} ${f.name} ${how}`).to.deep.equal(messagesOf(f.events));
          expect(got.invalid, `${name} ${f.name} ${how}`).to.deep.equal(invalidOf(f.events));
        }
      }
      expect(Buffer.from(out.encoded, 'base64').equals(Buffer.from(encoded.map((m) => frame(m)).join('')))).to.equal(true);
    });
  }
});

type Json = { messages: unknown[]; invalid: unknown[] };
