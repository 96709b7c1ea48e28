import { expect } from 'chai';
import { request, createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { whenGone } from '../../lib/protocol/response.js';
import { within } from '../helpers/poll.js';

describe("protocol/response: an HTTP response's life", () => {
  it('calls back once when the client goes, and a forgotten wait not at all', async () => {
    const gone: string[] = [];
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('open');
      held.push(res);
      whenGone(res, () => gone.push(req.url!));
      const forget = whenGone(res, () => gone.push(`${req.url} (forgotten)`));
      forget();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const req = request({ host: '127.0.0.1', port, path: '/a' });
      req.end();
      const res = await new Promise<import('node:http').IncomingMessage>((resolve) => req.once('response', resolve));
      await new Promise((resolve) => res.once('data', resolve));
      expect(gone).to.deep.equal([]);
      req.destroy();
      await within(2000, 'the wait called back', () => (gone.length > 0 ? true : undefined), 5);
      expect(gone).to.deep.equal(['/a']);
      // The response ending afterwards calls nobody again.
      held[0]!.end();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(gone).to.deep.equal(['/a']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('leaves no listener on a kept-alive connection once the response ended', async () => {
    const server = createServer((_req, res) => {
      whenGone(res, () => undefined);
      res.end('done');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      let socketListeners = -1;
      server.on('request', (req, res) => res.once('finish', () => setImmediate(() => (socketListeners = req.socket.listenerCount('close')))));
      const before = await new Promise<number>((resolve) => {
        server.once('connection', (socket) => setImmediate(() => resolve(socket.listenerCount('close'))));
        request({ host: '127.0.0.1', port, agent: false }).end();
      });
      await within(2000, 'the response finished', () => (socketListeners === -1 ? undefined : true), 5);
      expect(socketListeners).to.equal(before);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
