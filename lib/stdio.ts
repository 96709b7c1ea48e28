import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { StdioServerConfig } from './config.js';
import type { FrameError } from './errors.js';
import { FrameDecoder, FrameEncoder } from './streams.js';

/** Why a connection to a server failed or ended. Branch on `code`. */
export type ConnectionErrorCode =
  /** The command could not be started (not found, not executable, bad cwd). */
  | 'SPAWN_FAILED'
  /** The server process exited (before answering, or while a request was pending). */
  | 'EXITED'
  /** A request (or the handshake) took longer than its timeout. */
  | 'TIMEOUT'
  /** A request was aborted through its AbortSignal. */
  | 'ABORTED'
  /** The connection was closed by this side. */
  | 'CLOSED'
  /** The config entry is not a stdio server. */
  | 'NOT_STDIO';

export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  readonly code: ConnectionErrorCode;
  /** The server's exit code and signal, for EXITED. */
  readonly exitCode: number | null | undefined;
  readonly signal: NodeJS.Signals | null | undefined;
  /** The last lines the server wrote to stderr. */
  readonly stderr: string[];

  constructor(
    code: ConnectionErrorCode,
    message: string,
    details: { exitCode?: number | null; signal?: NodeJS.Signals | null; stderr?: string[]; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.stderr = details.stderr ?? [];
  }
}

/** The environment a server gets by default: what it needs to run, and no secrets of the host's (as the MCP SDK does). */
export const DEFAULT_INHERITED_ENV = process.platform === 'win32'
  ? ['APPDATA', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PROCESSOR_ARCHITECTURE', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP', 'USERNAME', 'USERPROFILE', 'PROGRAMFILES']
  : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

export interface StdioOptions {
  /**
   * Give the server this process's whole environment instead of the safe default set.
   * @defaultValue false
   */
  inheritEnv?: boolean;
  /**
   * How long close() waits after ending stdin, and again after SIGTERM, before the next step.
   * @defaultValue 2000
   */
  shutdownGraceMs?: number;
  /**
   * How many of the server's last stderr lines are kept for error messages.
   * @defaultValue 20
   */
  stderrLines?: number;
  /** A name for the server in error messages. @defaultValue the command */
  name?: string;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Process groups of servers still running, ended when this process exits so that none is left behind. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;
function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const group of liveGroups) killGroup(group, 'SIGTERM');
  });
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    // A negative pid names the process group: wrappers such as npx leave the real server as a grandchild.
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

/**
 * A server's child process with its pipes wired: messages go in through a FrameEncoder on stdin and come out
 * of a FrameDecoder on stdout that skips (and reports) stray lines, since servers print banners and logs
 * there. stderr is read line by line.
 *
 * Events: 'message' (a decoded message), 'invalid' (FrameError for a stray or broken line), 'stderr' (a
 * line), 'exit' (ExitStatus, once stdout has been read to its end).
 */
export class StdioServerProcess extends EventEmitter {
  readonly name: string;
  readonly child: ChildProcessWithoutNullStreams;
  /**
   * One message waiting at most: an object-mode buffer counts messages, not bytes, and the default 16 would let
   * sixteen large messages pile up before send() waited.
   */
  readonly #encoder = new FrameEncoder({ writableHighWaterMark: 1 });
  readonly #decoder = new FrameDecoder({ onInvalid: 'skip' });
  readonly #stderrTail: string[] = [];
  readonly #stderrMax: number;
  readonly #grace: number;
  #status: ExitStatus | undefined;
  #exitedAt: Promise<ExitStatus>;
  #closing: Promise<ExitStatus> | undefined;
  /** Resolves once the process has started; rejects with SPAWN_FAILED. */
  readonly started: Promise<void>;

  constructor(server: StdioServerConfig, options: StdioOptions = {}) {
    super();
    this.name = options.name ?? server.command;
    this.#stderrMax = options.stderrLines ?? 20;
    this.#grace = options.shutdownGraceMs ?? 2000;
    const env: NodeJS.ProcessEnv = {};
    if (options.inheritEnv) Object.assign(env, process.env);
    else for (const key of DEFAULT_INHERITED_ENV) if (process.env[key] !== undefined) env[key] = process.env[key];
    Object.assign(env, server.env);

    this.child = spawn(server.command, server.args ?? [], {
      cwd: server.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      // Its own process group, so that close() can end the server and whatever it started.
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    const child = this.child;

    this.started = new Promise((resolve, reject) => {
      child.once('spawn', () => {
        if (child.pid !== undefined) trackGroup(child.pid);
        resolve();
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? 'command not found (or cwd does not exist)' : err.code === 'EACCES' ? 'permission denied' : err.message;
        reject(new ConnectionError('SPAWN_FAILED', `cannot start server "${this.name}": ${JSON.stringify(server.command)}: ${why}`, { cause: err }));
      });
    });
    // A server that dies while we write is reported through 'exit'; the pipe's EPIPE must not be uncaught.
    child.stdin.on('error', () => undefined);
    this.#encoder.pipe(child.stdin);
    this.#encoder.on('error', (err) => this.emit('invalid', err));

    child.stdout.pipe(this.#decoder);
    this.#decoder.on('data', (msg: unknown) => this.emit('message', msg));
    this.#decoder.on('invalid', (err: FrameError) => this.emit('invalid', err));
    this.#decoder.on('error', () => undefined);

    let partial = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      const lines = (partial + text).split(/\r?\n/);
      partial = lines.pop() ?? '';
      for (const line of lines) this.#stderrLine(line);
    });
    child.stderr.on('end', () => {
      if (partial !== '') this.#stderrLine(partial);
      partial = '';
    });

    const stdoutDone = new Promise<void>((resolve) => {
      this.#decoder.once('end', resolve);
      this.#decoder.once('close', resolve);
    });
    this.#exitedAt = new Promise<ExitStatus>((resolve) => {
      child.once('exit', (code, signal) => {
        this.#status = { code, signal };
        if (child.pid !== undefined) liveGroups.delete(child.pid);
        // Deliver what the server wrote before it died; a grandchild holding stdout open must not hold us.
        const cap = setTimeout(resolve, 250, this.#status);
        cap.unref();
        void stdoutDone.then(() => {
          clearTimeout(cap);
          resolve(this.#status!);
        });
      });
      child.once('error', () => resolve({ code: null, signal: null }));
    }).then((status) => {
      this.emit('exit', status);
      return status;
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The exit status, once the process has exited. */
  get exitStatus(): ExitStatus | undefined {
    return this.#status;
  }

  /** Resolves when the process has exited and its output has been read. */
  get exited(): Promise<ExitStatus> {
    return this.#exitedAt;
  }

  /** The last lines the server wrote to stderr. */
  get stderrTail(): string[] {
    return [...this.#stderrTail];
  }

  /** Sends one message; resolves once the encoder can take more (backpressure). */
  send(msg: unknown): Promise<void> {
    if (this.#status !== undefined || this.#closing !== undefined || this.child.stdin.destroyed) {
      return Promise.reject(this.exitError('cannot send'));
    }
    if (this.#encoder.write(msg)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onDrain = (): void => {
        this.off('exit', onExit);
        resolve();
      };
      const onExit = (): void => {
        this.#encoder.off('drain', onDrain);
        reject(this.exitError('cannot send'));
      };
      this.#encoder.once('drain', onDrain);
      this.once('exit', onExit);
    });
  }

  /** An error describing the process's end, with its exit status and last stderr lines. */
  exitError(what: string): ConnectionError {
    if (this.#closing !== undefined && this.#status === undefined) {
      return new ConnectionError('CLOSED', `${what}: the connection to server "${this.name}" is closing`, { stderr: this.stderrTail });
    }
    const status = this.#status;
    const how = status === undefined ? 'is not running' : status.signal ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
    const tail = this.stderrTail;
    const stderr = tail.length > 0 ? `; its last stderr lines: ${tail.slice(-5).join(' | ')}` : '';
    return new ConnectionError('EXITED', `${what}: server "${this.name}" ${how}${stderr}`, {
      exitCode: status?.code ?? null,
      signal: status?.signal ?? null,
      stderr: tail,
    });
  }

  /**
   * Ends the server: closes its stdin, waits up to the grace period, sends SIGTERM to its process group, waits
   * again, then SIGKILL. Resolves with the exit status once the process has exited.
   */
  close(): Promise<ExitStatus> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<ExitStatus> {
    const pid = this.child.pid;
    if (pid === undefined || this.#status !== undefined) return this.#exitedAt;
    this.#encoder.end();
    const waitExit = (ms: number): Promise<boolean> =>
      new Promise((resolve) => {
        if (this.#status !== undefined) return resolve(true);
        const timer = setTimeout(() => resolve(false), ms);
        this.child.once('exit', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    if (!(await waitExit(this.#grace))) {
      killGroup(pid, 'SIGTERM');
      if (!(await waitExit(this.#grace))) killGroup(pid, 'SIGKILL');
    }
    // Whatever the server started goes too, even when the server itself left on its own.
    killGroup(pid, 'SIGTERM');
    return this.#exitedAt;
  }

  #stderrLine(line: string): void {
    this.#stderrTail.push(line);
    if (this.#stderrTail.length > this.#stderrMax) this.#stderrTail.shift();
    this.emit('stderr', line);
  }
}
