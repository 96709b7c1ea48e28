/*
 * A remote channel's sign-in, loaded when first used: the authorization flow (auth/, with its discovery,
 * registration, grants, DPoP and stores) is a dynamic import, so that a process that never signs in (serve in
 * front of stdio servers, a client of stdio or token-configured servers) never loads it.
 */
import type { AuthSession } from './auth/session.js';
import type { AuthOptions } from './auth/types.js';
import type { AuthChallenge } from './errors.js';
import { MIN_SECRET_LENGTH, replaceSecrets } from '../redaction.js';

/** How many times one request may sign in (or refresh) before it fails with AUTH_SCOPE_LOOP. */
export const MAX_SIGN_INS_PER_REQUEST = 3;

export class SignIn {
  readonly #server: URL;
  readonly #options: AuthOptions;
  #session: AuthSession | undefined;
  #loading: Promise<AuthSession> | undefined;
  #closed = false;

  constructor(server: URL, options: AuthOptions) {
    this.#server = server;
    this.#options = options;
  }

  /** Whether a user agent sign-in is under way (request timeouts wait for it). */
  get signingIn(): boolean {
    return this.#session?.signingIn ?? false;
  }

  /** How long authorize() has taken in all (ms). */
  get waitedMs(): number {
    return this.#session?.waitedMs ?? 0;
  }

  /** The Authorization header value for the next request, if there is a token. */
  async header(): Promise<string | undefined> {
    return (await this.#load()).header();
  }

  /** The DPoP proof for a request, when the token is DPoP-bound (header() has loaded the session by then). */
  proof(method: string, url: URL): string | undefined {
    return this.#session?.proof(method, url);
  }

  /** Keeps the server's DPoP-Nonce; true when it gave one. */
  noteNonce(url: URL, header: string | string[] | undefined): boolean {
    return this.#session?.noteNonce(url, header) ?? false;
  }

  /** A 401 or a 403 insufficient_scope: signs in (or refreshes) and resolves when the request may go again. */
  async refused(status: number, challenge: AuthChallenge | undefined, sent: string | undefined): Promise<void> {
    return (await this.#load()).refused(status, challenge, sent);
  }

  /** `text` with every secret of the sign-in replaced; before the flow is loaded, the configured client secret. */
  scrub(text: string): string {
    if (this.#session !== undefined) return this.#session.scrub(text);
    const secret = this.#options.client?.clientSecret;
    return secret !== undefined && secret.length >= MIN_SECRET_LENGTH ? replaceSecrets(text, [secret]) : text;
  }

  close(): void {
    this.#closed = true;
    this.#session?.close();
  }

  #load(): Promise<AuthSession> {
    this.#loading ??= import('./auth/session.js').then(({ AuthSession }) => {
      const session = new AuthSession(this.#server, this.#options);
      this.#session = session;
      if (this.#closed) session.close();
      return session;
    });
    return this.#loading;
  }
}
