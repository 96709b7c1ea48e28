import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ConnectionError } from '../../lib/client/errors.js';
import { type RemoteSettings, remoteRequest, remoteSettings } from '../../lib/client/remote.js';
import { rejection } from '../helpers/rejection.js';

/**
 * The keep-alive race, staged: a server on 127.0.0.1 that resets chosen requests (numbered from 1, across every
 * socket) by destroying their socket before it answers, as a server closing an idle kept-alive socket does to a
 * request that went out on it just then. Every other request is answered with its own body.
 */
describe('remoteRequest on kept-alive sockets (a server on 127.0.0.1 that resets requests)', () => {
  let server: http.Server;
  let remote: RemoteSettings;
  let reset: (n: number) => boolean;
  let hold: (n: number) => boolean;
  const seen: Array<{ body: string; socket: Socket }> = [];
  let sent: http.ClientRequest[] = [];

  beforeEach(async () => {
    reset = () => false;
    hold = () => false;
    seen.length = 0;
    sent = [];
    server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => {
        seen.push({ body, socket: req.socket });
        if (reset(seen.length)) return void req.socket.destroy();
        if (!hold(seen.length)) res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    remote = remoteSettings(`http://127.0.0.1:${port}/mcp`, { name: 'staged' });
  });

  afterEach(async () => {
    remote.agent.destroy();
    remote.streamAgent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  async function post(body: string, track?: (req: http.ClientRequest) => void): Promise<string> {
    const res = await remoteRequest(remote, 'staged', { method: 'POST', headers: {}, body }, (req) => {
      sent.push(req);
      track?.(req);
    });
    let text = '';
    for await (const chunk of res.setEncoding('utf8')) text += chunk;
    return text;
  }

  it('sends a request once more on a new socket when its reused socket is reset before any answer', async () => {
    reset = (n) => n === 2;
    expect(await post('one')).to.equal('one');
    expect(await post('two ünï')).to.equal('two ünï');
    expect(await post('three')).to.equal('three');
    expect(seen.map((s) => s.body)).to.deep.equal(['one', 'two ünï', 'two ünï', 'three']);
    expect(sent.map((req) => req.reusedSocket)).to.deep.equal([false, true, false, true]);
    expect(seen[2]!.socket).to.not.equal(seen[1]!.socket);
  });

  it('sends it only once more: a second reset fails the request, naming the server', async () => {
    reset = (n) => n >= 2;
    expect(await post('one')).to.equal('one');
    const err = await rejection(post('two'));
    expect(err).to.be.instanceOf(ConnectionError);
    expect(err.message).to.equal('cannot reach "staged": socket hang up');
    expect(seen.map((s) => s.body)).to.deep.equal(['one', 'two', 'two']);
    expect(sent).to.have.length(3);
  });

  it('does not send again a request whose fresh socket is reset', async () => {
    reset = (n) => n === 1;
    const err = await rejection(post('one'));
    expect(err.message).to.equal('cannot reach "staged": socket hang up');
    expect(seen.map((s) => s.body)).to.deep.equal(['one']);
    expect(sent.map((req) => req.reusedSocket)).to.deep.equal([false]);
  });

  it('does not send again a request destroyed here (a channel closing) on a reused socket', async () => {
    hold = (n) => n === 2;
    expect(await post('one')).to.equal('one');
    let mine: http.ClientRequest | undefined;
    const pending = post('two', (req) => (mine = req));
    while (seen.length < 2) await new Promise((resolve) => setImmediate(resolve));
    expect(mine?.reusedSocket).to.equal(true);
    mine!.destroy();
    await rejection(pending);
    expect(sent).to.have.length(2);
    expect(seen.map((s) => s.body)).to.deep.equal(['one', 'two']);
  });
});
