import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { readCapped } from '../../lib/protocol/body.js';

describe('protocol/body: reading a body within a limit', () => {
  it('reads a body to its end when it stays within the cap, multibyte text whole', async () => {
    const stream = new PassThrough();
    const reading = readCapped(stream, 9);
    stream.write(Buffer.from('hé'));
    stream.end(Buffer.from('llo✓'));
    const { body, over } = await reading;
    expect(over).to.equal(false);
    expect(body.toString('utf8')).to.equal('héllo✓');
    expect(body.length, 'a body of exactly the cap is within it').to.equal(9);
  });

  it('stops at the first chunk past the cap, pauses the stream (not destroyed) and keeps what came before', async () => {
    const stream = new PassThrough();
    const reading = readCapped(stream, 4);
    stream.write('abc');
    stream.write('defgh');
    const { body, over } = await reading;
    expect(over).to.equal(true);
    expect(body.toString()).to.equal('abc');
    expect(stream.isPaused()).to.equal(true);
    expect(stream.destroyed).to.equal(false);
    stream.destroy();
  });

  it('rejects when the body is cut off before its end, and with the stream error when there is one', async () => {
    const cut = new PassThrough();
    const reading = readCapped(cut, 100);
    cut.write('ab');
    cut.destroy();
    await reading.then(
      () => expect.fail('a cut body resolved'),
      (err: Error) => expect(err.message).to.match(/cut off before its end/),
    );
    const broken = new PassThrough();
    const failing = readCapped(broken, 100);
    broken.destroy(new Error('ECONNRESET here'));
    await failing.then(
      () => expect.fail('a failed body resolved'),
      (err: Error) => expect(err.message).to.equal('ECONNRESET here'),
    );
  });
});
