import { expect } from 'chai';
import { createLogger, lineLogger } from '../lib/log.js';

describe('log: a leveled logger with fields', () => {
  const lines: string[] = [];
  beforeEach(() => {
    lines.length = 0;
  });
  const write = (line: string): number => lines.push(line);

  it('writes a JSON line per call: time, level, event, the bindings, the fields and msg, in that order', () => {
    const log = createLogger({ write, format: 'json' });
    log.warn('upstream.down', 'server "a" is down: it exited', { upstream: 'a', why: 'it exited', skipped: undefined });
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(Object.keys(record)).to.deep.equal(['time', 'level', 'event', 'upstream', 'why', 'msg']);
    expect(record).to.deep.include({ level: 'warn', event: 'upstream.down', upstream: 'a', msg: 'server "a" is down: it exited' });
    expect(Date.parse(record.time as string)).to.be.closeTo(Date.now(), 5000);
  });

  it('takes the level from the call, never from the words, and writes nothing under the least level', () => {
    const log = createLogger({ write, format: 'json', level: 'warn' });
    log.info('x', 'warning: this reads like a warning');
    log.debug('x', '500 looks like an error');
    log.error('y', 'fine words');
    expect(lines.map((l) => (JSON.parse(l) as { level: string }).level)).to.deep.equal(['error']);
    expect(log.enabled('warn')).to.equal(true);
    expect(log.enabled('info')).to.equal(false);
    expect(createLogger({ write }).enabled('debug')).to.equal(false);
    expect(lineLogger(write).enabled('debug')).to.equal(true);
  });

  it("gives children their bindings and their prefix, a child's child both of its parent's", () => {
    const log = createLogger({ write, format: 'json' });
    const session = log.child({ session: '1a2b3c4d' }, 'session 1a2b3c4d');
    const server = session.child({ upstream: 'files' }, 'server "files"');
    server.info('server.stderr', 'stderr: ready');
    expect(JSON.parse(lines[0]!)).to.deep.include({ session: '1a2b3c4d', upstream: 'files', msg: 'session 1a2b3c4d server "files" stderr: ready' });
    const text = createLogger({ write });
    text.child({ session: 'x' }, 'session x').info('e', 'started');
    text.child({}).info('e', 'no prefix');
    expect(lines.slice(1)).to.deep.equal(['session x started', 'no prefix']);
  });

  it('starts text lines with the time when asked, and writes the sentence alone otherwise', () => {
    createLogger({ write, time: true }).info('e', 'listening');
    createLogger({ write }).info('e', 'listening');
    expect(lines[0]).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z listening$/);
    expect(lines[1]).to.equal('listening');
  });

  it('scrubs the secrets and cuts whole session ids, in the sentence and in every string of the fields', () => {
    const secret = 'tok-0123456789abcdef';
    const id = '1a2b3c4d-0000-4000-8000-123456789abc';
    const log = createLogger({ write, format: 'json', secrets: [secret, 'abc'] });
    log.info('refused', `401 POST /mcp?token=${secret} for ${id} (abc)`, { header: `Bearer ${secret}`, nested: { list: [secret, 7] }, session: id });
    expect(lines[0]).to.not.include(secret);
    expect(lines[0]).to.not.include(id);
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(record.msg).to.equal('401 POST /mcp?token=[REDACTED] for 1a2b3c4d… (abc)');
    // ^ a secret too short to look for ("abc") is not looked for: every "abc" of every line would go.
    expect(record.header).to.equal('Bearer [REDACTED]');
    expect(record.nested).to.deep.equal({ list: ['[REDACTED]', 7] });
    expect(record.session).to.equal('1a2b3c4d…');
    createLogger({ write, secrets: [secret] }).info('e', `token ${secret}`);
    expect(lines[1]).to.equal('token [REDACTED]');
  });
});
