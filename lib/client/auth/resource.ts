/*
 * The small readings every step of a sign-in shares: a server's URL as a resource (RFC 8707), whether metadata's
 * resource may stand for it, where a secret may travel, what kind of client a redirect makes, metadata values.
 */
import { isLoopback } from '../../protocol/loopback.js';

export const trimSlash = (s: string): string => (s.endsWith('/') ? s.slice(0, -1) : s);

/** A metadata value that is a list of strings, or undefined. */
export function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined;
}

/** True for an https URL, or an http one on this machine (the only place a code or a secret may go in the clear). */
export function secureEndpoint(url: string | URL): boolean {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && isLoopback(parsed.hostname));
}

/** A metadata value that is a non-empty string, or undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The OpenID `application_type` a redirect URI says (SEP-837): `native` for a loopback or private-use scheme
 * redirect, as a command line or a desktop app has; `web` for any other.
 */
export function applicationType(redirectUri: string): 'native' | 'web' {
  try {
    const url = new URL(redirectUri);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'native';
    return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) ? 'native' : 'web';
  } catch {
    return 'web';
  }
}

/** The server's URL as a resource: no fragment, no query. */
export function canonicalResource(url: URL): string {
  const u = new URL(url);
  u.hash = '';
  u.search = '';
  return u.href;
}

/**
 * Whether the protected resource metadata's `resource` may stand for the server at `server`: the same origin,
 * and a path that is a prefix of the server's (by whole segments).
 */
export function resourceAllowed(resource: string, server: URL): boolean {
  let r: URL;
  try {
    r = new URL(resource);
  } catch {
    return false;
  }
  if (r.origin !== server.origin) return false;
  const prefix = r.pathname.endsWith('/') ? r.pathname : `${r.pathname}/`;
  const path = server.pathname.endsWith('/') ? server.pathname : `${server.pathname}/`;
  return path.startsWith(prefix);
}
