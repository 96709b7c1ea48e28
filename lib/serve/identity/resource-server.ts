/*
 * `serve` as an OAuth 2.1 resource server (the MCP authorization spec's protected server): its protected resource
 * metadata (RFC 9728), and each request's bearer token checked: a JWT access token against the issuer's keys
 * (found from its RFC 8414 or OpenID metadata), or an opaque one through RFC 7662 introspection.
 *
 * A JWT must be signed by a key of the issuer's JWKS with an asymmetric algorithm (never `none`, never an HMAC:
 * the keys are public), `iss` exactly the issuer, `aud` holding the resource (RFC 8707: a token for another
 * resource is refused), `exp` in the future and `nbf` past (LEEWAY_S either way). The JWS work is jose's (the
 * field's standard, no dependencies of its own), loaded only when serve is given an issuer, as the Redis client
 * is only for --store; its remote key set is cached, fetched again for an unknown `kid`, at most once per 30 s.
 */
import { createHash } from 'node:crypto';
import { type Caller, signedInWith } from '../../protocol/caller.js';
import type { Logger } from '../../log.js';
import { Refusal } from '../../protocol/refusal.js';
import { clientSecretBasic } from '../../protocol/www-authenticate.js';
import { isObject } from '../../jsonrpc.js';
import { missingPeer } from '../../errors.js';
import { type ClaimOnce, DPOP_ALGORITHMS, DpopCheck, type ProvenRequest } from './dpop.js';

export interface ResourceServerOptions {
  /** The authorization server's issuer identifier, exactly as its tokens' `iss`. */
  issuer: string;
  /** The resource: this server's public MCP URL, as clients reach it (the tokens' audience). */
  resource: string;
  /** Scopes every token must have. */
  requiredScopes?: readonly string[];
  /** Scopes the metadata names besides the required ones (those a policy asks for). */
  otherScopes?: () => readonly string[];
  /** For opaque tokens: the introspection endpoint, with this server's own client credentials. */
  introspection?: { endpoint: string; clientId: string; clientSecret: string };
  /**
   * DPoP (RFC 9449): `allow` takes a token bound to a key only with a proof of it, and others as bearer tokens;
   * `require` takes bound tokens only. @defaultValue 'allow'
   */
  dpop?: 'allow' | 'require';
  /** Where a proof's jti is claimed across replicas (their store), besides this process. */
  claimOnce?: ClaimOnce;
  /** serve's own MCP path (the public URL's path may carry a proxy's prefix before it). @defaultValue the public URL's path */
  localPath?: string;
  log: Logger;
}

/** A request's DPoP header, and what its proof must name: the method, and the URL as the public URL has it. */
interface DpopContext extends ProvenRequest {
  proof: string | undefined;
}

/** A request's verdict: its caller, or the status and WWW-Authenticate challenge to refuse it with. */
export type Authentication = { caller: Caller } | { status: 401 | 403; challenge: string; reason: string };

/** Clock skew allowed on exp and nbf, in seconds. */
const LEEWAY_S = 30;
/** The algorithms a token may be signed with: asymmetric ones only. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Introspection answers kept at most this long (and never past the token's exp), and at most this many. */
const INTROSPECTION_CACHE_MS = 5 * 60_000;
const INTROSPECTION_CACHE_SIZE = 10_000;
/** After a failed metadata fetch, the next request tries again no sooner than this. */
const DISCOVERY_RETRY_MS = 5000;

type Jose = typeof import('jose');

let joseLoaded: Promise<Jose> | undefined;

/**
 * jose, loaded once: a clear error naming it when it is not installed.
 * @internal (its type names jose, an optional peer: not in the published typings)
 */
export function loadJose(): Promise<Jose> {
  joseLoaded ??= import('jose').catch((err: unknown) => {
    joseLoaded = undefined;
    throw missingPeer('serve --auth-issuer validates tokens', 'jose', err);
  });
  return joseLoaded;
}

/** The quoted-string form of a challenge parameter value (RFC 9110 §5.6.4). */
const quoted = (text: string): string => `"${text.replace(/["\\]/g, '\\$&')}"`;

/** The metadata URL of `resource` (RFC 9728 §3.1: the well-known path before the resource's own path). */
function metadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

export class ResourceServer {
  readonly #options: ResourceServerOptions;
  readonly #metadataUrl: string;
  #jose: Jose | undefined;
  #keys: ReturnType<Jose['createRemoteJWKSet']> | undefined;
  #discovering: Promise<void> | undefined;
  #discoveryFailed: { at: number; why: string } | undefined;
  #discovered = false;
  readonly #introspected = new Map<string, { caller: Caller; until: number }>();
  readonly #dpop: DpopCheck;
  readonly #dpopRequired: boolean;

  constructor(options: ResourceServerOptions) {
    this.#options = options;
    this.#metadataUrl = metadataUrl(options.resource);
    this.#dpop = new DpopCheck(loadJose, options.claimOnce);
    this.#dpopRequired = options.dpop === 'require';
  }

  /**
   * The URL a DPoP proof of a request to `path` names (htu): the public URL's origin, the prefix a proxy in front
   * takes off (the public URL's path before `localPath`, serve's own MCP path), and the path.
   */
  htuOf(path: string): string {
    const publicUrl = new URL(this.#options.resource);
    const local = this.#options.localPath ?? publicUrl.pathname;
    const prefix = publicUrl.pathname.endsWith(local) ? publicUrl.pathname.slice(0, -local.length) : '';
    return `${publicUrl.origin}${prefix}${path.split('?')[0]}`;
  }

  /** The paths the metadata is served at: the path-suffixed one, and the root one. */
  get metadataPaths(): string[] {
    const suffixed = new URL(this.#metadataUrl).pathname;
    return [...new Set([suffixed, '/.well-known/oauth-protected-resource'])];
  }

  /** The protected resource metadata (RFC 9728 §2). */
  metadata(): Record<string, unknown> {
    const scopes = [...new Set([...(this.#options.requiredScopes ?? []), ...(this.#options.otherScopes?.() ?? [])])];
    return {
      resource: this.#options.resource,
      authorization_servers: [this.#options.issuer],
      ...(scopes.length === 0 ? {} : { scopes_supported: scopes }),
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: DPOP_ALGORITHMS,
      ...(this.#dpopRequired ? { dpop_bound_access_tokens_required: true } : {}),
    };
  }

  /** A WWW-Authenticate challenge: where the metadata is, the scope asked, and the error when a token was refused. */
  challenge(
    error?: 'invalid_token' | 'insufficient_scope',
    scopes: readonly string[] = this.#options.requiredScopes ?? [],
    description?: string,
  ): string {
    const parts = [`resource_metadata=${quoted(this.#metadataUrl)}`];
    if (scopes.length > 0) parts.push(`scope=${quoted(scopes.join(' '))}`);
    if (error !== undefined) parts.push(`error=${quoted(error)}`);
    if (description !== undefined) parts.push(`error_description=${quoted(description)}`);
    return this.#dpopRequired ? `DPoP ${parts.join(', ')}, algs=${quoted(DPOP_ALGORITHMS.join(' '))}` : `Bearer ${parts.join(', ')}`;
  }

  /** The challenge of a refused DPoP proof (RFC 9449 §7.1). */
  #proofRefused(reason: string): Authentication {
    const parts = [`error="invalid_dpop_proof"`, `error_description=${quoted(reason)}`, `algs=${quoted(DPOP_ALGORITHMS.join(' '))}`];
    return {
      status: 401,
      challenge: `DPoP ${parts.join(', ')}, resource_metadata=${quoted(this.#metadataUrl)}`,
      reason: `refused the DPoP proof (${reason})`,
    };
  }

  /** The 403 that asks a caller for more scopes (`scopes`: those that would allow the call, with the required ones). */
  stepUp(caller: Caller, scopes: readonly string[]): { status: 403; challenge: string; reason: string } {
    const wanted = [...new Set([...caller.scopes, ...(this.#options.requiredScopes ?? []), ...scopes])];
    return {
      status: 403,
      challenge: this.challenge('insufficient_scope', wanted, `this call needs the scope ${scopes.join(' ')}`),
      reason: `insufficient scope: the call needs ${scopes.join(' ')}`,
    };
  }

  /**
   * Checks the Authorization header of a request, and with a token bound to a key (`cnf.jkt`), its DPoP proof
   * (`dpop`: the DPoP header, and the request it must name).
   */
  async authenticate(authorization: string | undefined, dpop?: DpopContext): Promise<Authentication> {
    const presented = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '');
    if (authorization === undefined) return { status: 401, challenge: this.challenge(), reason: 'no Authorization header' };
    if (presented === null) return this.#refused('the Authorization header is not a bearer or DPoP token');
    const [, scheme, token] = presented as unknown as [string, string, string];
    let caller: Caller;
    try {
      caller = token.split('.').length === 3 ? await this.#verifyJwt(token) : await this.#introspect(token);
    } catch (err) {
      if (err instanceof Refusal) return this.#refused(err.message);
      throw err;
    }
    const cnf = caller.claims.cnf;
    const jkt = isObject(cnf) && typeof cnf.jkt === 'string' ? cnf.jkt : undefined;
    const asDpop = scheme.toLowerCase() === 'dpop';
    // A bound token sent as a bearer one is refused (no downgrade), and so is an unbound one sent as DPoP.
    if (jkt !== undefined && !asDpop) return this.#refused('the token is bound to a key (DPoP): send it as Authorization: DPoP, with a proof');
    if (jkt === undefined && asDpop) return this.#refused('the token is not bound to a key: the DPoP scheme is for tokens that are');
    if (jkt === undefined && this.#dpopRequired) return this.#refused('this server takes DPoP-bound tokens only');
    if (jkt !== undefined) {
      const problem = await this.#dpop.problem(dpop?.proof, { method: dpop?.method ?? '', url: dpop?.url ?? '' }, token, jkt);
      if (problem !== undefined) return this.#proofRefused(problem);
    }
    const missing = (this.#options.requiredScopes ?? []).filter((scope) => !caller.scopes.includes(scope));
    if (missing.length > 0) return this.stepUp(caller, missing);
    // The token goes with the caller in memory only, for the gateway's token exchange (protocol/caller.ts).
    return { caller: signedInWith(caller, token) };
  }

  #refused(reason: string): Authentication {
    return { status: 401, challenge: this.challenge('invalid_token', undefined, reason), reason: `refused the token (${reason})` };
  }

  async #verifyJwt(token: string): Promise<Caller> {
    await this.#discover();
    const jose = this.#jose!;
    if (this.#keys === undefined)
      throw new Refusal(401, 'the authorization server publishes no keys (jwks_uri), and no introspection endpoint is set');
    try {
      const { payload } = await jose.jwtVerify(token, this.#keys, {
        issuer: this.#options.issuer,
        audience: this.#options.resource,
        algorithms: ALGORITHMS,
        clockTolerance: LEEWAY_S,
        requiredClaims: ['exp', 'sub'],
      });
      return callerOf(payload as Record<string, unknown>, this.#options.issuer);
    } catch (err) {
      throw new Refusal(401, jwtProblem(err as Error & { code?: string; claim?: string }));
    }
  }

  /** Finds the issuer's keys from its metadata (RFC 8414, then OpenID Connect Discovery), once. */
  async #discover(): Promise<void> {
    this.#jose ??= await loadJose();
    if (this.#discovered) return;
    const failed = this.#discoveryFailed;
    if (failed !== undefined && Date.now() - failed.at < DISCOVERY_RETRY_MS)
      throw new Refusal(401, `the issuer's metadata could not be read: ${failed.why}`);
    this.#discovering ??= this.#fetchMetadata().finally(() => {
      this.#discovering = undefined;
    });
    await this.#discovering;
  }

  async #fetchMetadata(): Promise<void> {
    const issuer = new URL(this.#options.issuer);
    const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
    const candidates = [
      `${issuer.origin}/.well-known/oauth-authorization-server${path}`,
      `${this.#options.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
    ];
    const problems: string[] = [];
    for (const url of candidates) {
      try {
        const res = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
        if (!res.ok) {
          problems.push(`${url}: HTTP ${res.status}`);
          await res.body?.cancel();
          continue;
        }
        const metadata: unknown = await res.json();
        if (!isObject(metadata) || metadata.issuer !== this.#options.issuer) {
          problems.push(
            `${url}: its issuer is ${JSON.stringify(isObject(metadata) ? metadata.issuer : undefined)}, not ${JSON.stringify(this.#options.issuer)}`,
          );
          continue;
        }
        if (typeof metadata.jwks_uri === 'string')
          this.#keys = this.#jose!.createRemoteJWKSet(new URL(metadata.jwks_uri), { cooldownDuration: 30_000 });
        this.#discoveryFailed = undefined;
        this.#discovered = true;
        return;
      } catch (err) {
        problems.push(`${url}: ${(err as Error).message}`);
      }
    }
    const why = problems.join('; ');
    this.#discoveryFailed = { at: Date.now(), why };
    this.#options.log.error('auth.discovery_failed', `the authorization server's metadata could not be read: ${why}`, {
      issuer: this.#options.issuer,
    });
    throw new Refusal(401, `the issuer's metadata could not be read: ${why}`);
  }

  /** An opaque token, asked of the introspection endpoint (RFC 7662) once per token and cached for its life. */
  async #introspect(token: string): Promise<Caller> {
    const config = this.#options.introspection;
    if (config === undefined) throw new Refusal(401, 'an opaque token, and no introspection endpoint is set to check it (--introspection-endpoint)');
    const key = createHash('sha256').update(token).digest('base64url');
    const cached = this.#introspected.get(key);
    if (cached !== undefined && cached.until > Date.now()) return cached.caller;
    this.#introspected.delete(key);
    let answer: unknown;
    try {
      const res = await fetch(config.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: clientSecretBasic(config.clientId, config.clientSecret),
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        signal: AbortSignal.timeout(10_000),
      });
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`HTTP ${res.status}`);
      }
      answer = await res.json();
    } catch (err) {
      this.#options.log.error('auth.introspection_failed', `token introspection failed: ${(err as Error).message}`);
      throw new Refusal(401, `the introspection endpoint could not be asked: ${(err as Error).message}`);
    }
    if (!isObject(answer) || answer.active !== true) throw new Refusal(401, 'the authorization server says the token is not active');
    if (answer.iss !== undefined && answer.iss !== this.#options.issuer) throw new Refusal(401, 'the token was issued by another issuer');
    const aud = answer.aud;
    if (aud !== undefined && !(aud === this.#options.resource || (Array.isArray(aud) && aud.includes(this.#options.resource))))
      throw new Refusal(401, 'the token is for another resource (its audience is not this server)');
    const exp = typeof answer.exp === 'number' ? answer.exp * 1000 : undefined;
    if (exp !== undefined && exp + LEEWAY_S * 1000 < Date.now()) throw new Refusal(401, 'the token has expired');
    if (typeof answer.sub !== 'string') throw new Refusal(401, 'the introspection answer names no subject (sub)');
    const caller = callerOf(answer, this.#options.issuer);
    if (this.#introspected.size >= INTROSPECTION_CACHE_SIZE) this.#introspected.delete(this.#introspected.keys().next().value!);
    this.#introspected.set(key, { caller, until: Math.min(exp ?? Number.POSITIVE_INFINITY, Date.now() + INTROSPECTION_CACHE_MS) });
    return caller;
  }
}

function callerOf(claims: Record<string, unknown>, issuer: string): Caller {
  const scope = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
  const scp = Array.isArray(claims.scp) ? claims.scp.filter((s): s is string => typeof s === 'string') : [];
  return { subject: `${issuer} ${String(claims.sub)}`, scopes: [...new Set([...scope, ...scp])], claims };
}

/** A jose error as the reason a token is refused. */
function jwtProblem(err: Error & { code?: string; claim?: string }): string {
  switch (err.code) {
    case 'ERR_JWT_EXPIRED':
      return 'the token has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (err.claim === 'aud') return 'the token is for another resource (its audience is not this server)';
      if (err.claim === 'iss') return 'the token was issued by another issuer';
      if (err.claim === 'nbf') return 'the token is not valid yet';
      return `the token's ${err.claim ?? 'claims'} claim is not acceptable`;
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'the token is signed with an algorithm this server does not take (asymmetric ones only; never none)';
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return "no key of the issuer's key set matches the token's";
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return "the token's signature does not verify";
    default:
      return `the token is not a valid JWT (${err.code ?? err.name})`;
  }
}
