import { expect } from 'chai';
import { unprintable } from './helpers/unprintable.js';
import { FrameError, PREVIEW_CHARS, preview, printable, printableJson, redact, redactMessage, safeLine } from '../lib/errors.js';

describe('FrameError', () => {
  it('carries a code, a position and a preview, and says where in its message', () => {
    const err = new FrameError('INVALID_JSON', 'line is not valid JSON', { line: 3, offset: 120 }, 'abc');
    expect(err).to.be.instanceOf(Error);
    expect(err.name).to.equal('FrameError');
    expect([err.code, err.line, err.offset, err.preview]).to.deep.equal(['INVALID_JSON', 3, 120, 'abc']);
    expect(err.message).to.equal('line is not valid JSON (line 3, byte 120)');
  });

  it('leaves the position out of the message when there is none', () => {
    const err = new FrameError('NOT_SERIALIZABLE', 'cannot frame message');
    expect(err.message).to.equal('cannot frame message');
    expect(err.offset).to.equal(undefined);
  });
});

describe('redact', () => {
  const cases: Array<[string, string]> = [
    ['{"token":"abc123"}', '{"token":"[REDACTED]"}'],
    ['{"access_token": "abc123", "x": 1}', '{"access_token": "[REDACTED]", "x": 1}'],
    ['{"Authorization":"Bearer xyz"}', '{"Authorization":"[REDACTED]"}'],
    ['{"password":"p\\"w"}', '{"password":"[REDACTED]"}'],
    ['{"apiKey":"k1","api_key":"k2","x-api-key":"k3"}', '{"apiKey":"[REDACTED]","api_key":"[REDACTED]","x-api-key":"[REDACTED]"}'],
    ['{"clientSecret":12345}', '{"clientSecret":"[REDACTED]"}'],
    ['{"cookie":"sid=1; other=2"}', '{"cookie":"[REDACTED]"}'],
    ['{"secret":"cut off in the mid', '{"secret":"[REDACTED]"'],
    ['Authorization: Bearer abc.def-ghi', 'Authorization: Bearer [REDACTED]'],
    ['{"name":"token","tokens":3}', '{"name":"token","tokens":"[REDACTED]"}'],
    ['{"method":"tools/call","id":1}', '{"method":"tools/call","id":1}'],
    ['{"auth":"abc","oauth_code":"x"}', '{"auth":"[REDACTED]","oauth_code":"[REDACTED]"}'],
    ['password=hunter2 token=abc other=1', 'password=[REDACTED] token=[REDACTED] other=1'],
    ["{'token': 'abc', 'x': 1}", "{'token': '[REDACTED]', 'x': 1}"],
    ['{"\\u0074oken":"abc"}', '{"token":"[REDACTED]"}'],
    ['fetching https://user:pa55@example.test/x', 'fetching https://user:[REDACTED]@example.test/x'],
    ['api_key: abc123 rest', 'api_key: [REDACTED] rest'],
    ['GET /v1?api_key=abc&page=2', 'GET /v1?api_key=[REDACTED]&page=2'],
    ['API_KEY=sk-live-0123456789 started', 'API_KEY=[REDACTED] started'],
    ['a key sk-proj-0123456789abcdef in plain text', 'a key [REDACTED] in plain text'],
    ['time: 12:30, plain text: hello', 'time: 12:30, plain text: hello'],
    // Keys that count or name things keep their values; keys of credentials do not.
    [
      '{"maxTokens":100,"progressToken":"p1","nextToken":"n2","author":"ann"}',
      '{"maxTokens":100,"progressToken":"p1","nextToken":"n2","author":"ann"}',
    ],
    [
      '{"refresh_token":"r","idToken":"i","x-auth-token":"x","bearerToken":"b"}',
      '{"refresh_token":"[REDACTED]","idToken":"[REDACTED]","x-auth-token":"[REDACTED]","bearerToken":"[REDACTED]"}',
    ],
    ['max_tokens=100 access_token=abc', 'max_tokens=100 access_token=[REDACTED]'],
    ['progressToken: p1, refreshToken: r1', 'progressToken: p1, refreshToken: [REDACTED]'],
  ];
  for (const [input, output] of cases) {
    it(`redacts ${input}`, () => expect(redact(input)).to.equal(output));
  }
});

describe('redactMessage', () => {
  it('hides values under secret keys and secrets inside strings, at any depth, and keeps the rest', () => {
    const msg = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'fetch', arguments: { url: 'https://u:pw@h/x', headers: { Authorization: 'Bearer abc' }, apiKey: 'k', count: 2 } },
    };
    expect(redactMessage(msg)).to.deep.equal({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'fetch',
        arguments: { url: 'https://u:[REDACTED]@h/x', headers: { Authorization: '[REDACTED]' }, apiKey: '[REDACTED]', count: 2 },
      },
    });
    expect(msg.params.arguments.apiKey).to.equal('k');
  });

  it('keeps a sampling request as it was, counts and progress tokens included, so that its cassette replays', () => {
    const msg = {
      jsonrpc: '2.0',
      id: 7,
      method: 'sampling/createMessage',
      params: { messages: [], maxTokens: 256, _meta: { progressToken: 'tok-1' } },
    };
    expect(redactMessage(msg)).to.deep.equal(msg);
  });

  it('keeps __proto__ an ordinary key', () => {
    const msg = JSON.parse('{"__proto__":{"token":"x"}}') as object;
    const out = redactMessage(msg) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).to.equal(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).to.deep.equal({ token: '[REDACTED]' });
  });
});

describe('terminal safety', () => {
  const hostile = 'x\u001b]0;owned\u0007\u001b[2J\u009b31m\u202eevil\u2066\u200f\u007f';
  it('escapes C0 and C1 controls, DEL and bidirectional controls', () => {
    expect(printable(hostile)).to.equal('x\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\u202eevil\\u2066\\u200f\\u007f');
    expect(unprintable(hostile)).to.have.length(8);
    expect(unprintable(preview(hostile))).to.deep.equal([]);
    expect(safeLine('token=abc \u001b[2J')).to.equal('token=[REDACTED] \\u001b[2J');
  });

  it('keeps JSON valid and equal while escaping what JSON.stringify leaves raw', () => {
    const value = { text: hostile, line: 'a\u2028b' };
    const text = printableJson(value, 2);
    expect(unprintable(text, '\n')).to.deep.equal([]);
    expect(JSON.parse(text)).to.deep.equal(value);
  });
});

describe('preview', () => {
  it('is at most about 80 characters, marked when cut', () => {
    const p = preview('x'.repeat(10_000));
    expect(p).to.have.length(PREVIEW_CHARS + 1);
    expect(p.endsWith('…')).to.equal(true);
    expect(preview('short')).to.equal('short');
  });

  it('escapes line breaks and control characters', () => {
    expect(preview('a\nb\r\tc\u0000\u2028d')).to.equal('a\\nb\\r\\tc\\u0000\\u2028d');
  });

  it('hides a secret whose value starts inside the preview and runs past it', () => {
    const p = preview(Buffer.from(`{"params":{"token":"${'s'.repeat(10_000)}"}}`));
    expect(p).not.to.include('sss');
    expect(p).to.include('[REDACTED]');
  });

  it('decodes bytes as UTF-8', () => {
    expect(preview(new Uint8Array(Buffer.from('{"t":"é😀"}')))).to.equal('{"t":"é😀"}');
  });
});
