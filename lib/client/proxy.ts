/*
 * Corporate proxies: with NODE_USE_ENV_PROXY=1 (the switch newer Node versions read for node:http themselves; the
 * command line's --use-env-proxy sets it), requests to a remote server and to its authorization server go
 * through HTTPS_PROXY (https URLs) or HTTP_PROXY (http ones), unless NO_PROXY names the host, in a CONNECT tunnel
 * (RFC 9110 §9.3.6): the proxy sees the host and port, never the request, and TLS runs end to end inside it.
 * Written here rather than taken from a package (undici's ProxyAgent serves fetch only; https-proxy-agent is one
 * agent per proxy URL and no NO_PROXY): a tunnel is one CONNECT and a socket handed to the agent.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';

/** The proxy for `target`, from the environment, or undefined (none set, not switched on, or NO_PROXY names it). */
export function proxyFor(target: URL, env: NodeJS.ProcessEnv = process.env): URL | undefined {
  if (env.NODE_USE_ENV_PROXY !== '1') return undefined;
  const value = target.protocol === 'https:' ? (env.HTTPS_PROXY ?? env.https_proxy) : (env.HTTP_PROXY ?? env.http_proxy);
  if (value === undefined || value === '') return undefined;
  if (bypassed(target, env.NO_PROXY ?? env.no_proxy ?? '')) return undefined;
  let proxy: URL;
  try {
    proxy = new URL(value.includes('://') ? value : `http://${value}`);
  } catch {
    throw new TypeError(`the proxy ${target.protocol === 'https:' ? 'HTTPS_PROXY' : 'HTTP_PROXY'} is not a URL`);
  }
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') throw new TypeError(`the proxy's scheme ${proxy.protocol} is not http or https`);
  return proxy;
}

/**
 * Whether NO_PROXY names the target: `*`, a host (and its subdomains; a leading `.` or `*.` alike), or a host
 * with a port; entries apart by commas or spaces, compared without case.
 */
function bypassed(target: URL, noProxy: string): boolean {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const match = /^(.*?)(?::(\d+))?$/.exec(entry.replace(/^\[|\](?=:|$)/g, ''))!;
    const name = match[1]!.replace(/^\*?\./, '');
    if (match[2] !== undefined && match[2] !== port) continue;
    if (host === name || host.endsWith(`.${name}`)) return true;
  }
  return false;
}

/** Opens a CONNECT tunnel through `proxy` to `host:port`; the socket is the tunnel once the proxy answered 2xx. */
function tunnel(proxy: URL, host: string, port: number, done: (err: Error | null, socket?: net.Socket) => void): void {
  const proxyPort = Number(proxy.port || (proxy.protocol === 'https:' ? 443 : 80));
  const socket: net.Socket =
    proxy.protocol === 'https:'
      ? tls.connect({ host: proxy.hostname, port: proxyPort, servername: proxy.hostname })
      : net.connect({ host: proxy.hostname, port: proxyPort });
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const credentials =
    proxy.username === ''
      ? ''
      : `Proxy-Authorization: Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}\r\n`;
  let head = '';
  let settled = false;
  const fail = (err: Error): void => {
    socket.destroy();
    if (settled) return;
    settled = true;
    done(err);
  };
  // A proxy that hangs up before it answers is the proxy's failure, said at once (not the server's, at a timeout).
  const hungUp = (): void => fail(new Error(`the proxy ${proxy.host} closed the connection without answering CONNECT to ${authority}`));
  const onData = (chunk: Buffer): void => {
    head += chunk.toString('latin1');
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (head.length > 16 * 1024) fail(new Error(`the proxy ${proxy.host} answered CONNECT with more than 16 KiB of headers`));
      return;
    }
    socket.off('data', onData);
    socket.off('error', fail);
    socket.off('end', hungUp);
    socket.off('close', hungUp);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
    if (status < 200 || status >= 300) {
      return fail(
        new Error(`the proxy ${proxy.host} refused the tunnel to ${authority}: ${head.slice(0, head.indexOf('\r\n')) || 'no status line'}`),
      );
    }
    // Bytes after the proxy's answer are the server's already: given back to the stream.
    const rest = Buffer.from(head.slice(end + 4), 'latin1');
    if (rest.length > 0) socket.unshift(rest);
    settled = true;
    done(null, socket);
  };
  socket.on('error', fail);
  socket.on('data', onData);
  socket.once('end', hungUp);
  socket.once('close', hungUp);
  socket.once(proxy.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${credentials}\r\n`);
  });
}

type Created = (err: Error | null, socket?: net.Socket) => void;

/**
 * An agent for requests to `target`'s origin: through a tunnel when a proxy applies (see proxyFor), else the
 * usual http or https agent.
 */
export function agentFor(target: URL, options: http.AgentOptions, env: NodeJS.ProcessEnv = process.env): http.Agent {
  const proxy = proxyFor(target, env);
  const secure = target.protocol === 'https:';
  if (proxy === undefined) return new (secure ? https.Agent : http.Agent)(options);
  const agent = new (secure ? https.Agent : http.Agent)(options);
  // An Agent may create its connection asynchronously: it waits for the callback when none is returned.
  (agent as unknown as { createConnection: (o: tls.ConnectionOptions & net.TcpNetConnectOpts, cb: Created) => undefined }).createConnection = (
    o,
    cb,
  ) => {
    tunnel(proxy, String(o.host ?? target.hostname), Number(o.port ?? (target.port || (secure ? 443 : 80))), (err, socket) => {
      if (err !== null || socket === undefined) return cb(err ?? new Error('no tunnel'));
      if (!secure) return cb(null, socket);
      const secured = tls.connect({ ...o, socket, servername: o.servername ?? target.hostname });
      const onError = (e: Error): void => cb(e);
      secured.once('error', onError);
      secured.once('secureConnect', () => {
        secured.off('error', onError);
        cb(null, secured);
      });
    });
    return undefined;
  };
  return agent;
}
