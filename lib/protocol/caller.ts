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
