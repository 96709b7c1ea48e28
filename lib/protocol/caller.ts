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
