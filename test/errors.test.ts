import { expect } from 'chai';
import { FrameError, PREVIEW_CHARS, preview, redact } from '../lib/errors.js';

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
  ];
  for (const [input, output] of cases) {
    it(`redacts ${input}`, () => expect(redact(input)).to.equal(output));
  }
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
