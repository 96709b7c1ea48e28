import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { clearProgressLine, type ProgressStream, progressLine, withProgressView } from '../../lib/cli/progress.js';
import type { Progress } from '../../lib/client/connection.js';
import { ROOT } from '../helpers/fixtures.js';

const PEER = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, 'p'] };

describe('call: the progress view', () => {
  it('draws a bar with the count and message, a spinner without a total, cut to the width', () => {
    expect(progressLine(0, 3, 10, 'copying ✓')).to.equal('⠋ [######--------------] 3/10 copying ✓');
    expect(progressLine(1, 7, undefined, undefined)).to.equal('⠙ 7');
    expect(progressLine(2, 1, 2, 'x'.repeat(200), 40)).to.have.length(39);
    // A server's message cannot move the cursor or clear the screen.
    expect(progressLine(0, 1, undefined, 'a\x1b[2Jb')).to.equal('⠋ 1 a\\u001b[2Jb');
  });

  it('on a terminal, asks for progress and redraws one line per notification, cleared at the end; elsewhere asks nothing', async () => {
    const c = await connect(PEER, { protocolVersion: '2025-11-25' });
    try {
      const written: string[] = [];
      const tty: ProgressStream = { isTTY: true, columns: 80, write: (t: string) => written.push(t) };
      const view = withProgressView(c, { name: 'progress', arguments: {} }, tty);
      expect((view.params._meta as { progressToken: string }).progressToken).to.match(/^mcp-frame-call-/);
      expect(await c.request('tools/call', view.params)).to.deep.equal({ content: [{ type: 'text', text: 'p: 3 steps' }] });
      view.done();
      expect(written.slice(0, 3).map((w) => /\] (\d\/\d)$/.exec(w)?.[1])).to.deep.equal(['1/3', '2/3', '3/3']);
      expect(written.at(-1)).to.equal('\r\x1b[2K');
      const piped = withProgressView(c, { name: 'progress', arguments: {} }, { isTTY: false, write: () => expect.fail('drew on a pipe') });
      expect(piped.params).to.deep.equal({ name: 'progress', arguments: {} });
      await c.request('tools/call', piped.params);
      piped.done();
    } finally {
      await c.close();
    }
  });

  it('clears a bar on the line before an interruption is said, once, and the view then writes nothing more', async () => {
    const c = await connect(PEER, { protocolVersion: '2025-11-25' });
    try {
      const written: string[] = [];
      const tty: ProgressStream = { isTTY: true, columns: 80, write: (t: string) => written.push(t) };
      clearProgressLine(tty);
      expect(written, 'nothing drawn: nothing cleared').to.deep.equal([]);
      const view = withProgressView(c, { name: 'progress', arguments: {} }, tty);
      await c.request('tools/call', view.params);
      const drawn = written.length;
      expect(drawn).to.equal(3);
      clearProgressLine(tty);
      clearProgressLine(tty);
      view.done();
      expect(written.slice(drawn)).to.deep.equal(['\r\x1b[2K']);
    } finally {
      await c.close();
    }
  });

  it("gives a request's progress to onProgress, with a token of the connection's own, and nothing once it settled", async () => {
    const c = await connect(PEER, { protocolVersion: '2025-11-25' });
    try {
      const got: Progress[] = [];
      const result = await c.request(
        'tools/call',
        { name: 'progress', arguments: {}, _meta: { progressToken: 'mine' } },
        { onProgress: (p) => got.push(p) },
      );
      expect(result).to.deep.equal({ content: [{ type: 'text', text: 'p: 3 steps' }] });
      expect(got.map((p) => [p.progress, p.total])).to.deep.equal([
        [1, 3],
        [2, 3],
        [3, 3],
      ]);
      // The token given ('mine') was replaced by the connection's own: the server's progress matched it.
      // Another request's progress (no onProgress) reaches nobody's callback.
      await c.request('tools/call', { name: 'progress', arguments: {} });
      expect(got).to.have.length(3);
    } finally {
      await c.close();
    }
  });
});
