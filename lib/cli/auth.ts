/*
 * Signing in from the command line: the loopback callback, the browser (only where one can open), the URL pasted
 * by hand, tokens in the shared file store; and `mcp-frame auth status|logout`.
 */
import { spawn } from 'node:child_process';
import { loopbackAuthorizer } from '../client/auth/agents.js';
import { canonicalResource, FLOW_PARAMS } from '../client/auth/session.js';
import { fileAuthStore } from '../client/auth/store.js';
import type { AuthEvent, AuthOptions, AuthRecord } from '../client/auth/types.js';
import { isStdioServer, type RemoteServerConfig, type ServerConfig } from '../client/config.js';
import { printable, safeLine } from '../errors.js';
import { connect } from '../client/connect.js';
import { ConnectionError } from '../client/errors.js';
import { isServerUrl, serverEntry } from './entry.js';
import { CliError, EXIT, keyValues, parseOptions, positiveInteger, writeStdout } from './io.js';

/** The flags every command that may sign in takes. */
export const AUTH_FLAGS = {
  'no-browser': { type: 'boolean', default: false },
  'callback-port': { type: 'string' },
  'auth-timeout': { type: 'string' },
  'authorize-param': { type: 'string', multiple: true },
  'client-id': { type: 'string' },
  'no-resource': { type: 'boolean', default: false },
  'device-code': { type: 'boolean', default: false },
} as const;

/** Where `--client-id`'s secret comes from: the environment, never argv (which every user of the machine can read). */
const CLIENT_SECRET_VAR = 'MCP_FRAME_CLIENT_SECRET';

export interface AuthFlags {
  noBrowser: boolean;
  callbackPort: number | undefined;
  authTimeoutMs: number;
  /** `--authorize-param k=v`: over the entry's `auth.params`. */
  authorizeParams: Record<string, string>;
  /** `--client-id`, with the secret from MCP_FRAME_CLIENT_SECRET when it is set. */
  client: { clientId: string; clientSecret?: string } | undefined;
  /** `--no-resource`: no RFC 8707 resource parameter. */
  noResource: boolean;
  /** `--device-code`: the device authorization grant, or a failed sign-in where it is not offered. */
  deviceCode: boolean;
}

export function authFlags(values: Record<string, unknown>, usage: string, env: NodeJS.ProcessEnv = process.env): AuthFlags {
  const port = positiveInteger(values['callback-port'] as string | undefined, '--callback-port', usage);
  if (port !== undefined && port > 65535) throw new CliError(`--callback-port must be a port number, got ${port}\n${usage}`, EXIT.usage);
  const clientId = values['client-id'] as string | undefined;
  if (clientId === '') throw new CliError(`--client-id is empty\n${usage}`, EXIT.usage);
  const secret = env[CLIENT_SECRET_VAR];
  const authorizeParams = keyValues(values['authorize-param'] as string[] | undefined, '--authorize-param', usage);
  for (const key of Object.keys(authorizeParams)) {
    if (FLOW_PARAMS.has(key))
      throw new CliError(`--authorize-param may not set ${key}: the sign-in sets it itself\n${usage.split('\n')[0]}`, EXIT.usage);
  }
  return {
    noBrowser: values['no-browser'] === true,
    callbackPort: port,
    authTimeoutMs: positiveInteger(values['auth-timeout'] as string | undefined, '--auth-timeout', usage) ?? 300_000,
    authorizeParams,
    client: clientId === undefined ? undefined : { clientId, ...(secret === undefined || secret === '' ? {} : { clientSecret: secret }) },
    noResource: values['no-resource'] === true,
    deviceCode: values['device-code'] === true,
  };
}

/**
 * Whether a browser can be opened for the user: stderr is a terminal (someone is there), not over SSH (the
 * browser would open on the far machine, or fail), and a display exists (macOS and Windows always have one).
 */
export function canOpenBrowser(env: NodeJS.ProcessEnv = process.env, isTty = process.stderr.isTTY === true): boolean {
  if (!isTty || env.SSH_CONNECTION || env.SSH_TTY || env.SSH_CLIENT) return false;
  if (process.platform === 'darwin' || process.platform === 'win32') return true;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/**
 * The command that opens `url` in the user's browser on `platform`, or undefined for a URL that is not http(s)
 * (a hostile server's metadata may name any scheme). Never a shell: on Windows `cmd /c start` would parse the
 * URL, and every `&` in it would start another command (libuv quotes an argument only when it has a space or a
 * quote); `rundll32 url.dll,FileProtocolHandler` hands it to the default browser as one argument.
 */
export function browserCommand(url: URL, platform: NodeJS.Platform = process.platform): [string, string[]] | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (platform === 'darwin') return ['open', [url.href]];
  if (platform === 'win32') return ['rundll32', ['url.dll,FileProtocolHandler', url.href]];
  return ['xdg-open', [url.href]];
}

function openBrowser(url: URL): void {
  const command = browserCommand(url);
  if (command === undefined) return;
  try {
    const child = spawn(command[0], command[1], { stdio: 'ignore', detached: true, shell: false });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // The URL is printed anyway.
  }
}

/**
 * The auth options of a command for a remote entry: tokens in fileAuthStore(), a loopback callback on 127.0.0.1
 * that listens before the URL is shown, the browser opened only where one can be, and with --no-browser the
 * redirected URL taken from stdin (never by `bridge`: its stdin is the host's). Undefined for a stdio entry.
 */
export function cliAuth(entry: ServerConfig, name: string, flags: AuthFlags, who: string, stdinIsFree: boolean): AuthOptions | undefined {
  if (isStdioServer(entry) || entry.type === 'socket') return undefined;
  const conf = (entry as RemoteServerConfig).auth ?? {};
  const say = (text: string): void => void process.stderr.write(`mcp-frame ${who}: ${text}\n`);
  const paste = flags.noBrowser && stdinIsFree;
  const authorize = loopbackAuthorizer({
    ...((flags.callbackPort ?? conf.callbackPort) === undefined ? {} : { port: flags.callbackPort ?? conf.callbackPort }),
    timeoutMs: flags.authTimeoutMs,
    ...(paste ? { paste: process.stdin } : {}),
    open: (url, redirectUri) => {
      say(`server "${printable(name)}" needs authorization. Open this URL to sign in:\n\n  ${url.href}\n`);
      say(
        `waiting on ${redirectUri} for ${Math.round(flags.authTimeoutMs / 1000)} s${paste ? '; or paste here the URL your browser was sent to' : ''}`,
      );
      if (!flags.noBrowser && canOpenBrowser()) openBrowser(url);
    },
  });
  const client =
    flags.client ??
    (conf.clientId === undefined
      ? undefined
      : { clientId: conf.clientId, ...(conf.clientSecret === undefined ? {} : { clientSecret: conf.clientSecret }) });
  for (const key of Object.keys(conf.params ?? {})) {
    if (FLOW_PARAMS.has(key))
      throw new CliError(`server "${printable(name)}": auth.params may not set ${key}: the sign-in sets it itself`, EXIT.config);
  }
  const params = { ...conf.params, ...flags.authorizeParams };
  // The device grant with --device-code; without it, where no browser can open here (over SSH, no display) and
  // the authorization server offers it: no port to reach, the code typed on any device.
  const device: AuthOptions['device'] =
    flags.deviceCode || !canOpenBrowser()
      ? {
          when: flags.deviceCode ? 'always' : 'offered',
          prompt: (p) =>
            say(
              `server "${printable(name)}" needs authorization. On any device, open\n\n  ${printable(p.verificationUriComplete ?? p.verificationUri)}\n\n${p.verificationUriComplete === undefined ? 'and enter' : 'and check it shows'} the code ${printable(p.userCode)} (good for ${Math.round(p.expiresInS / 60)} min)`,
            ),
        }
      : undefined;
  return {
    authorize,
    ...(device === undefined ? {} : { device }),
    authorizeTimeoutMs: flags.authTimeoutMs,
    store: fileAuthStore(),
    clientName: 'mcp-frame',
    ...(client === undefined ? {} : { client }),
    ...(Object.keys(params).length === 0 ? {} : { authorizeParams: params }),
    ...(flags.noResource || conf.resource === false ? { resource: false as const } : {}),
    ...(conf.scope === undefined ? {} : { scope: conf.scope }),
    ...(conf.clientMetadataUrl === undefined ? {} : { clientMetadataUrl: conf.clientMetadataUrl }),
    onEvent: (e: AuthEvent) => {
      if (e.type === 'authorized') say(`signed in to "${printable(name)}"${e.scope === undefined ? '' : ` (scope ${safeLine(e.scope)})`}`);
    },
  };
}

export const USAGE = `usage: mcp-frame auth status [server | url] [--config path] [--json]
       mcp-frame auth login <server | url> [--config path] [sign-in options]
       mcp-frame auth logout <server | url> [--config path]
sign-in options: --no-browser  --callback-port n  --auth-timeout ms  --authorize-param k=v  --client-id id
  (its secret from $${CLIENT_SECRET_VAR})  --no-resource  --device-code
Tokens are kept in $MCP_FRAME_AUTH_DIR, else $XDG_CONFIG_HOME/mcp-frame/auth (~/.config/mcp-frame/auth).`;

/** A record as `auth status` shows it: never a token, a secret or a refresh token's value. */
function describe(server: string, record: AuthRecord | undefined, now = Date.now()): Record<string, unknown> {
  const tokens = record?.tokens;
  const expiresAt = tokens?.expiresAt;
  return {
    server,
    issuer: record?.issuer ?? null,
    signedIn: tokens !== undefined && (expiresAt === undefined || expiresAt > now || tokens.refreshToken !== undefined),
    scope: tokens?.scope ?? null,
    expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString(),
    refreshable: tokens?.refreshToken !== undefined,
    clientId: record?.client?.clientId ?? null,
  };
}

function line(d: Record<string, unknown>): string {
  const expiry = d.expiresAt === null ? 'no expiry given' : `${Date.parse(String(d.expiresAt)) > Date.now() ? 'expires' : 'expired'} ${d.expiresAt}`;
  const state = d.signedIn ? `signed in (${expiry}${d.refreshable ? ', refreshable' : ''})` : 'not signed in';
  return safeLine(`${d.server}  ${state}${d.scope === null ? '' : `  scope: ${d.scope}`}${d.issuer === null ? '' : `  issuer: ${d.issuer}`}`);
}

/** The remote server a subcommand names: an http(s) URL as given, else a config entry's. */
async function remoteNamed(server: string, values: Record<string, unknown>): Promise<RemoteServerConfig> {
  if (isServerUrl(server)) return { type: 'http', url: server };
  const entry = await serverEntry(
    {
      command: undefined,
      env: {},
      server,
      config: values.config as string | undefined,
      inputs: keyValues(values.input as string[] | undefined, '--input', USAGE),
    },
    'auth',
  );
  if (isStdioServer(entry) || entry.type === 'socket') throw new CliError(`server "${server}" is not a remote server: it has no sign-in`, EXIT.usage);
  return entry as RemoteServerConfig;
}

/** `auth login`: connects, which signs in when the server asks (or says the tokens kept are still good), and closes. */
async function login(server: string, entry: RemoteServerConfig, values: Record<string, unknown>): Promise<number> {
  const store = fileAuthStore();
  const key = canonicalResource(new URL(entry.url));
  const before = (await store.get(key))?.tokens?.accessToken;
  const name = isServerUrl(server) ? new URL(server).host : server;
  const auth = cliAuth(entry, name, authFlags(values, USAGE), 'auth', true)!;
  try {
    const c = await connect(entry, { name, auth });
    await c.close();
  } catch (err) {
    if (err instanceof ConnectionError && err.code.startsWith('AUTH_')) throw new CliError(`${err.code}: ${err.message}`, EXIT.auth);
    if (err instanceof ConnectionError) throw new CliError(err.message, EXIT.connection);
    throw err;
  }
  const after = await store.get(key);
  if (after?.tokens === undefined) process.stderr.write(`mcp-frame auth: "${printable(name)}" asked for no sign-in: nothing to keep\n`);
  else if (after.tokens.accessToken === before)
    process.stderr.write(`mcp-frame auth: already signed in to "${printable(name)}" (${line(describe(key, after))})\n`);
  return EXIT.ok;
}

/** `mcp-frame auth status [server|url]`, `auth login <server|url>` and `auth logout <server|url>`. */
export async function authCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === '--help' || sub === '-h') {
    await writeStdout(`${USAGE}\n`);
    return EXIT.ok;
  }
  if (sub !== 'status' && sub !== 'logout' && sub !== 'login') throw new CliError(USAGE, EXIT.usage);
  const { values, positionals } = parseOptions(
    rest,
    {
      config: { type: 'string' },
      input: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
      ...(sub === 'login' ? AUTH_FLAGS : {}),
    },
    USAGE,
  );
  const [server, ...extra] = positionals;
  if (extra.length > 0 || (sub !== 'status' && server === undefined)) throw new CliError(USAGE, EXIT.usage);
  const entry = server === undefined ? undefined : await remoteNamed(server, values);
  if (sub === 'login') return login(server!, entry!, values);
  const store = fileAuthStore();
  const key = entry === undefined ? undefined : canonicalResource(new URL(entry.url));
  if (sub === 'logout') {
    const had = await store.get(key!);
    await store.delete(key!);
    process.stderr.write(
      `mcp-frame auth: ${had === undefined ? `was not signed in to "${printable(server!)}"` : `signed out of "${printable(server!)}"`}\n`,
    );
    return EXIT.ok;
  }
  const records = key === undefined ? await store.list() : [{ key, record: await store.get(key) }];
  const shown = records.map(({ key: k, record }) => describe(k, record));
  if (values.json === true) await writeStdout(`${JSON.stringify(shown)}\n`);
  else await writeStdout(shown.length === 0 ? `not signed in anywhere (${store.dir})\n` : `${shown.map(line).join('\n')}\n`);
  return EXIT.ok;
}
