// Plain HTTP requests for the serve tests, on node:http so that any header (Host included) can be set, and
// event streams read as they come.
import http from 'node:http';
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** The `_meta` a raw 2026-07-28 request carries. */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A raw 2026-07-28 POST: its headers mirrored from the body, MODERN_META under the params' own `_meta`. */
export function modernPost(id: unknown, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}): RawRequest {
  return {
    method: 'POST',
    headers: {
      ...MCP_HEADERS,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...MODERN_META, ...((params._meta as object) ?? {}) } } }),
  };
}

/** Sends a request and resolves once the response has ended (or closed). */
export function rawRequest(url: string, request: RawRequest = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: request.method ?? 'GET', headers: request.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      const done = (): void => resolve({ status: res.statusCode!, headers: res.headers, body });
      res.on('end', done);
      res.on('close', done);
    });
    req.on('error', reject);
    req.end(request.body);
  });
}

/** An event stream read as it comes: its events so far, and a way to wait for more or drop it. */
export interface OpenStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: Array<{ id?: string; event?: string; data: string; retry?: string }>;
  /** Resolves once `n` events have arrived (or rejects when the stream ends first). */
  until(n: number): Promise<void>;
  ended: Promise<void>;
  drop(): void;
}

function parseEvent(block: string): OpenStream['events'][number] | undefined {
  const event: OpenStream['events'][number] = { data: '' };
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') data.push(value);
    else if (field === 'id' || field === 'event' || field === 'retry') event[field] = value;
  }
  if (data.length === 0 && event.id === undefined) return undefined;
  event.data = data.join('\n');
  return event;
}

export function openStream(url: string, request: RawRequest = {}): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: request.method ?? 'GET', headers: request.headers, agent: false }, (res) => {
      let buffer = '';
      const waiters: Array<{ n: number; resolve(): void; reject(e: Error): void }> = [];
      let finished = false;
      const stream: OpenStream = {
        status: res.statusCode!,
        headers: res.headers,
        events: [],
        until: (n) =>
          stream.events.length >= n
            ? Promise.resolve()
            : finished
              ? Promise.reject(new Error(`the stream ended after ${stream.events.length} events`))
              : new Promise((resolve, reject) => waiters.push({ n, resolve, reject })),
        ended: new Promise((resolve) => res.once('close', resolve)),
        drop: () => req.destroy(),
      };
      const settle = (): void => {
        for (const w of [...waiters]) {
          if (stream.events.length >= w.n) w.resolve();
          else if (finished) w.reject(new Error(`the stream ended after ${stream.events.length} events`));
          else continue;
          waiters.splice(waiters.indexOf(w), 1);
        }
      };
      res.setEncoding('utf8').on('data', (d: string) => {
        buffer += d;
        let end = buffer.indexOf('\n\n');
        while (end !== -1) {
          const event = parseEvent(buffer.slice(0, end));
          if (event !== undefined) stream.events.push(event);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
        settle();
      });
      res.once('close', () => {
        finished = true;
        settle();
      });
      resolve(stream);
    });
    req.on('error', reject);
    req.end(request.body);
  });
}

/** A GET with `target` exactly as given on its request line (node:http would normalize it), read to the close. */
export function rawTarget(port: number, target: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    const lines = Object.entries({ host: `127.0.0.1:${port}`, connection: 'close', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`GET ${target} HTTP/1.1\r\n${lines.join('')}\r\n`);
  });
}

/** A POST whose response is handed over unread: the caller decides when (and whether) to read it. */
export function postUnread(url: string, session: string, body: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...MCP_HEADERS, 'mcp-session-id': session }, agent: false }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Reads a response to its end, counting the occurrences of `needle` (across chunk boundaries). */
export async function countIn(res: http.IncomingMessage, needle: string): Promise<{ count: number; tail: string }> {
  let count = 0;
  let carry = '';
  res.setEncoding('utf8');
  for await (const chunk of res as AsyncIterable<string>) {
    const text = carry + chunk;
    let at = text.indexOf(needle);
    let last = -1;
    while (at !== -1) {
      count++;
      last = at;
      at = text.indexOf(needle, at + needle.length);
    }
    carry = text.slice(Math.max(last === -1 ? 0 : last + needle.length, text.length - needle.length - 200));
  }
  return { count, tail: carry };
}
