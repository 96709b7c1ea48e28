/*
 * Who is calling: a caller as the resource server found it in its access token. Sessions are bound to it, the
 * gateway's policy decides by it, and the gateway tells requests of different callers apart by it; it sits on the
 * floor because serve's sessions and the gateway both speak of it and neither owns it.
 */

/** A caller as the resource server found it in its access token. */
export interface Caller {
  /** `iss` and `sub`, the key sessions are bound by. */
  readonly subject: string;
  readonly scopes: readonly string[];
  /** The token's claims (sub, groups, email, ...). */
  readonly claims: Readonly<Record<string, unknown>>;
}

/**
 * Whether two requests come from the same caller: the same subject, or both without one (no sign-in: every client
 * is one anonymous caller). What one caller's request causes may reach only that caller.
 */
export function sameCaller(a: Caller | undefined, b: Caller | undefined): boolean {
  return a?.subject === b?.subject;
}

/**
 * The access token each caller signed in with, by caller: kept beside it, never on it, so that no log, trail or
 * copy of a caller (claims are forwarded, callers are compared and printed) can carry it. Held in memory only, for
 * as long as the caller is; the gateway's token exchange (gateway/exchange.ts) is its one reader.
 */
const tokens = new WeakMap<Caller, string>();

/** `caller`, signed in with `token`. */
export function signedInWith<C extends Caller>(caller: C, token: string): C {
  tokens.set(caller, token);
  return caller;
}

/** The access token `caller` signed in with, when known. */
export function tokenOf(caller: Caller | undefined): string | undefined {
  return caller === undefined ? undefined : tokens.get(caller);
}
