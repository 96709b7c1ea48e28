/*
 * The local socket of `serve`: a Unix domain socket (a named pipe on Windows) carrying NDJSON, the bytes of
 * stdio, with one child per connection. The socket file is private to its owner (0600) and removed on close.
 */
import { CODES } from '../protocol/codes.js';
import type { Logger } from '../log.js';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import * as net from 'node:net';
import { StreamChannel } from '../client/channel.js';

import { type FrameError, frameProblem } from '../errors.js';
import { isRequest, rpcError } from '../jsonrpc.js';
import { type ServeContext, startChild, type ServedChild } from './context.js';

const WINDOWS = process.platform === 'win32';

/** Removes a socket file that a crashed server left behind; refuses to touch anything else. */
async function clearStale(path: string): Promise<void> {
  if (WINDOWS) return;
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // Nothing there.
  }
  if (!isSocket) throw new Error(`cannot listen on ${path}: it exists and is not a socket`);
  const answered = await new Promise<boolean>((resolve) => {
    const probe = net.connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (answered) throw new Error(`cannot listen on ${path}: another server is listening there`);
  unlinkSync(path);
}

/** Listens on `path` with mode 0600: the file is created under a umask that leaves the owner alone. */
export async function listenSocket(path: string, server: net.Server): Promise<void> {
  await clearStale(path);
  const umask = WINDOWS ? undefined : process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    if (umask !== undefined) process.umask(umask);
  }
  if (!WINDOWS) chmodSync(path, 0o600);
}

export function removeSocket(path: string): void {
  if (WINDOWS) return;
  try {
    unlinkSync(path);
  } catch {
    // Gone already.
  }
}

/** Serves one connection: its own child, messages forwarded both ways until either side ends. */
export function serveConnection(socket: net.Socket, ctx: ServeContext, label: string, log: Logger): ServedChild {
  const child = startChild(ctx, label, undefined, log);
  const peer = new StreamChannel(socket, socket, { name: 'socket client', maxMessageBytes: ctx.maxMessageBytes });
  peer.on('invalid', (err: FrameError) => {
    ctx.observer?.badFrame?.('client');
    log.warn('client.bad_frame', `skipped a bad frame from the client: ${frameProblem(err)}`, { code: err.code });
  });
  peer.on('message', (msg: unknown) => {
    child.send(msg).catch((err: Error) => {
      if (isRequest(msg)) peer.send(rpcError(msg.id, CODES.serverError, err.message)).catch(() => undefined);
    });
  });
  // A client that reads slowly slows the child: while the socket needs drain the child is not read (it waits
  // on its stdout), so nothing piles up here and nothing is dropped. A send that still fails is logged.
  let release: (() => void) | undefined;
  child.on('message', (msg: unknown) => {
    const sent = peer.send(msg).catch((err: Error) => log.warn('client.unsent', `could not pass a message to the client: ${err.message}`));
    if (!peer.backedUp || release !== undefined) return;
    release = child.holdInput();
    void sent.finally(() => {
      release?.();
      release = undefined;
    });
  });
  peer.on('end', () => void child.close());
  child.on('close', () => {
    void peer.close();
    socket.destroySoon();
  });
  return child;
}
