import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseConvertArgs } from '../../lib/cli/convert.js';
import { frameContentLength } from '../../lib/framings/content-length.js';
import { frame } from '../../lib/framings/ndjson.js';
import { frameSse } from '../../lib/framings/sse.js';
import { ROOT } from '../helpers/fixtures.js';
import { cli } from '../helpers/run.js';

const msgs = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { text: 'é😀\n\u2028' } },
  [{ a: 1 }, { b: 2 }],
  { jsonrpc: '2.0', id: 1, result: {} },
];
const wire = {
  ndjson: msgs.map((m) => frame(m)).join(''),
  'content-length': msgs.map((m) => frameContentLength(m)).join(''),
  sse: msgs.map((m) => frameSse(m)).join(''),
};

describe('mcp-frame convert', () => {
  for (const from of Object.keys(wire) as Array<keyof typeof wire>) {
    for (const to of Object.keys(wire) as Array<keyof typeof wire>) {
      it(`re-frames ${from} as ${to}`, async () => {
        const r = await cli(['convert', '--from', from, '--to', to], { stdin: wire[from] });
        expect(r.stderr).to.equal('');
        expect(r.code).to.equal(0);
        expect(r.stdout).to.equal(wire[to]);
      });
    }
  }

  it('exits 1 on bad input with one line giving its position, and no secret', async () => {
    const input = `${frame({ a: 1 })}{"params":{"token":"sk-live-123"}, oops\n${frame({ b: 2 })}`;
    const r = await cli(['convert', '--from', 'ndjson', '--to', 'content-length'], { stdin: input });
    expect(r.code).to.equal(1);
    expect(r.stdout).to.equal(frameContentLength({ a: 1 }));
    expect(r.stderr.trimEnd().split('\n')).to.have.length(1);
    expect(r.stderr).to.match(/^mcp-frame convert: INVALID_JSON: .*\(line 2, byte 8\)/);
    expect(r.stderr).not.to.include('sk-live-123');
  });

  it('skips bad input with --skip-invalid, saying so on stderr, and keeps every good message', async () => {
    const input = `Content-Length: 9x\r\n\r\n{"lost":1}${frameContentLength({ a: 1 })}Content-Length: 4\r\n\r\nnull${frameContentLength({ b: 2 })}`;
    const r = await cli(['convert', '--from', 'content-length', '--to', 'ndjson', '--skip-invalid'], { stdin: input });
    expect(r.code).to.equal(0);
    expect(r.stdout).to.equal(`${frame({ a: 1 })}${frame({ b: 2 })}`);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/skipped INVALID_HEADER: .*\(message 1, byte 0\)/);
    expect(lines[1]).to.match(/skipped INVALID_MESSAGE: .*\(message 3, /);
  });

  it('checks JSON-RPC with --validate and caps messages with --max-bytes', async () => {
    const bad = await cli(['convert', '--from', 'ndjson', '--to', 'ndjson', '--validate'], {
      stdin: `${frame({ jsonrpc: '2.0', method: 'a' })}${frame({ x: 1 })}`,
    });
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/INVALID_MESSAGE: not a JSON-RPC 2\.0 message/);
    const big = await cli(['convert', '--from', 'ndjson', '--to', 'ndjson', '--max-message-bytes', '10'], { stdin: frame({ long: 'x'.repeat(20) }) });
    // The older spelling still works.
    const older = await cli(['convert', '--from', 'ndjson', '--to', 'ndjson', '--max-bytes', '10'], { stdin: frame({ long: 'x'.repeat(20) }) });
    expect(older.code).to.equal(big.code);
    expect(older.stderr).to.equal(big.stderr);
    expect(big.code).to.equal(1);
    expect(big.stderr).to.match(/MESSAGE_TOO_LARGE/);
  });

  it('exits 2 on usage errors', async () => {
    for (const args of [
      ['--from', 'ndjson'],
      ['--from', 'xml', '--to', 'ndjson'],
      ['--from', 'sse', '--to', 'sse', '--bogus'],
      ['--from', 'sse', '--to', 'sse', '--max-bytes', '0'],
    ]) {
      const r = await cli(['convert', ...args]);
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr).to.match(/mcp-frame convert: .*\nusage: mcp-frame convert/);
    }
    expect(parseConvertArgs(['--from', 'sse', '--to', 'ndjson', '--skip-invalid'])).to.deep.equal({
      from: 'sse',
      to: 'ndjson',
      skipInvalid: true,
      validate: false,
      maxMessageBytes: undefined,
    });
  });

  it('streams 64 MiB through in bounded memory', async function () {
    this.timeout(60_000);
    const proc = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'convert', '--from', 'ndjson', '--to', 'content-length'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let peak = 0;
    const sample = setInterval(() => {
      try {
        const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'));
        if (rss) peak = Math.max(peak, Number(rss[1]) * 1024);
      } catch {
        // exited
      }
    }, 20);
    let outBytes = 0;
    proc.stdout.on('data', (c: Buffer) => (outBytes += c.length));
    const line = frame({ jsonrpc: '2.0', method: 'notifications/message', params: { data: 'y'.repeat(1000) } });
    const block = Buffer.from(line.repeat(1024));
    let written = 0;
    while (written < 64 * 1024 * 1024) {
      if (!proc.stdin.write(block)) await new Promise((resolve) => proc.stdin.once('drain', resolve));
      written += block.length;
    }
    proc.stdin.end();
    const code = await new Promise((resolve) => proc.on('close', resolve));
    clearInterval(sample);
    const count = written / Buffer.byteLength(line);
    expect(code).to.equal(0);
    expect(outBytes).to.equal(count * Buffer.byteLength(frameContentLength(JSON.parse(line))));
    expect(peak).to.be.greaterThan(0);
    // Node itself takes about 45 MiB; holding the input would take 64 MiB more.
    expect(peak).to.be.lessThan(100 * 1024 * 1024);
  });
});
