/*
 * The WWW-Authenticate header (RFC 9110 §11.6.1): what a server that wants a token says, parsed; and the Basic
 * credentials a client presents to an authorization server.
 */

/** A parsed `WWW-Authenticate` challenge (`Bearer`, `DPoP`). */
export interface AuthChallenge {
  scheme: string;
  /** The challenge's parameters (`resource_metadata`, `scope`, `error`, `error_description`, `realm`), lower-cased keys. */
  params: Record<string, string>;
}

/**
 * The challenges of a WWW-Authenticate header (RFC 9110 §11.6.1): a scheme, then `key=value` parameters whose
 * values are tokens or quoted strings, separated by commas; a token followed by a space and no `=` starts the
 * next challenge. Malformed parts are skipped, never thrown on.
 */
export function parseChallenges(header: string | string[] | undefined): AuthChallenge[] {
  const text = Array.isArray(header) ? header.join(', ') : (header ?? '');
  const challenges: AuthChallenge[] = [];
  let current: AuthChallenge | undefined;
  let i = 0;
  const n = text.length;
  const spaces = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\t')) i++;
  };
  while (i < n) {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === ',')) i++;
    const start = i;
    while (i < n && TCHAR.test(text[i]!)) i++;
    if (i === start) {
      i++;
      continue;
    }
    const name = text.slice(start, i);
    spaces();
    if (text[i] !== '=' || current === undefined) {
      current = { scheme: name, params: {} };
      challenges.push(current);
      continue;
    }
    // `name=` then a value is a parameter; `name==` up to a comma or the end is a token68 (kept as `token68`).
    let eq = i;
    while (eq < n && text[eq] === '=') eq++;
    const after = text.slice(eq).trimStart();
    if (eq - i > 1 || after === '' || after[0] === ',') {
      current.params.token68 = text.slice(start, eq);
      i = eq;
      continue;
    }
    i++;
    spaces();
    let value = '';
    if (text[i] === '"') {
      i++;
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < n) i++;
        value += text[i];
        i++;
      }
      i++;
    } else {
      const begin = i;
      while (i < n && text[i] !== ',' && text[i] !== ' ' && text[i] !== '\t') i++;
      value = text.slice(begin, i);
    }
    current.params[name.toLowerCase()] = value;
  }
  return challenges;
}

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z/]/;

/** The Bearer challenge of a WWW-Authenticate header, if it has one. */
export function bearerChallenge(header: string | string[] | undefined): AuthChallenge | undefined {
  return parseChallenges(header).find((c) => c.scheme.toLowerCase() === 'bearer');
}

/** The challenge to sign in by: the Bearer one, else a DPoP one (RFC 9449 §7.1: the server takes only DPoP-bound tokens). */
export function authChallenge(header: string | string[] | undefined): AuthChallenge | undefined {
  const all = parseChallenges(header);
  return all.find((c) => c.scheme.toLowerCase() === 'bearer') ?? all.find((c) => c.scheme.toLowerCase() === 'dpop');
}

/**
 * The Authorization header of a client that authenticates with client_secret_basic (RFC 6749 §2.3.1): its id and
 * secret each form-encoded, then joined and base64-encoded (a secret holding `:` or `%` survives the trip).
 */
export function clientSecretBasic(clientId: string, clientSecret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
}
