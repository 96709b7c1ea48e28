/*
 * Who may talk to serve: requests whose Host is not the address it listens on (DNS rebinding), whose
 * Origin is foreign, or that lack the bearer token are refused before anything else is read.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { networkInterfaces } from 'node:os';
import { isLoopback } from '../../protocol/loopback.js';
import { Refusal } from '../../protocol/refusal.js';

interface GuardOptions {
  /** The address the server listens on. */
  host: string;
  port: number;
  /** Further `Host` values to admit (a name, or name:port). */
  allowHosts: string[];
  /** Further origins to admit (`https://app.example`). */
  allowOrigins: string[];
  /** The bearer token every request must carry, when set. */
  token: string | undefined;
}

const WILDCARD = new Set(['0.0.0.0', '::']);

/** `host:port` as it appears in a Host header (IPv6 in brackets), lower case. */
function hostPort(host: string, port: number): string {
  return `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`.toLowerCase();
}

/** The --allow-host value that would admit `host` (its name alone: that admits it with or without the port), printable. */
function allowHostHint(host: string): string {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
  return /^[\w.[\]:-]{1,100}$/.test(name) ? name : '<name>';
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export class Guard {
  readonly #hosts = new Set<string>();
  readonly #origins = new Set<string>();
  readonly #token: Buffer | undefined;

  constructor(options: GuardOptions) {
    const names = new Set([options.host, 'localhost', '127.0.0.1', '[::1]']);
    if (!isLoopback(options.host) && !WILDCARD.has(options.host)) names.delete('127.0.0.1');
    if (WILDCARD.has(options.host)) {
      for (const list of Object.values(networkInterfaces())) for (const info of list ?? []) names.add(info.address);
    }
    const portless = options.port === 80 || options.port === 443;
    for (const name of names) this.#admit(name, options.port, portless);
    // A name given without a port is what clients of a balancer, a Service or an ingress send: with no port (the
    // scheme's default), :80, :443, or serve's own port.
    for (const name of options.allowHosts) {
      if (/:\d+$/.test(name) && !/^[^[]*:.*:/.test(name)) this.#admit(name, undefined, false);
      else this.#admit(name, options.port, true);
    }
    for (const origin of options.allowOrigins) {
      const parsed = new URL(origin).origin;
      // file:, data: and the like have an opaque origin, serialized `null`: any page can send that (a sandboxed
      // iframe, a data: URL), so it can never name one allowed page.
      if (parsed === 'null')
        throw new TypeError(`allowOrigins: ${JSON.stringify(origin.slice(0, 60))} has an opaque origin (null), which any page can send`);
      this.#origins.add(parsed);
    }
    this.#token = options.token === undefined ? undefined : digest(options.token);
  }

  /**
   * Admits `name` as a Host: with `port` (undefined: the name carries its own), and with `bare` also without a port
   * and with the default ports, each with its origins.
   */
  #admit(name: string, port: number | undefined, bare: boolean): void {
    const hosts = [port === undefined ? name.toLowerCase() : hostPort(name, port)];
    if (bare && !WILDCARD.has(name)) {
      const plain = (name.includes(':') && !name.startsWith('[') ? `[${name}]` : name).toLowerCase();
      hosts.push(plain, `${plain}:80`, `${plain}:443`);
      this.#origins.add(`https://${plain}`);
    }
    for (const host of hosts) {
      this.#hosts.add(host);
      // Either scheme: a page of the other one cannot come from this port (serve speaks one of them there).
      if (!WILDCARD.has(name)) this.#origins.add(`http://${host}`).add(`https://${host}`);
    }
  }

  /** The Host values admitted (`host:port`), for the log at start. */
  get hosts(): string[] {
    return [...this.#hosts];
  }

  /** Why `req` is refused, or undefined when it may go on. */
  check(req: IncomingMessage): Refusal | undefined {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!this.#hosts.has(host)) {
      return new Refusal(
        403,
        `Host ${JSON.stringify(host.slice(0, 60))} is not the address this server listens on (admit it with --allow-host ${allowHostHint(host)})`,
      );
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !this.originAllowed(origin)) {
      return new Refusal(403, `Origin ${JSON.stringify(origin.slice(0, 60))} is not allowed (add it with --allow-origin)`);
    }
    if (this.#token !== undefined && !this.#tokenMatches(req.headers.authorization)) {
      const reason = req.headers.authorization === undefined ? 'no Authorization header' : 'wrong bearer token';
      return new Refusal(401, reason, { headers: { 'WWW-Authenticate': 'Bearer' } });
    }
    return undefined;
  }

  /** True when pages of `origin` may call the server (this server's own origin, or one allowed). */
  originAllowed(origin: string): boolean {
    return origin !== 'null' && this.#origins.has(origin.toLowerCase());
  }

  /** Compares digests, in constant time, so that neither the token's length nor its prefix leaks. */
  #tokenMatches(header: string | undefined): boolean {
    const match = /^Bearer\s+(.+)$/i.exec(header ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!.trim()), this.#token!);
  }
}
