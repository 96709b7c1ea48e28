/*
 * DPoP at the resource server (RFC 9449 §4.3 and §7.1; MCP SEP-1932): a token bound to a key (`cnf.jkt`) is taken
 * only with a proof, signed by that key, of this very request. A proof is a JWT of `typ` `dpop+jwt`, signed with an
 * asymmetric algorithm by the public key its header carries (`jwk`), whose claims name the request's method
 * (`htm`) and URL (`htu`, no query or fragment), when it was made (`iat`), a value never used before (`jti`) and
 * the token it goes with (`ath`, the base64url SHA-256 of the token).
 *
 * The JWS work is jose's, as the token's (see resource-server.ts). A `jti` is remembered for the window in which
 * its proof is taken (PROOF_WINDOW_S and the skew): in this process, and across replicas through their store when
 * there is one (the first replica to see it wins). The process's memory of them is bounded (SEEN_MAX): past it,
 * the oldest, whose proofs are the nearest to being refused for their age anyway, are forgotten first.
 */
import { createHash } from 'node:crypto';
import { Refusal } from '../../protocol/refusal.js';

type Jose = typeof import('jose');

/** A proof is taken this long after its `iat`, in seconds; and this much of a clock ahead of ours. */
const PROOF_WINDOW_S = 60;
const PROOF_SKEW_S = 5;
/** The jtis this process remembers at most. */
const SEEN_MAX = 100_000;
/** The proof keys kept imported at most. */
const KEYS_MAX = 10_000;

/** The proof algorithms taken: asymmetric ones only (RFC 9449 §4.3: never none, never a MAC). */
export const DPOP_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA'];

/**
 * Claims a proof's jti (hashed) for `ttlMs` (true: nobody had it; false: a replay): the replicas' store's, when
 * serve has one.
 */
export type ClaimOnce = (jti: string, ttlMs: number) => Promise<boolean>;

/** The request a proof must prove: its method, and its URL as the public URL names it. */
export interface ProvenRequest {
  method: string;
  url: string;
}

export class DpopCheck {
  readonly #jose: () => Promise<Jose>;
  readonly #shared: ClaimOnce | undefined;
  /** jti to when it may be forgotten (ms), in the order seen. */
  readonly #seen = new Map<string, number>();
  /** Imported public keys, by algorithm and thumbprint (at most KEYS_MAX, the first imported forgotten first). */
  readonly #keys = new Map<string, Awaited<ReturnType<Jose['importJWK']>>>();

  constructor(jose: () => Promise<Jose>, shared?: ClaimOnce) {
    this.#jose = jose;
    this.#shared = shared;
  }

  /** Why `proof` does not prove `request` for `token`, bound to the key of thumbprint `jkt`; undefined when it does. */
  async problem(proof: string | undefined, request: ProvenRequest, token: string, jkt: string): Promise<string | undefined> {
    if (proof === undefined || proof === '') return 'no DPoP proof (the DPoP header) came with the DPoP-bound token';
    if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(proof)) return 'the DPoP header is not one JWT';
    const jose = await this.#jose();
    let header: ReturnType<Jose['decodeProtectedHeader']>;
    let payload: Record<string, unknown>;
    try {
      header = jose.decodeProtectedHeader(proof);
      if (header.typ !== 'dpop+jwt') return "the proof's typ is not dpop+jwt";
      const jwk = header.jwk;
      if (jwk === undefined || jwk.kty === 'oct' || 'd' in jwk) return 'the proof carries no public key (jwk) to check it with';
      if (typeof header.alg !== 'string' || !DPOP_ALGORITHMS.includes(header.alg))
        return `the proof is signed with an algorithm this server does not take (${DPOP_ALGORITHMS.join(' ')})`;
      if ((await jose.calculateJwkThumbprint(jwk, 'sha256')) !== jkt) return 'the proof is signed by a key the token is not bound to';
      ({ payload } = await jose.jwtVerify(proof, await this.#key(jose, jkt, jwk, header.alg), { typ: 'dpop+jwt', algorithms: DPOP_ALGORITHMS }));
    } catch (err) {
      return proofProblem(err as Error & { code?: string });
    }
    if (payload.htm !== request.method) return `the proof is for another method (htm), not this ${request.method}`;
    if (typeof payload.htu !== 'string' || comparable(payload.htu) !== comparable(request.url)) return 'the proof is for another URL (htu)';
    const now = Date.now() / 1000;
    if (typeof payload.iat !== 'number' || payload.iat > now + PROOF_SKEW_S || payload.iat < now - PROOF_WINDOW_S - PROOF_SKEW_S)
      return `the proof was not made within ${PROOF_WINDOW_S} s of now (iat)`;
    if (payload.ath !== createHash('sha256').update(token).digest('base64url')) return 'the proof is for another token (ath)';
    if (typeof payload.jti !== 'string' || payload.jti === '' || payload.jti.length > 256) return 'the proof has no jti';
    if (!(await this.#claim(payload.jti))) return 'the proof was used before (its jti is replayed)';
    return undefined;
  }

  /**
   * The public key of thumbprint `jkt` (the proof's jwk, whose thumbprint it is), imported once: a bound token's
   * every request is proven with the same key.
   */
  async #key(jose: Jose, jkt: string, jwk: Parameters<Jose['importJWK']>[0], alg: string): Promise<Awaited<ReturnType<Jose['importJWK']>>> {
    const cached = this.#keys.get(`${alg} ${jkt}`);
    if (cached !== undefined) return cached;
    const key = await jose.importJWK(jwk, alg);
    if (this.#keys.size >= KEYS_MAX) this.#keys.delete(this.#keys.keys().next().value!);
    this.#keys.set(`${alg} ${jkt}`, key);
    return key;
  }

  /** Claims a jti here, then (when it is new here) in the store: false when either has seen it. */
  async #claim(jti: string): Promise<boolean> {
    const now = Date.now();
    const ttlMs = (PROOF_WINDOW_S + 2 * PROOF_SKEW_S) * 1000;
    const until = this.#seen.get(jti);
    if (until !== undefined && until > now) return false;
    this.#seen.delete(jti);
    this.#seen.set(jti, now + ttlMs);
    for (const [old, expires] of this.#seen) {
      if (this.#seen.size <= SEEN_MAX && expires > now) break;
      this.#seen.delete(old);
    }
    if (this.#shared === undefined) return true;
    return this.#shared(createHash('sha256').update(jti).digest('base64url'), ttlMs).catch((err: Error) => {
      throw new Refusal(503, `a DPoP proof cannot be checked for replay: the session store does not answer (${err.message})`);
    });
  }
}

/** A URL as htu is compared (RFC 9449 §4.3: no query or fragment; syntax- and scheme-based normalization). */
function comparable(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return undefined;
  }
}

/** A jose error as the reason a proof is refused. */
function proofProblem(err: Error & { code?: string }): string {
  switch (err.code) {
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return `the proof is signed with an algorithm this server does not take (${DPOP_ALGORITHMS.join(' ')})`;
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return "the proof's signature does not verify with the key it carries";
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return 'the proof is not a DPoP proof (typ)';
    default:
      return `the proof is not a valid JWT (${err.code ?? err.name})`;
  }
}
