/*
 * The local socket of `serve`: a Unix domain socket (a named pipe on Windows) carrying NDJSON, the bytes of
 * stdio, with one child per connection. The socket file is private to its owner (0600) and removed on close.
 */
import { CODES } from '../../protocol/codes.js';
import type { Logger } from '../../log.js';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import * as net from 'node:net';
import { StreamChannel } from '../../client/channel.js';

import { type FrameError, frameProblem } from '../../errors.js';
import { isRequest, rpcError } from '../../jsonrpc.js';
import { pidNote, type ServedChild } from './children.js';
import { Refusal } from '../../protocol/refusal.js';
import type { SessionTable } from './table.js';
import { type ServeContext, sendAs } from './context.js';

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
function serveConnection(socket: net.Socket, ctx: ServeContext, label: string, log: Logger): ServedChild {
  const child = ctx.children.start(label, log);
  const peer = new StreamChannel(socket, socket, { name: 'socket client', maxMessageBytes: ctx.maxMessageBytes });
  peer.on('invalid', (err: FrameError) => {
    ctx.telemetry.publish('frame:bad', { from: 'client' });
    log.warn('client.bad_frame', `skipped a bad frame from the client: ${frameProblem(err)}`, { code: err.code });
  });
  peer.on('message', (msg: unknown) => {
    sendAs(ctx, child, msg, undefined).catch((err: Error) => {
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

/** Each socket connection a session of its own, admitted as HTTP sessions are (counted together). */
export function takeConnections(socketServer: net.Server, ctx: ServeContext, table: SessionTable, socketChildren: Set<ServedChild>): void {
  const store = table.store;
  let connections = 0;
  socketServer.on('connection', (socket) => {
    // A peer that resets while its admission is decided must not end the process.
    socket.on('error', () => undefined);
    // Nothing starts until the peer sends its first bytes: a connection that sends none (a second serve
    // checking that the socket is live, a health probe) is no session and starts no server.
    socket.once('readable', () => {
      if (socket.readableLength === 0) return void socket.destroy();
      admitConnection(socket);
    });
  });
  const admitConnection = (socket: net.Socket): void => {
    const n = ++connections;
    const label = `socket connection ${n}`;
    void table.admit().then((room) => {
      if (room instanceof Refusal || socket.destroyed) {
        if (room instanceof Refusal)
          ctx.log.warn('session.refused', `refused a socket connection: ${room.reason}`, { why: room.reason, transport: 'socket' });
        else room.abandon();
        socket.destroy();
        return;
      }
      const log = ctx.log.child({ connection: n, transport: 'socket' }, label);
      const child = serveConnection(socket, ctx, label, log);
      room.starting(child);
      ctx.telemetry.publish('session:open', { transport: 'socket' });
      socketChildren.add(child);
      log.info('session.started', `started${pidNote(child)}`, child.pid === undefined ? {} : { pid: child.pid });
      child.on('close', () => {
        socketChildren.delete(child);
        void store?.release(room.id);
        log.info('session.ended', 'ended');
      });
    });
  };
}
