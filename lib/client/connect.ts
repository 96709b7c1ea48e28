/*
 * connect(): from a config entry to an open Connection. The entry names the channel (a child process, a local
 * socket, a remote server); over Streamable HTTP, a server that answers neither era is tried over the deprecated
 * HTTP+SSE transport; the era cache is keyed by the entry.
 */
import { ConfigError, isStdioServer, type RemoteServerConfig, type ServerConfig, type StdioServerConfig } from './config.js';
import type { Channel } from './channel.js';
import { type ConnectOptions, type Connection, connectOver } from './connection.js';
import { ConnectionError } from './errors.js';
import { HttpChannel } from './http.js';
import { openSocket } from './socket.js';
import { SseChannel } from './sse.js';
import { StdioChannel } from './stdio.js';

/**
 * Starts a stdio server from its config entry (or reaches a remote or socket one), finds its era (a
 * `server/discover` probe; see ConnectOptions.protocolVersion), performs the initialize handshake on a legacy
 * server, and resolves with the Connection. Over HTTP, a server that refuses both eras' first request with
 * 400, 404 or 405 is tried over the deprecated HTTP+SSE transport. Rejects with a ConnectionError:
 * SPAWN_FAILED (naming the command), EXITED (with exit code or signal and the last stderr lines), TIMEOUT,
 * UNSUPPORTED_VERSION, or NOT_STDIO.
 *
 * @example
 * ```ts
 * const { mcpServers } = await loadConfig('.mcp.json');
 * const server = await connect(mcpServers.filesystem!, { name: 'filesystem' });
 * const { tools } = (await server.request('tools/list')) as { tools: Array<{ name: string }> };
 * await server.close();
 * ```
 */
export async function connect(server: ServerConfig, options: ConnectOptions = {}): Promise<Connection> {
  server = entryOf(server);
  // One store for every channel connect() tries (the SSE fallback reuses what the first one signed in for);
  // loaded only when signing in is asked for.
  if (options.auth !== undefined && options.auth.store === undefined) {
    const { memoryAuthStore } = await import('./auth/store.js');
    options = { ...options, auth: { ...options.auth, store: memoryAuthStore() } };
  }
  const channel = await openChannel(server, options);
  const key = eraKey(server);
  if (server.type !== 'http' || (options.protocolVersion ?? 'auto') !== 'auto') return connectOver(channel, options, key);
  try {
    return await connectOver(channel, options, key);
  } catch (err) {
    // Neither era answered on Streamable HTTP (initialize got 400, 404 or 405): the deprecated HTTP+SSE transport.
    if (!(err instanceof ConnectionError && err.code === 'HTTP_STATUS' && [400, 404, 405].includes(err.status ?? 0))) throw err;
    try {
      return await connectOver(await openChannel({ ...server, type: 'sse' }, options), options, key);
    } catch (fallback) {
      if (!(fallback instanceof ConnectionError && fallback.code === 'HTTP_STATUS')) throw fallback;
      // Both transports refused: say both, and what that most often means.
      throw new ConnectionError(
        'HTTP_STATUS',
        `${err.message} (Streamable HTTP), and ${fallback.message} (the deprecated HTTP+SSE transport, tried next): is ${new URL(server.url).pathname} the server's MCP endpoint?`,
        { status: err.status, cause: fallback },
      );
    }
  }
}

/**
 * An entry as given in code, read as a config file's entry is: one with a `url` and no `command` is remote
 * (Streamable HTTP unless its type says otherwise); one with neither is a ConfigError, not a spawn of nothing.
 */
function entryOf(server: ServerConfig): ServerConfig {
  if (server.type !== undefined && server.type !== 'stdio') return server;
  const entry = server as Partial<StdioServerConfig> & { url?: unknown };
  if (typeof entry.command === 'string' && entry.command !== '') return server;
  if (server.type === undefined && typeof entry.url === 'string') return { ...(server as object), type: 'http' } as RemoteServerConfig;
  throw new ConfigError('connect()', 'the server entry has neither a command (a stdio server) nor a url (a remote one)');
}

/** What names a server for the era cache: a stdio entry's command line, cwd and env; a remote one's URL. */
function eraKey(server: ServerConfig): string {
  if (isStdioServer(server)) return JSON.stringify(['stdio', server.command, server.args ?? [], server.cwd ?? '', server.env ?? {}]);
  return JSON.stringify([
    server.type,
    server.type === 'socket' ? server.path : server.url,
    server.type === 'socket' ? '' : (server.socketPath ?? ''),
  ]);
}

/** The channel a config entry names: a child process, a local socket, or a remote server. */
async function openChannel(server: ServerConfig, options: ConnectOptions): Promise<Channel> {
  if (server.type === 'socket') return openSocket(server.path, options.name ?? server.path);
  if (!isStdioServer(server)) {
    const name = options.name === undefined ? '' : ` "${options.name}"`;
    const http = {
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(server.headers === undefined ? {} : { headers: server.headers }),
      ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
      ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
      ...(options.auth === undefined ? {} : { auth: options.auth }),
      ...(options.bearer === undefined ? {} : { bearer: options.bearer }),
      ...(server.socketPath === undefined ? {} : { socketPath: server.socketPath }),
    };
    if (server.type === 'http') return new HttpChannel(server.url, http);
    if (server.type === 'sse') {
      const channel = new SseChannel(server.url, http);
      await channel.open(options.timeoutMs ?? 30_000).catch(async (err: unknown) => {
        await channel.close();
        throw err;
      });
      return channel;
    }
    throw new ConnectionError('NOT_STDIO', `server${name} has a transport this client does not speak`);
  }
  const channel = new StdioChannel(server, options);
  await channel.started;
  return channel;
}
