import { expect } from 'chai';
import { CassetteError, type CassetteEvent } from '../../lib/cassette/cassette.js';
import { checkCassette, checkCassetteStream, checkStream, formatReport } from '../../lib/cassette/check.js';
import { frameContentLength } from '../../lib/framings/content-length.js';
import { frame } from '../../lib/framings/ndjson.js';
import { frameSse } from '../../lib/framings/sse.js';
import { byteByByte, fixedChunks } from '../helpers/chunkers.js';

const req = (id: number, method = 'tools/list') => ({ jsonrpc: '2.0', id, method });
const res = (id: number) => ({ jsonrpc: '2.0', id, result: {} });
const note = { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } };
const err = (id: number) => ({ jsonrpc: '2.0', id, error: { code: -32601, message: 'no' } });

async function* chunksOf(bufs: Buffer[]): AsyncIterable<Buffer> {
  yield* bufs;
}

describe('check', () => {
  it('counts a clean stream by kind and says ok', async () => {
    const msgs = [req(1), note, res(1), req(2, 'tools/call'), err(2), [req(3), note], [res(3)]];
    const bytes = Buffer.from(msgs.map((m) => frame(m)).join(''));
    const r = await checkStream(chunksOf(byteByByte(bytes)));
    expect(r).to.deep.include({
      format: 'ndjson',
      bytes: bytes.length,
      messages: 7,
      requests: 3,
      notifications: 2,
      responses: 2,
      errors: 1,
      batches: 2,
      crlf: false,
      bom: false,
      ok: true,
    });
    expect(r.problems).to.deep.equal([]);
    expect(r.largest).to.deep.include({ message: 6, bytes: JSON.stringify([req(3), note]).length });
    expect(formatReport(r).trimEnd().split('\n').at(-1)).to.equal('ok');
  });

  it('finds every error in a corrupted ndjson capture at its message number and byte offset', async () => {
    const parts = [
      frame(req(1)),
      'garbage {\n',
      frame(res(1)),
      frame({ id: 9 }),
      '{"jsonrpc":"2.0","id":2,"method":"x"\n',
      frame(res(7)),
      frame(req(3)),
      '{"cut',
    ];
    const bytes = Buffer.from(parts.join(''));
    const offset = (i: number): number => Buffer.byteLength(parts.slice(0, i).join(''));
    const r = await checkStream(chunksOf(fixedChunks(bytes, 7)));
    expect(r.problems.map((p) => [p.code, p.message, p.offset])).to.deep.equal([
      ['INVALID_JSON', 2, offset(1)],
      ['INVALID_MESSAGE', 4, offset(3)],
      ['INVALID_JSON', 5, offset(4)],
      ['TRUNCATED', 8, offset(7)],
    ]);
    expect(r.unmatchedResponses.map((u) => [u.id, u.message, u.offset])).to.deep.equal([[7, 6, offset(5)]]);
    expect(r.unansweredRequests.map((u) => [u.id, u.method, u.message])).to.deep.equal([[3, 'tools/list', 7]]);
    expect(r.ok).to.equal(false);
    const text = formatReport(r);
    expect(text).to.include(`error: INVALID_JSON at message 2, line 2, byte ${offset(1)}: line is not valid JSON: garbage {`);
    expect(text).to.include('error: request tools/list with id 3 was never answered (message 7, line 7');
  });

  it('notes CRLF line ends and a BOM, without failing', async () => {
    const bytes = Buffer.from(`\ufeff${JSON.stringify(req(1))}\r\n${JSON.stringify(res(1))}\r\n`);
    for (let at = 1; at < bytes.length; at++) {
      const r = await checkStream(chunksOf([bytes.subarray(0, at), bytes.subarray(at)]));
      expect([r.crlf, r.bom, r.ok, r.messages], `split at ${at}`).to.deep.equal([true, true, true, 2]);
    }
  });

  it('notes no CRLF in a Content-Length capture (its headers end so), and lists at most 20 of a kind, saying how many more', async () => {
    const cl = Buffer.from(`${frameContentLength(req(1))}${frameContentLength(res(1))}`);
    expect((await checkStream(chunksOf([cl]), 'content-length')).crlf).to.equal(false);
    const many = Buffer.from(`${Array.from({ length: 50 }, (_, i) => JSON.stringify(req(i + 1))).join('\n')}\n`);
    const r = await checkStream(chunksOf([many]));
    expect(r.unansweredRequests).to.have.length(50);
    const lines = formatReport(r).trimEnd().split('\n');
    expect(lines.filter((l) => l.includes('was never answered'))).to.have.length(20);
    expect(lines).to.include('... and 30 more unanswered requests (--json lists every one)');
    expect(lines.at(-1)).to.equal('not ok: 0 errors, 0 unmatched responses, 50 unanswered requests');
  });

  it('reads Content-Length and SSE captures, with frame numbers', async () => {
    const cl = Buffer.from(`${frameContentLength(req(1))}Content-Length: x\r\n\r\n{}${frameContentLength(res(1))}`);
    const r = await checkStream(chunksOf([cl]), 'content-length');
    expect(r.problems.map((p) => [p.code, p.message, p.offset])).to.deep.equal([
      ['INVALID_HEADER', 2, Buffer.byteLength(frameContentLength(req(1)))],
    ]);
    expect(r.messages).to.equal(2);
    const sse = Buffer.from(`${frameSse(req(1))}data: {oops\n\n${frameSse(res(1))}`);
    const rs = await checkStream(chunksOf(byteByByte(sse)), 'sse');
    expect(rs.problems.map((p) => [p.code, p.message, p.line, p.offset])).to.deep.equal([
      ['INVALID_JSON', 2, 4, Buffer.byteLength(frameSse(req(1)))],
    ]);
  });

  it("pairs requests with the other side's responses in a cassette, whole or streamed", async () => {
    const events: CassetteEvent[] = [
      { from: 'client', t: 0, msg: req(1) },
      { from: 'server', t: 1, msg: req(1, 'roots/list') },
      { from: 'client', t: 2, msg: res(1) },
      { from: 'server', t: 3, msg: res(1) },
      { from: 'server', t: 4, msg: res(5) },
      { from: 'client', t: 5, msg: req(2) },
      { from: 'server', t: 6, invalid: 'Booting...', code: 'INVALID_JSON' },
    ];
    const r = checkCassette(events);
    expect(r.unmatchedResponses.map((u) => [u.id, u.from, u.message])).to.deep.equal([[5, 'server', 5]]);
    expect(r.unansweredRequests.map((u) => [u.id, u.from, u.method])).to.deep.equal([[2, 'client', 'tools/list']]);
    expect(r.problems.map((p) => [p.code, p.message, p.from])).to.deep.equal([['INVALID_JSON', 7, 'server']]);
    expect(r.requests).to.equal(3);

    // Read as a stream, in any chunks, the cassette gives the same report.
    const text = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    for (const chunks of [[text], byteByByte(text)]) {
      expect(await checkCassetteStream(chunksOf(chunks), 'c.cassette')).to.deep.equal(r);
    }
  });

  it('names the line of a cassette that is not one, when reading it as a stream', async () => {
    const text = `${JSON.stringify({ from: 'client', t: 0, msg: req(1) })}\n{"not":"an event"}\n`;
    let caught: unknown;
    try {
      await checkCassetteStream(chunksOf([Buffer.from(text)]), 'bad.cassette');
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(CassetteError);
    expect((caught as CassetteError).message).to.match(/^bad\.cassette:2: not a cassette event/);
  });
});
