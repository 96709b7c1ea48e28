/*
 * DPoP (RFC 9449; MCP SEP-1932): access tokens bound to a key pair the client holds, each request carrying a
 * fresh proof signed with it. One ES256 key pair per authorization server, for the life of the process (a token
 * bound to it is kept with the key's private half in the auth store, so that a file store's tokens stay usable in
 * the next process); the nonces servers hand out (DPoP-Nonce) are kept per origin and put in later proofs.
 *
 * Written on node:crypto rather than a JWT library: a proof is one ES256 JWS of five claims, the same signing
 * the client's private_key_jwt assertion already does (wire.ts signJwt), and the core takes no dependency.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject, randomUUID, sign } from 'node:crypto';

/** The one proof algorithm this client signs with. */
export const DPOP_ALG = 'ES256';

/** The RFC 7638 thumbprint of an EC public JWK (SHA-256, base64url): the `jkt` a bound token names. */
function jwkThumbprint(jwk: JsonWebKey): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}

/** `url` as a proof's `htu`: no query, no fragment (RFC 9449 §4.2). */
export function htuOf(url: URL | string): string {
  const u = new URL(String(url));
  return `${u.origin}${u.pathname}`;
}

export class DpopKey {
  readonly #privateKey: KeyObject;
  /** The public half, as the proof's `jwk` header carries it. */
  readonly publicJwk: JsonWebKey;
  readonly thumbprint: string;

  private constructor(privateKey: KeyObject) {
    this.#privateKey = privateKey;
    const { kty, crv, x, y } = createPublicKey(privateKey).export({ format: 'jwk' });
    // An EC key exports all four.
    this.publicJwk = { kty: kty!, crv: crv!, x: x!, y: y! };
    this.thumbprint = jwkThumbprint(this.publicJwk);
  }

  static generate(): DpopKey {
    return new DpopKey(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
  }

  /** A key kept as a private JWK (what `toJwk()` gave). */
  static fromJwk(jwk: JsonWebKey): DpopKey {
    return new DpopKey(createPrivateKey({ key: jwk, format: 'jwk' }));
  }

  /** The private JWK, to keep a bound token usable in another process. A secret, like the token. */
  toJwk(): JsonWebKey {
    return this.#privateKey.export({ format: 'jwk' });
  }

  /**
   * A proof for one request: `htm` and `htu` of the request, a new `jti`, `iat` now, `ath` (the access token's
   * SHA-256) when a token is presented, and the server's nonce when it gave one.
   */
  proof(method: string, url: URL | string, accessToken?: string, nonce?: string): string {
    const header = { typ: 'dpop+jwt', alg: DPOP_ALG, jwk: this.publicJwk };
    const claims: Record<string, unknown> = { jti: randomUUID(), htm: method.toUpperCase(), htu: htuOf(url), iat: Math.floor(Date.now() / 1000) };
    if (accessToken !== undefined) claims.ath = createHash('sha256').update(accessToken, 'ascii').digest('base64url');
    if (nonce !== undefined) claims.nonce = nonce;
    const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    const signature = sign('sha256', Buffer.from(input), { key: this.#privateKey, dsaEncoding: 'ieee-p1363' });
    return `${input}.${signature.toString('base64url')}`;
  }
}

/** The process's key pairs, one per authorization server (by issuer). */
const KEYS = new Map<string, DpopKey>();

/** The key pair for `issuer`: the one this process holds, else the one kept (`kept`), else a new one. */
export function dpopKeyFor(issuer: string, kept?: JsonWebKey): DpopKey {
  let key = KEYS.get(issuer);
  if (key === undefined) {
    key = kept === undefined ? DpopKey.generate() : DpopKey.fromJwk(kept);
    KEYS.set(issuer, key);
  }
  return key;
}

/** The nonces servers handed out (the DPoP-Nonce header), by origin: the latest one is used. */
export class DpopNonces {
  readonly #byOrigin = new Map<string, string>();

  get(url: URL | string): string | undefined {
    return this.#byOrigin.get(new URL(String(url)).origin);
  }

  /** Keeps the nonce a response gave, if any (a visible-ASCII value of sane length only). */
  note(url: URL | string, header: string | string[] | null | undefined): boolean {
    const value = Array.isArray(header) ? header[0] : header;
    if (typeof value !== 'string' || !/^[\x21-\x7e]{1,512}$/.test(value)) return false;
    this.#byOrigin.set(new URL(String(url)).origin, value);
    return true;
  }
}
