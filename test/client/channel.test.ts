import { expect } from 'chai';
import { PassThrough, Writable } from 'node:stream';
import { StreamChannel } from '../../lib/client/channel.js';

/** An output that records each write it is given: a batch (writev) as one write of several frames. */
function recordingOutput(): { output: Writable; writes: string[][] } {
  const writes: string[][] = [];
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writes.push([chunk.toString()]);
      callback();
    },
    writev(chunks, callback) {
      writes.push(chunks.map((c) => (c.chunk as Buffer).toString()));
      callback();
    },
  });
  return { output, writes };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('StreamChannel: writes', () => {
  it('sends the frames of one turn of the event loop in one write, and a later frame in a write of its own', async () => {
    const { output, writes } = recordingOutput();
    const input = new PassThrough();
    const channel = new StreamChannel(input, output, { name: 'peer' });
    try {
      await Promise.all([1, 2, 3].map((id) => channel.send({ jsonrpc: '2.0', id, method: 'ping' })));
      await turn();
      expect(writes).to.deep.equal([[1, 2, 3].map((id) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`)]);
      await channel.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
      await turn();
      expect(writes).to.have.length(2);
      expect(writes[1]).to.deep.equal(['{"jsonrpc":"2.0","id":4,"method":"ping"}\n']);
    } finally {
      await channel.close();
    }
  });

  it('writes what is corked when the channel closes in the same turn', async () => {
    const { output, writes } = recordingOutput();
    const channel = new StreamChannel(new PassThrough(), output, { name: 'peer' });
    void channel.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await channel.close();
    await turn();
    expect(writes.flat()).to.deep.equal(['{"jsonrpc":"2.0","method":"notifications/initialized"}\n']);
  });
});
