/*
 * The request-target of an HTTP request, read without throwing. `new URL(req.url, base)` throws on targets a
 * peer may send on purpose (`//`, `http://[`), and it resolves `//host/path` to another authority; a server
 * must answer such a request 400 and go on, so only the origin form (RFC 9112 §3.2.1: a path starting with one
 * `/`, then an optional query) is read, and anything else is undefined.
 */

/** A request's path and query, as sent. */
interface RequestTarget {
  /** The path, as sent (no dot-segment or percent-decoding: `/mcp` is the only spelling of `/mcp`). */
  path: string;
  query: URLSearchParams;
}

/** The origin-form target `raw` (a request's `url`), or undefined when it is not one. */
export function requestTarget(raw: string | undefined): RequestTarget | undefined {
  if (raw === undefined || raw[0] !== '/' || raw[1] === '/') return undefined;
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  if (path.includes('#')) return undefined;
  return { path, query: new URLSearchParams(q === -1 ? '' : raw.slice(q + 1)) };
}
