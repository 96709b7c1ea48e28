// A small Streamable HTTP MCP server on plain node:http, with faults to inject: streams dropped after N events,
// retry:, priming events and keep-alives, replays after Last-Event-ID (duplicates included), 404 for a session,
// statuses for GET, stalls, and bytes split at every boundary. Listens on 127.0.0.1, port 0. Written without
// the code under test.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

export interface Faults {
  /** Close the connection of a request's SSE stream after this many events (once per stream). */
  dropAfterEvents?: number;
  /** Send no event ids at all (so a dropped stream cannot be resumed). */
  noIds?: boolean;
  /** A `retry:` field at the start of every stream. */
  retryMs?: number;
  /** Open each stream with a priming event: an id and empty data. */
  priming?: boolean;
  /** `: keepalive` comments this often. */
  keepAliveMs?: number;
  /** On a resume, replay from one event before Last-Event-ID (one the client has already). */
  replayDuplicate?: boolean;
  /** Answer requests as one JSON body instead of a stream. */
  json?: boolean;
  /** With json: this raw body instead of the answer, for requests other than initialize (and the era probe). */
  rawJsonBody?: string;
  /** Statuses for successive GET requests (then 200); e.g. [409, 503]. */
  getStatuses?: number[];
  /** Every GET gets 503. */
  getUnavailable?: boolean;
  /** Write every event one byte at a time. */
  splitBytes?: boolean;
  /** A GET (not a resume) sends its headers, then nothing. */
  stallGet?: boolean;
  /** A GET is answered only after this long. */
  delayGetMs?: number;
}

interface StreamLog {
  id: string;
  /** Events as written: [eventId, text]. */
  events: Array<[string, string]>;
  /** Where live events go now; undefined while disconnected. */
  res: http.ServerResponse | undefined;
  done: boolean;
  dropped: boolean;
}

export interface Seen {
  method: string;
  headers: http.IncomingHttpHeaders;
  body: Json | undefined;
  at: number;
}

export class FaultServer {
  readonly server: http.Server;
  faults: Faults;
  readonly seen: Seen[] = [];
  /** When each GET was answered (ms since the epoch). */
  readonly getAnsweredAt: number[] = [];
  readonly sessions = new Set<string>();
  readonly #streams = new Map<string, StreamLog>();
  readonly #open = new Set<http.ServerResponse>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #standalone: StreamLog | undefined;
  #next = 0;
  #getCount = 0;

  constructor(faults: Faults = {}) {
    this.faults = faults;
    this.server = http.createServer((req, res) => void this.#handle(req, res));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/mcp`;
  }

  async close(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    for (const res of this.#open) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** Ends every session: the next request with its id gets 404. */
  expireSessions(): void {
    this.sessions.clear();
  }

  /** A notification on the standalone GET stream. */
  notify(method: string, params: Json): void {
    if (this.#standalone !== undefined) this.#emit(this.#standalone, { jsonrpc: '2.0', method, params });
  }

  /** Drops the connection of the standalone stream (the stream itself goes on). */
  dropGetStream(): void {
    this.#standalone?.res?.destroy();
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text === '' ? undefined : (JSON.parse(text) as Json);
    this.seen.push({ method: req.method ?? '', headers: req.headers, body, at: Date.now() });
    const session = req.headers['mcp-session-id'];
    const isInit = body?.method === 'initialize';
    if (!isInit && typeof session === 'string' && !this.sessions.has(session)) return void res.writeHead(404).end('{"error":"no such session"}');
    if (req.method === 'DELETE') {
      if (typeof session === 'string') this.sessions.delete(session);
      return void res.writeHead(200).end();
    }
    if (req.method === 'GET') {
      if (this.faults.delayGetMs !== undefined) await new Promise((resolve) => setTimeout(resolve, this.faults.delayGetMs));
      this.getAnsweredAt.push(Date.now());
      return this.#get(req, res);
    }
    if (req.method !== 'POST' || body === undefined) return void res.writeHead(405).end();
    if (typeof body.method === 'string' && body.id === undefined) return void res.writeHead(202).end();
    if (body.method === undefined) return void res.writeHead(202).end();
    const headers: http.OutgoingHttpHeaders = {};
    if (isInit) {
      const id = randomUUID();
      this.sessions.add(id);
      headers['mcp-session-id'] = id;
    }
    const replies = this.#answer(body);
    if (this.faults.json) {
      res.writeHead(200, { ...headers, 'content-type': 'application/json' });
      if (this.faults.rawJsonBody !== undefined && !isInit && body.method !== 'server/discover') return void res.end(this.faults.rawJsonBody);
      return void res.end(JSON.stringify(replies[replies.length - 1]));
    }
    const stream = this.#openStream(res, headers);
    for (const reply of replies) this.#emit(stream, reply);
    stream.done = true;
    if (stream.res !== undefined) {
      stream.res.end();
      stream.res = undefined;
    }
  }

  #get(req: http.IncomingMessage, res: http.ServerResponse): void {
    const last = req.headers['last-event-id'];
    if (typeof last === 'string') {
      const log = this.#streams.get(last.split('/')[0]!);
      if (log === undefined) return void res.writeHead(404).end();
      const index = log.events.findIndex(([id]) => id === last);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      this.#track(res);
      const from = Math.max(0, this.faults.replayDuplicate ? index : index + 1);
      for (const [, event] of log.events.slice(from)) this.#write(res, event);
      if (log.done) return void res.end();
      log.res = res;
      return;
    }
    const status = this.faults.getUnavailable ? 503 : this.faults.getStatuses?.[this.#getCount++];
    if (status !== undefined && status !== 200) return void res.writeHead(status).end();
    if (this.faults.stallGet) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      this.#track(res);
      return;
    }
    this.#standalone = this.#openStream(res, {});
  }

  #openStream(res: http.ServerResponse, headers: http.OutgoingHttpHeaders): StreamLog {
    const log: StreamLog = { id: `s${this.#next++}`, events: [], res, done: false, dropped: false };
    this.#streams.set(log.id, log);
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // At once, as the MCP SDK's server and serve do: a client learns the stream is open before any event.
    res.flushHeaders();
    this.#track(res);
    if (this.faults.retryMs !== undefined) this.#write(res, `retry: ${this.faults.retryMs}\n\n`);
    if (this.faults.priming) this.#record(log, '');
    if (this.faults.keepAliveMs !== undefined) {
      const timer = setInterval(() => log.res?.write(': keepalive\n\n'), this.faults.keepAliveMs);
      this.#timers.add(timer);
      res.on('close', () => {
        clearInterval(timer);
        this.#timers.delete(timer);
      });
    }
    return log;
  }

  #emit(log: StreamLog, msg: Json): void {
    this.#record(log, JSON.stringify(msg));
  }

  #record(log: StreamLog, data: string): void {
    const id = `${log.id}/${log.events.length}`;
    const event = this.faults.noIds ? `data: ${data}\n\n` : `id: ${id}\ndata: ${data}\n\n`;
    log.events.push([id, event]);
    const res = log.res;
    if (res === undefined) return;
    const drop = this.faults.dropAfterEvents;
    if (drop !== undefined && log.events.length === drop && !log.dropped) {
      // The connection goes once this event's bytes are out; the events after it wait for a resume.
      log.dropped = true;
      log.res = undefined;
      this.#write(res, event, () => res.destroy());
      return;
    }
    this.#write(res, event);
  }

  #write(res: http.ServerResponse, text: string, then?: () => void): void {
    const bytes = Buffer.from(text);
    if (!this.faults.splitBytes) return void res.write(bytes, then);
    bytes.forEach((byte, i) => {
      res.write(Buffer.from([byte]), i === bytes.length - 1 ? then : undefined);
    });
  }

  #track(res: http.ServerResponse): void {
    this.#open.add(res);
    res.on('close', () => this.#open.delete(res));
  }

  /** The messages that answer one request: progress notifications, then the response. */
  #answer(msg: Json): Json[] {
    const id = msg.id;
    const params = (msg.params ?? {}) as Json;
    switch (msg.method) {
      case 'initialize':
        return [
          {
            jsonrpc: '2.0',
            id,
            result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'fault-server', version: '1.0.0' } },
          },
        ];
      case 'ping':
        return [{ jsonrpc: '2.0', id, result: {} }];
      case 'tools/call': {
        const args = (params.arguments ?? {}) as Json;
        const steps = typeof args.steps === 'number' ? args.steps : 0;
        const out: Json[] = [];
        for (let i = 1; i <= steps; i++)
          out.push({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: id, progress: i, total: steps } });
        out.push({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: String(args.text ?? '') }] } });
        return out;
      }
      default:
        return [{ jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${String(msg.method)}` } }];
    }
  }
}
