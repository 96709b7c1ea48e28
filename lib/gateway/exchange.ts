/*
 * Each caller's own credentials to a remote server behind the gateway: the caller's access token exchanged (RFC
 * 8693) at the token endpoint of the gateway's authorization server for one meant for that server, so that the
 * server can tell who calls and apply its own permissions. The caller's own token never goes on (the MCP
 * authorization spec forbids passing it through); an exchanged token is kept, in memory only, until shortly before
 * it expires, and asked for again after.
 *
 *   host ──(caller's token, audience: the gateway)──▶ gateway
 *   gateway ──(POST token endpoint: subject_token = caller's token, resource = the server's URL; Basic auth
 *             as MCP_FRAME_EXCHANGE_CLIENT_ID)──▶ authorization server ──(access_token for the server)──▶ gateway
 *   gateway ──(Authorization: Bearer <exchanged>, over a connection of that caller's own)──▶ remote server
 */
import { createHash } from 'node:crypto';
import { isObject } from '../jsonrpc.js';
import { clientSecretBasic } from '../protocol/www-authenticate.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
/** An exchanged token is asked for again this long before it expires. */
const EARLY_MS = 30_000;
/** Held at most this long when the answer names no expiry. */
const UNSAID_MS = 5 * 60_000;
/** Exchanged tokens kept at once (callers times servers); the oldest go first. */
const KEPT = 10_000;
/** How long one exchange may take. */
const EXCHANGE_TIMEOUT_MS = 10_000;

/** What a server's entry asks of the exchange (its `auth`, with `mode: exchange`). */
export interface ExchangeTarget {
  /** The server's URL: the exchange's `resource`. */
  resource: string;
  audience?: string | undefined;
  scope?: string | undefined;
}

interface TokenExchangeOptions {
  /** The authorization server the callers' tokens come from (`--auth-issuer`): its metadata names the token endpoint. */
  issuer: string;
  /** The gateway as a client of that server (MCP_FRAME_EXCHANGE_CLIENT_ID and _SECRET). */
  clientId: string;
  clientSecret: string;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
}

/** An exchange the authorization server refused, or could not be asked: its message names why, never a token. */
class ExchangeError extends Error {
  readonly code = 'EXCHANGE_REFUSED';
}

export class TokenExchange {
  readonly #options: TokenExchangeOptions;
  readonly #fetch: typeof fetch;
  #endpoint: Promise<string> | undefined;
  /** Exchanged tokens by a hash of the caller's token and the target, and until when each is used. */
  readonly #kept = new Map<string, { token: string; until: number }>();
  /** Exchanges in flight, by the same key: callers of one token asking at once share one. */
  readonly #asking = new Map<string, Promise<string>>();

  constructor(options: TokenExchangeOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  /** A token for `target` in place of `subjectToken` (kept until shortly before it expires); an ExchangeError otherwise. */
  tokenFor(subjectToken: string, target: ExchangeTarget): Promise<string> {
    const key = createHash('sha256')
      .update(JSON.stringify([subjectToken, target.resource, target.audience, target.scope]))
      .digest('base64url');
    const kept = this.#kept.get(key);
    if (kept !== undefined && kept.until > Date.now()) return Promise.resolve(kept.token);
    this.#kept.delete(key);
    let asking = this.#asking.get(key);
    if (asking === undefined) {
      asking = this.#exchange(subjectToken, target, key).finally(() => this.#asking.delete(key));
      this.#asking.set(key, asking);
    }
    return asking;
  }

  /** The token endpoint, from the issuer's metadata (read once; again after a failure). */
  #tokenEndpoint(): Promise<string> {
    this.#endpoint ??= (async () => {
      // The sign-in code loads only when a server needs it (mcp-frame/serve loads none of it otherwise).
      const { authorizationServerMetadata } = await import('../client/auth/discovery.js');
      const metadata = await authorizationServerMetadata(new URL(this.#options.issuer), AbortSignal.timeout(EXCHANGE_TIMEOUT_MS));
      const endpoint = metadata?.token_endpoint;
      if (typeof endpoint !== 'string')
        throw new ExchangeError(`the authorization server ${this.#options.issuer} names no token endpoint in its metadata`);
      return endpoint;
    })().catch((err: unknown) => {
      this.#endpoint = undefined;
      throw err instanceof ExchangeError
        ? err
        : new ExchangeError(`the metadata of ${this.#options.issuer} could not be read: ${(err as Error).message}`);
    });
    return this.#endpoint;
  }

  async #exchange(subjectToken: string, target: ExchangeTarget, key: string): Promise<string> {
    const endpoint = await this.#tokenEndpoint();
    const body = new URLSearchParams({ grant_type: GRANT, subject_token: subjectToken, subject_token_type: ACCESS_TOKEN, resource: target.resource });
    if (target.audience !== undefined) body.set('audience', target.audience);
    if (target.scope !== undefined) body.set('scope', target.scope);
    const { clientId, clientSecret } = this.#options;
    let answer: unknown;
    let status: number;
    try {
      const res = await this.#fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: clientSecretBasic(clientId, clientSecret),
        },
        body: body.toString(),
        signal: AbortSignal.timeout(EXCHANGE_TIMEOUT_MS),
      });
      status = res.status;
      answer = await res.json().catch(() => undefined);
    } catch (err) {
      throw new ExchangeError(`the token endpoint ${endpoint} could not be asked: ${(err as Error).message}`);
    }
    if (status !== 200 || !isObject(answer) || typeof answer.access_token !== 'string') {
      const said = isObject(answer) && typeof answer.error === 'string' ? answer.error : `HTTP ${status}`;
      const why = isObject(answer) && typeof answer.error_description === 'string' ? `: ${answer.error_description.slice(0, 200)}` : '';
      throw new ExchangeError(`the authorization server refused the token exchange (${said}${why})`);
    }
    const lifeMs = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in * 1000 : UNSAID_MS;
    if (this.#kept.size >= KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(key, { token: answer.access_token, until: Date.now() + Math.max(0, lifeMs - EARLY_MS) });
    return answer.access_token;
  }
}
