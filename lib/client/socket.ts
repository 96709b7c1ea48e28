/*
 * The socket channel: a server behind a local socket (`mcp-frame serve --socket`), NDJSON both ways.
 */
import * as net from 'node:net';
import { StreamChannel } from './channel.js';
import { ConnectionError, type ExitStatus } from './errors.js';

/** A StreamChannel over a socket, which close() also destroys once what was written has gone out. */
class SocketChannel extends StreamChannel {
  readonly #socket: net.Socket;

  constructor(socket: net.Socket, name: string) {
    super(socket, socket, { name });
    this.#socket = socket;
  }

  override close(): Promise<ExitStatus> {
    const status = super.close();
    this.#socket.destroySoon();
    return status;
  }
}

/** Connects to the socket at `path`; rejects with CONNECT_FAILED when nothing listens there. */
export function openSocket(path: string, name: string): Promise<StreamChannel> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path);
    const fail = (err: NodeJS.ErrnoException): void => {
      const why = err.code === 'ENOENT' ? 'no such socket' : err.code === 'ECONNREFUSED' ? 'nothing is listening on it' : err.message;
      reject(new ConnectionError('CONNECT_FAILED', `cannot connect to "${name}" at ${path}: ${why}`, { cause: err }));
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.off('error', fail);
      resolve(new SocketChannel(socket, name));
    });
  });
}
