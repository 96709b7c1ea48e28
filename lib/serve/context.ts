/*
 * What every served session shares: the server entry, the settings, the log, and how its child is started.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import type { StdioServerConfig } from '../client/config.js';
import { StdioChannel } from '../client/stdio.js';
import { type FrameError, printableJson, redactMessage, safeLine, frameProblem } from '../errors.js';
import { tryParse } from '../framings/json.js';
import { Gateway } from '../gateway/gateway.js';
import type { Policy } from '../gateway/policy.js';
import type { Caller } from '../protocol/caller.js';
import type { UpstreamHealth } from '../gateway/upstream.js';
import type { Logger } from '../log.js';
import type { EventStreamOptions } from './event-stream.js';
import { type MetricsRegistry, type Observer, observe } from './observer.js';
import type { ResourceServer } from './resource-server.js';

/** What a session's messages go to: the server's child process, or a gateway in front of several servers. */
export type ServedChild = StdioChannel | Gateway;

/** The HTTP paths serve answers on (`serve({ paths })`, `--path`, `--sse-path`, `--messages-path`). */
export interface ServePaths {
  /** The Streamable HTTP endpoint. @defaultValue '/mcp' */
  mcp: string;
  /** The legacy HTTP+SSE transport's stream. @defaultValue '/sse' */
  sse: string;
  /** Where the legacy transport's clients post their messages. @defaultValue '/messages' */
  messages: string;
}

export interface ServeContext {
  /** The HTTP paths of the endpoints. */
  paths: ServePaths;
  /** The one stdio server served; undefined for a gateway. */
  entry: StdioServerConfig | undefined;
  /** For a gateway: a new one, with its own upstreams (one per session, one for modern requests), for a caller. */
  gateway?: ((label: string, caller: Caller | undefined) => Gateway) | undefined;
  /** Who may call what (serve's policy; reloaded in place). */
  policy?: { current: Policy | undefined } | undefined;
  /** serve as an OAuth resource server: each request's caller from its token. */
  resourceServer?: ResourceServer | undefined;
  /** For a gateway: each upstream's last known state (for /healthz). */
  upstreams?: UpstreamHealth | undefined;
  /** The server's name in logs and errors. */
  name: string;
  inheritEnv: boolean;
  shutdownGraceMs: number;
  maxMessageBytes: number;
  maxStreamsPerSession: number;
  maxPendingPerSession: number;
  stream: EventStreamOptions;
  trace: boolean;
  log: Logger;
  /** What serve reports to (metrics, the request log); undefined: nothing is counted. */
  observer?: Observer | undefined;
  /** With metrics: the registry /metrics answers from. */
  metrics?: MetricsRegistry | undefined;
  /** Spans for requests (with @opentelemetry/api loaded). */
  tracing?: boolean;
  /** serve is closing: sessions and children ending now are its doing, not news for the log. */
  shuttingDown?: boolean;
  /** This replica's id in the store, when serve shares sessions with others (--store). */
  replica?: string;
  /** Why the last child failed to start, until one starts (for /healthz). */
  startFailure?: string | undefined;
}

/** A short, loggable form of a session id (the whole id would let a reader of the log use the session). */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

/** The session's " (server pid n)" for the log; nothing for a gateway, whose servers have pids of their own. */
export function pidNote(child: ServedChild): string {
  return child.pid === undefined ? '' : ` (server pid ${child.pid})`;
}

/** Starts the session's child process (its stderr and bad frames logged under `label`), or its gateway (for `caller`). */
export function startChild(ctx: ServeContext, label: string, caller?: Caller, log: Logger = ctx.log.child({ label }, label)): ServedChild {
  const era = label === MODERN_LABEL ? 'modern' : 'legacy';
  if (ctx.gateway !== undefined) {
    const gateway = ctx.gateway(label, caller);
    observe(gateway, ctx.observer, era, label, ctx.tracing === true);
    return gateway;
  }
  const channel = new StdioChannel(ctx.entry!, { name: ctx.name, inheritEnv: ctx.inheritEnv, shutdownGraceMs: ctx.shutdownGraceMs });
  observe(channel, ctx.observer, era, label, ctx.tracing === true);
  watchChild(channel, channel.started, ctx.observer);
  channel.on('stderr', (line: string) => log.info('server.stderr', `server stderr: ${safeLine(line)}`, { line: safeLine(line) }));
  channel.on('invalid', (err: FrameError) => {
    ctx.observer?.badFrame?.('server');
    log.warn('server.bad_frame', `skipped a bad frame from the server: ${frameProblem(err)}`, { code: err.code });
  });
  if (ctx.trace) {
    channel.on('wire', (direction: string, text: string) => {
      log.info('server.frame', `${direction === 'send' ? '->' : '<-'} ${printableJson(redactMessage(tryParse(text)))}`, { direction });
    });
  }
  return channel;
}

/** The label of the child (or gateway) shared by modern requests. */
export const MODERN_LABEL = 'modern requests';

/**
 * Counts a child process in and out: started once it runs (`started`), ended closed (by serve) or died (on its
 * own) at `event` (a channel's 'close', a Connection's 'exit').
 */
export function watchChild(
  child: { close(): Promise<unknown>; on(event: string, listener: () => void): unknown },
  started: Promise<unknown>,
  observer: Observer | undefined,
  event = 'close',
): void {
  if (observer?.childStarted === undefined) return;
  let running = false;
  let closing = false;
  started.then(
    () => {
      running = true;
      observer.childStarted?.();
    },
    () => undefined,
  );
  const close = child.close.bind(child);
  child.close = () => {
    closing = true;
    return close();
  };
  child.on(event, () => {
    if (running) observer.childEnded?.(closing ? 'closed' : 'died');
    running = false;
  });
}

/**
 * Why `command` cannot be started, or undefined when it can: a path that is not an executable file, or a name
 * found in no folder of PATH. (On Windows, where PATHEXT decides, it is left to the first session.)
 */
async function missingCommand(command: string, path: string, cwd: string): Promise<string | undefined> {
  if (process.platform === 'win32') return undefined;
  const executable = (file: string): Promise<boolean> =>
    access(file, constants.X_OK).then(
      () => stat(file).then((s) => s.isFile()),
      () => false,
    );
  if (command.includes('/')) return (await executable(resolve(cwd, command))) ? undefined : 'no executable file there';
  for (const dir of path.split(delimiter)) {
    if (dir !== '' && (await executable(join(resolve(cwd, dir), command)))) return undefined;
  }
  return 'command not found on PATH';
}

/** Why the server entry's command cannot be started (see missingCommand), with its own PATH and folder. */
export function commandProblem(entry: StdioServerConfig): Promise<string | undefined> {
  return missingCommand(entry.command, entry.env?.PATH ?? process.env.PATH ?? '', entry.cwd ?? process.cwd());
}

/** Sends `msg` to the child; a gateway hears whose request it is (one gateway serves every modern caller). */
export function sendAs(child: ServedChild, msg: unknown, caller: Caller | undefined): Promise<void> {
  return child instanceof Gateway ? child.send(msg, caller) : child.send(msg);
}
