/*
 * The stdio channel: a server's child process, its stdin and stdout carrying ndjson frames.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { forwardWhenListened, StreamChannel, type Channel } from './channel.js';
import type { StdioServerConfig } from './config.js';
import { safeLine } from '../errors.js';
import { ConnectionError, type ExitStatus } from './errors.js';

/** The environment a server gets by default: what it needs to run, and no secrets of the host's (as the MCP SDK does). */
export const DEFAULT_INHERITED_ENV =
  process.platform === 'win32'
    ? [
        'APPDATA',
        'HOMEDRIVE',
        'HOMEPATH',
        'LOCALAPPDATA',
        'PATH',
        'PROCESSOR_ARCHITECTURE',
        'SYSTEMDRIVE',
        'SYSTEMROOT',
        'TEMP',
        'USERNAME',
        'USERPROFILE',
        'PROGRAMFILES',
      ]
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

/** How long, once a server has exited, its stdout may stay open (held by a grandchild) before we stop waiting. */
const STDOUT_AFTER_EXIT_MS = 250;

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

/**
 * Sends `signal` to the process group of every server this process started and has not seen exit: for a
 * command told twice to stop (a second Ctrl-C), which must not leave its servers running.
 */
export function killServerGroups(signal: NodeJS.Signals): void {
  for (const group of liveGroups) killGroup(group, signal);
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    // A negative pid names the process group: wrappers such as npx leave the real server as a grandchild.
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

/** The server's environment: the safe default set (or everything, with inheritEnv) plus the entry's own. */
export function serverEnv(server: StdioServerConfig, inheritEnv = false): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  if (inheritEnv) Object.assign(env, process.env);
  else for (const key of DEFAULT_INHERITED_ENV) if (process.env[key] !== undefined) env[key] = process.env[key];
  return Object.assign(env, server.env);
}

/** Starts the server in its own process group, with no shell. */
function spawnServer(server: StdioServerConfig, env: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  return spawn(server.command, server.args ?? [], {
    cwd: server.cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    shell: false,
    // Its own process group, so that close() can end the server and whatever it started.
    detached: process.platform !== 'win32',
    windowsHide: true,
  });
}

/** Calls `onLine` with each line of `stream`, and the last one when it has no line end. */
function readLines(stream: NodeJS.ReadableStream & { setEncoding(e: BufferEncoding): unknown }, onLine: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (text: string) => {
    const lines = (partial + text).split(/\r?\n/);
    partial = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  stream.on('end', () => {
    if (partial !== '') onLine(partial);
    partial = '';
  });
}

/**
 * A server's child process as a channel: messages go in on stdin and come out of stdout through a decoder that
 * skips (and reports) stray lines, since servers print banners and logs there. stderr is read line by line.
 *
 * Events: those of every Channel ('message', 'invalid', 'wire', 'end', 'close' with the ExitStatus once
 * stdout has been read to its end), and 'stderr' (a line).
 */
export class StdioChannel extends EventEmitter implements Channel {
  readonly name: string;
  readonly transport = 'stdio' as const;
  readonly child: ChildProcessWithoutNullStreams;
  readonly #stream: StreamChannel;
  readonly #stderrTail: string[] = [];
  readonly #stderrMax: number;
  readonly #grace: number;
  #status: ExitStatus | undefined;
  #stdoutEnded = false;
  readonly #exited: Promise<ExitStatus>;
  #closing: Promise<ExitStatus> | undefined;
  /** Resolves once the process has started; rejects with SPAWN_FAILED. */
  readonly started: Promise<void>;

  constructor(server: StdioServerConfig, options: StdioOptions = {}) {
    super();
    this.name = options.name ?? server.command;
    this.#stderrMax = options.stderrLines ?? 20;
    this.#grace = options.shutdownGraceMs ?? 2000;
    this.child = spawnServer(server, serverEnv(server, options.inheritEnv));
    this.started = this.#whenStarted(server.command);
    this.#stream = new StreamChannel(this.child.stdout, this.child.stdin, { name: this.name });
    this.#forwardStreamEvents();
    readLines(this.child.stderr, (line) => this.#stderrLine(line));
    this.#exited = this.#whenExited().then((status) => {
      // Everything is released: a stdout still open (held by a grandchild, or paused by a hold on the input)
      // must not stay behind as a handle that keeps this process alive.
      void this.#stream.close();
      this.emit('close', status);
      return status;
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether close() was called: an exit from now on is the client's doing, not the server's. */
  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /** The exit status, once the process has exited. */
  get exitStatus(): ExitStatus | undefined {
    return this.#status;
  }

  /** Resolves when the process has exited and its output has been read. */
  get exited(): Promise<ExitStatus> {
    return this.#exited;
  }

  /** The last lines the server wrote to stderr. */
  get stderrTail(): string[] {
    return [...this.#stderrTail];
  }

  send(msg: unknown): Promise<void> {
    if (this.#status !== undefined || this.#closing !== undefined) return Promise.reject(this.endError('cannot send'));
    return this.#stream.send(msg);
  }

  /** Stops reading the server's stdout until the returned function is called (see StreamChannel.holdInput). */
  holdInput(): () => void {
    return this.#stream.holdInput();
  }

  /** An error describing why the server cannot answer: closing, exited (with its status), or its stdout closed. */
  endError(what: string): ConnectionError {
    // The server's stderr goes into messages that get logged: redacted, and escaped for a terminal.
    const tail = this.#stderrTail.map(safeLine);
    if (this.#closing !== undefined && this.#status === undefined) {
      return new ConnectionError('CLOSED', `${what}: the connection to server "${this.name}" is closing`, { stderr: tail });
    }
    const stderr = tail.length > 0 ? `; its last stderr lines: ${tail.slice(-5).join(' | ')}` : '';
    const status = this.#status;
    if (status === undefined && this.#stdoutEnded) {
      return new ConnectionError('ENDED', `${what}: server "${this.name}" closed its stdout${stderr}`, { stderr: tail });
    }
    const how = status === undefined ? 'is not running' : status.signal ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
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

  #whenStarted(command: string): Promise<void> {
    const child = this.child;
    return new Promise((resolve, reject) => {
      child.once('spawn', () => {
        if (child.pid !== undefined) trackGroup(child.pid);
        resolve();
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? 'command not found (or cwd does not exist)' : err.code === 'EACCES' ? 'permission denied' : err.message;
        reject(new ConnectionError('SPAWN_FAILED', `cannot start server "${this.name}": ${JSON.stringify(command)}: ${why}`, { cause: err }));
      });
    });
  }

  #forwardStreamEvents(): void {
    this.#stream.on('message', (msg: unknown) => this.emit('message', msg));
    this.#stream.on('invalid', (err: unknown) => this.emit('invalid', err));
    forwardWhenListened(this, 'wire', () => this.#stream.on('wire', (direction: string, text: string) => this.emit('wire', direction, text)));
    this.#stream.on('end', () => {
      this.#stdoutEnded = true;
      // Usually the process is exiting: give it a moment, so that errors carry its exit status.
      const settle = setTimeout(() => {
        this.child.off('exit', settled);
        settled();
      }, STDOUT_AFTER_EXIT_MS);
      settle.unref();
      const settled = (): void => {
        clearTimeout(settle);
        this.emit('end');
        // A server that closes its stdout but keeps running can answer nothing more: close it as close() does.
        if (this.#status === undefined) void this.close();
      };
      if (this.#status !== undefined) settled();
      else this.child.once('exit', settled);
    });
  }

  /** The exit status, once the process has exited and stdout has been read (or has stayed open too long). */
  #whenExited(): Promise<ExitStatus> {
    const child = this.child;
    const stdoutDone = new Promise<void>((resolve) => this.#stream.once('end', resolve));
    return new Promise<ExitStatus>((resolve) => {
      child.once('exit', (code, signal) => {
        const status: ExitStatus = { code, signal };
        this.#status = status;
        if (child.pid !== undefined) liveGroups.delete(child.pid);
        // Deliver what the server wrote before it died; a grandchild holding stdout open must not hold us.
        const cap = setTimeout(resolve, STDOUT_AFTER_EXIT_MS, status);
        cap.unref();
        void stdoutDone.then(() => {
          clearTimeout(cap);
          resolve(status);
        });
      });
      child.once('error', () => resolve({ code: null, signal: null }));
    });
  }

  async #shutdown(): Promise<ExitStatus> {
    const pid = this.child.pid;
    if (pid === undefined || this.#status !== undefined) return this.#exited;
    this.#stream.endOutput();
    if (!(await this.#waitExit(this.#grace))) {
      killGroup(pid, 'SIGTERM');
      if (!(await this.#waitExit(this.#grace))) killGroup(pid, 'SIGKILL');
    }
    // Whatever the server started goes too, even when the server itself left on its own.
    killGroup(pid, 'SIGTERM');
    return this.#exited;
  }

  /** True when the process exits within `ms`. */
  #waitExit(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.#status !== undefined) return resolve(true);
      const timer = setTimeout(() => resolve(false), ms);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  #stderrLine(line: string): void {
    this.#stderrTail.push(line);
    if (this.#stderrTail.length > this.#stderrMax) this.#stderrTail.shift();
    this.emit('stderr', line);
  }
}
