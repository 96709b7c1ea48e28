import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  Cassette,
  CassetteError,
  exchanges,
  parseCassette,
  RecordingTap,
  REPLAY_NOT_RECORDED,
  Replayer,
  type CassetteEvent,
} from '../../lib/cassette/cassette.js';
import { frame } from '../../lib/framings/ndjson.js';
import { byteByByte } from '../helpers/chunkers.js';
import { ROOT } from '../helpers/fixtures.js';

const c = (msg: object, t = 0): CassetteEvent => ({ from: 'client', t, msg });
const s = (msg: object, t = 0): CassetteEvent => ({ from: 'server', t, msg });

const session: CassetteEvent[] = [
  c({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'recorder' } } }),
  s({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'srv' } } }),
  c({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  c({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 }, _meta: { progressToken: 'p-old' } } }),
  s({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-old', progress: 1, total: 2 } }),
  s({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: '3' }] } }),
  c({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } }),
  s({ jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text: 'three' }] } }),
  c({ jsonrpc: '2.0', id: 4, method: 'tools/list' }),
  s({ jsonrpc: '2.0', id: 4, result: { tools: [] } }),
];

describe('Cassette', () => {
  it('reads JSON Lines events and writes them back the same', () => {
    const text = new Cassette(session).toString();
    expect(parseCassette(text)).to.deep.equal(session);
    expect(text.split('\n')).to.have.length(session.length + 1);
  });

  it('names the line of a broken cassette', () => {
    const text = `${JSON.stringify(session[0])}\n{"from":"client","t":1,\n`;
    expect(() => parseCassette(text, 'x.cassette')).to.throw(CassetteError, /^x\.cassette:2: not JSON/);
    expect(() => parseCassette('{"from":"nobody","t":1,"msg":{}}\n', 'y')).to.throw(CassetteError, /^y:1: not a cassette event/);
  });

  it('pairs each client request with the server messages that answered it', () => {
    const ex = exchanges(session);
    expect(ex.map((e) => [e.request.id, e.replies.length])).to.deep.equal([
      [1, 1],
      [2, 2],
      [3, 1],
      [4, 1],
    ]);
  });

  describe('Replayer', () => {
    it('answers by method and params, whatever the id, the order or the key order', () => {
      const r = new Replayer(session);
      expect(r.answer({ jsonrpc: '2.0', id: 'z', method: 'tools/list' })).to.deep.equal([{ jsonrpc: '2.0', id: 'z', result: { tools: [] } }]);
      const init = r.answer({ jsonrpc: '2.0', id: 10, method: 'initialize', params: { clientInfo: { name: 'another client' } } });
      expect(init).to.deep.equal([{ jsonrpc: '2.0', id: 10, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'srv' } } }]);
      expect(r.answer({ jsonrpc: '2.0', method: 'notifications/initialized' })).to.deep.equal([]);
    });

    it('replays the notifications recorded on the way, with the live progress token', () => {
      const r = new Replayer(session);
      const live = {
        jsonrpc: '2.0',
        id: 99,
        method: 'tools/call',
        params: { arguments: { b: 2, a: 1 }, name: 'add', _meta: { progressToken: 'p-new' } },
      };
      expect(r.answer(live)).to.deep.equal([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-new', progress: 1, total: 2 } },
        { jsonrpc: '2.0', id: 99, result: { content: [{ type: 'text', text: '3' }] } },
      ]);
      // The same request again takes the next recording of it, then the last one again.
      const again = { jsonrpc: '2.0', id: 100, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } };
      expect(r.answer(again).at(-1)).to.deep.equal({ jsonrpc: '2.0', id: 100, result: { content: [{ type: 'text', text: 'three' }] } });
      expect(r.answer({ ...again, id: 101 }).at(-1)).to.deep.equal({
        jsonrpc: '2.0',
        id: 101,
        result: { content: [{ type: 'text', text: 'three' }] },
      });
    });

    it('answers what it never saw with an error at once, and says so', () => {
      const misses: string[] = [];
      const r = new Replayer(session, { onMiss: (m) => misses.push(`${m.method}: ${m.reason}`) });
      const unknown = r.answer({ jsonrpc: '2.0', id: 5, method: 'resources/list' });
      expect(unknown).to.deep.equal([
        { jsonrpc: '2.0', id: 5, error: { code: -32601, message: 'Method not found: resources/list (not in the cassette)' } },
      ]);
      const other = r.answer({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'add', arguments: { a: 5, b: 5 } } });
      expect((other[0] as { error: { code: number } }).error.code).to.equal(REPLAY_NOT_RECORDED);
      expect(misses).to.deep.equal([
        'resources/list: the cassette never saw this method',
        'tools/call: the cassette has this method, but not with these params',
      ]);
    });

    it('with strictOrder, answers only the next recorded request', () => {
      const r = new Replayer(session, { strictOrder: true });
      expect((r.answer({ jsonrpc: '2.0', id: 1, method: 'tools/list' })[0] as { error?: { code: number } }).error?.code).to.equal(
        REPLAY_NOT_RECORDED,
      );
      expect(r.answer({ jsonrpc: '2.0', id: 1, method: 'initialize' })[0]).to.have.property('result');
    });
  });

  it('replays as a Duplex of ndjson bytes, fed one byte at a time', async () => {
    const server = new Cassette(session).replay();
    const out: Buffer[] = [];
    server.on('data', (chunk: Buffer) => out.push(chunk));
    const ended = new Promise((resolve) => server.on('end', resolve));
    const input = Buffer.from(
      [
        { jsonrpc: '2.0', id: 7, method: 'tools/list' },
        { jsonrpc: '2.0', id: 8, method: 'initialize' },
      ]
        .map((m) => frame(m))
        .join(''),
    );
    for (const b of byteByByte(input)) server.write(b);
    server.end();
    await ended;
    expect(Buffer.concat(out).toString()).to.equal(
      frame({ jsonrpc: '2.0', id: 7, result: { tools: [] } }) +
        frame({ jsonrpc: '2.0', id: 8, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'srv' } } }),
    );
  });

  it('records in process with taps that pass every byte through unchanged, bad lines included', async () => {
    const cassette = new Cassette();
    const input = Buffer.from(
      `${frame({ jsonrpc: '2.0', id: 1, method: 'ping' })}Starting up, token="sk-123"...\r\n${frame({ jsonrpc: '2.0', method: 'x' })}`,
    );
    const passed: Buffer[] = [];
    await pipeline(
      new PassThrough().end(input),
      new RecordingTap('server', cassette),
      new Writable({
        write: (chunk: Buffer, _e, cb) => {
          passed.push(chunk);
          cb();
        },
      }),
    );
    expect(Buffer.concat(passed).equals(input)).to.equal(true);
    expect(cassette.events.map((e) => ('msg' in e ? e.msg : { code: e.code, invalid: e.invalid }))).to.deep.equal([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { code: 'INVALID_JSON', invalid: 'Starting up, token="sk-123"...' },
      { jsonrpc: '2.0', method: 'x' },
    ]);
    expect(cassette.events.every((e) => e.from === 'server' && e.t >= 0)).to.equal(true);
  });

  it('records a live session with the example server in process, and replays it', async () => {
    const cassette = new Cassette();
    const child = spawn(process.execPath, [`${ROOT}dist/examples/server.js`], { stdio: ['pipe', 'pipe', 'ignore'] });
    const toServer = cassette.tap('client');
    toServer.pipe(child.stdin);
    const replies: string[] = [];
    child.stdout.pipe(cassette.tap('server')).on('data', (c: Buffer) => replies.push(c.toString()));
    toServer.write(frame({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'add', arguments: { a: 20, b: 22 } } }));
    toServer.end(frame({ jsonrpc: '2.0', id: 2, method: 'ping' }));
    await new Promise((resolve) => child.on('close', resolve));
    expect(cassette.events.filter((e) => e.from === 'server')).to.have.length(2);

    const replayed = new Replayer(cassette.events).answer({
      jsonrpc: '2.0',
      id: 'live',
      method: 'tools/call',
      params: { name: 'add', arguments: { a: 20, b: 22 } },
    });
    expect(replayed).to.deep.equal([
      { jsonrpc: '2.0', id: 'live', result: { content: [{ type: 'text', text: '42' }], structuredContent: { sum: 42 } } },
    ]);
    expect(replies.join('')).to.include('"sum":42');
  });

  describe('secrets and hostile lines', () => {
    const withSecret = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'fetch', arguments: { url: 'https://u:pa55@h/x', apiKey: 'k-123' } },
    };
    const recordOne = (cassette: Cassette): void => {
      const tap = cassette.tap('client');
      tap.resume();
      tap.end(frame(withSecret));
    };

    it('redacts what it records by default, and the live request still matches it', async () => {
      const cassette = new Cassette();
      recordOne(cassette);
      await new Promise((resolve) => setImmediate(resolve));
      const text = cassette.toString();
      expect(text).to.not.include('pa55').and.to.not.include('k-123');
      expect(text).to.include('[REDACTED]');
      const events = [...parseCassette(text), s({ jsonrpc: '2.0', id: 7, result: { ok: true } })];
      expect(new Replayer(events).answer(withSecret)).to.deep.equal([{ jsonrpc: '2.0', id: 7, result: { ok: true } }]);
    });

    it('keeps every value with redact: false', async () => {
      const cassette = new Cassette([], { redact: false });
      recordOne(cassette);
      await new Promise((resolve) => setImmediate(resolve));
      expect(cassette.events[0]).to.deep.include({ msg: withSecret });
    });

    it('names a line nested too deep instead of overflowing the stack', () => {
      const deep = `{"from":"client","t":0,"msg":{"jsonrpc":"2.0","id":1,"method":"x","params":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
      expect(() => parseCassette(`${JSON.stringify(session[0])}\n${deep}\n`, 'deep.cassette'))
        .to.throw(CassetteError)
        .with.property('line', 2);
    });

    it('answers each of many recordings of one request in turn, then repeats the last', () => {
      const events: CassetteEvent[] = [];
      for (let i = 0; i < 5000; i++) {
        events.push(c({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'n' } }));
        events.push(s({ jsonrpc: '2.0', id: i, result: { n: i } }));
      }
      const replayer = new Replayer(events);
      const live = (id: number) => replayer.answer({ jsonrpc: '2.0', id: `L${id}`, method: 'tools/call', params: { name: 'n' } });
      for (let i = 0; i < 5000; i++) expect(live(i)).to.deep.equal([{ jsonrpc: '2.0', id: `L${i}`, result: { n: i } }]);
      expect(live(5000)).to.deep.equal([{ jsonrpc: '2.0', id: 'L5000', result: { n: 4999 } }]);
    });
  });
});
