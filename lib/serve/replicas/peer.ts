/*
 * Direct forwarding between replicas (`serve --advertise-url`): a request for a session another replica owns goes
 * to that replica over HTTP, where replicas can reach each other (a Kubernetes StatefulSet behind a headless
 * service, or any setup where each has an address), instead of through Redis pub/sub. HTTP brings its own flow
 * control and no size ceiling, and Redis keeps only ownership and limits: measured in `npm run bench`, a carried
 * request through the tunnel costs two or more PUBLISHes and every byte of its answer through Redis.
 *
 * The owner takes such a request as one carried to it through the tunnel (without the front door's checks, which
 * the carrying replica made), so it must prove that a replica sent it: the peer key, a random secret the replicas
 * share through the store (anyone who can read the store can speak in any session already), in a header of its
 * own. A request whose peer key is wrong is refused with 403 before anything is read.
 */
import { CODES } from '../../protocol/codes.js';
import { rpcError } from '../../jsonrpc.js';
import * as http from 'node:http';
import * as https from 'node:https';
import { timingSafeEqual } from 'node:crypto';
import { safeLine } from '../../errors.js';
import { whenGone } from '../../protocol/response.js';
import type { TunnelRequest } from './store.js';

/** The header that carries the peer key from the replica that forwards a request to the one that owns it. */
export const PEER_HEADER = 'mcp-frame-peer';

/** The owner's answer to a forwarded request whose peer key it does not share (the store lost the key): try the tunnel. */
export const PEER_REFUSED_HEADER = 'mcp-frame-peer-refused';

/** How long a connection to another replica may take before the request goes through the store instead. */
const CONNECT_MS = 3000;

/** Hop-by-hop headers, never passed on (RFC 9110 §7.6.1), and those node:http sets itself. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

/**
 * Connections to other replicas, kept open between requests: one TCP and TLS set-up per peer, not per request. An
 * idle one is closed after 4 s, before the owner's HTTP server closes it (node:http's keep-alive time is 5 s), so
 * that a request is seldom written to a connection the owner is closing. No cap on connections per owner: a
 * forwarded GET stream holds its connection for as long as it is open, and a cap would queue every other request
 * to that owner behind such streams. Up to 1,024 idle ones are kept per owner (node:http keeps 256): a burst
 * of concurrent requests opens that many, and the next burst finds them (measured in `npm run bench`, 1,000
 * concurrent calls through three replicas: the serves' CPU per call 15-25% lower).
 */
const KEPT = { keepAlive: true, timeout: 4000, maxFreeSockets: 1024 };
const agents = { http: new http.Agent(KEPT), https: new https.Agent(KEPT) };

/** True when `given` is the peer key (in constant time). */
export function isPeerKey(given: string | string[] | undefined, key: string | undefined): boolean {
  if (typeof given !== 'string' || key === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Sends `request` to the replica at `address` (its advertised origin) and writes its answer to `res` as it comes,
 * with HTTP's flow control: a client that stops reading stops the owner's writes. Resolves with `unreachable`
 * when no connection could be made or the owner refused the peer key (nothing reached a server: the caller may
 * carry it another way), else `sent`. An owner lost after the request went out is a 502 saying it may have run,
 * or a cut stream once the answer began.
 */
export function forwardDirect(address: string, key: string, request: TunnelRequest, res: http.ServerResponse): Promise<'sent' | 'unreachable'> {
  return new Promise((resolve) => {
    const target = new URL(request.url, address);
    const secure = target.protocol === 'https:';
    const headers: http.OutgoingHttpHeaders = { ...request.headers, [PEER_HEADER]: key, 'content-length': Buffer.byteLength(request.body) };
    let connected = false;
    let settled = false;
    const settle = (how: 'sent' | 'unreachable'): void => {
      if (settled) return;
      settled = true;
      resolve(how);
    };
    const out = (secure ? https : http).request(target, { method: request.method, headers, agent: secure ? agents.https : agents.http }, (answer) => {
      if (answer.statusCode === 403 && answer.headers[PEER_REFUSED_HEADER] !== undefined) {
        answer.resume();
        return settle('unreachable');
      }
      settle('sent');
      const passed: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP.has(name) && value !== undefined) passed[name] = value;
      res.writeHead(answer.statusCode ?? 502, passed);
      // An event stream's first bytes go out at once, as the owner flushed them.
      res.flushHeaders();
      answer.pipe(res);
      answer.on('error', () => res.destroy());
      // The owner cut its answer: so is the client's (a client resumes an event stream with Last-Event-ID).
      answer.once('end', () => (complete = true));
      answer.on('close', () => complete || res.destroy());
    });
    // An address that drops packets would hold the request for the system's connect timeout (minutes).
    const connecting = setTimeout(() => connected || out.destroy(new Error(`no connection within ${CONNECT_MS} ms`)), CONNECT_MS);
    out.on('socket', (socket) => {
      // A kept connection is connected already; a new one is once it says so.
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    out.on('close', () => clearTimeout(connecting));
    out.on('error', (err: NodeJS.ErrnoException) => {
      // No connection; or a kept one the owner closed as this request went out on it (it read nothing of it).
      if (!connected || (!settled && out.reusedSocket && err.code === 'ECONNRESET')) return settle('unreachable');
      settle('sent');
      lost(res, err);
    });
    // The client left before the answer ended: so does the request to the owner, which ends it there as a client
    // that leaves does (a finished one keeps its connection for the next request).
    let complete = false;
    whenGone(res, () => complete || out.destroy());
    out.end(request.body);
  });
}

/** The answer to a forwarded request whose owner went away after taking it: it may have run. */
function lost(res: http.ServerResponse, err: Error): void {
  if (res.writableEnded || res.destroyed) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const why = `the replica that holds the session was lost after it took the request (${safeLine(err.message)}): the request may have run`;
  res.writeHead(502, { 'Content-Type': 'application/json' }).end(JSON.stringify(rpcError(null, CODES.serverError, why)));
}
