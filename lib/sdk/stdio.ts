/*
 * The stdio process handling of this package as a transport for the MCP SDK's Client. Written
 * against the shape of the SDK's Transport interface, not its types, so that nothing here loads the SDK.
 */
import { StdioChannel, type StdioOptions } from '../client/stdio.js';
import type { StdioServerConfig } from '../client/config.js';
import type { ConnectionError } from '../client/errors.js';
import { FrameError } from '../errors.js';
import { CODES } from '../protocol/codes.js';

/** A JSON-RPC message, as the SDK types it (structurally: any object). */
type Message = Record<string, unknown>;

/**
 * A drop-in for the SDK's StdioClientTransport: `await client.connect(new StdioTransport(entry))`. It brings
 * this package's decoder (linear on large messages; banner and log lines on stdout are reported through
 * onerror and skipped, never fatal), the process-group shutdown (stdin, SIGTERM, SIGKILL, wrappers' children
 * included) and the server's last stderr lines in errors.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js';
 * import { StdioTransport } from 'mcp-frame/sdk';
 *
 * const client = new Client({ name: 'my-host', version: '1.0.0' });
 * await client.connect(new StdioTransport({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] }));
 * ```
 */
export class StdioTransport {
  onmessage?: ((message: Message) => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onclose?: (() => void) | undefined;
  /** Stdio has no sessions. */
  sessionId?: string | undefined;
  readonly #server: StdioServerConfig;
  readonly #options: StdioOptions;
  readonly #stderr: 'inherit' | 'pipe';
  #channel: StdioChannel | undefined;
  #closed = false;
  #closing = false;
  /** Requests sent and not answered: what an exit leaves without an answer. */
  readonly #pending = new Set<string | number>();

  /**
   * `stderr`, as the SDK's transport takes it: `'inherit'` (the default, as the SDK's) writes the server's stderr
   * to this process's; `'pipe'` leaves it to `stderr` only. Either way its last lines are kept for errors.
   */
  constructor(server: StdioServerConfig, options: StdioOptions & { stderr?: 'inherit' | 'pipe' } = {}) {
    this.#server = server;
    const { stderr, ...rest } = options;
    this.#options = rest;
    this.#stderr = stderr ?? 'inherit';
  }

  /** The server's process id, once started. */
  get pid(): number | undefined {
    return this.#channel?.pid;
  }

  /**
   * The server's stderr stream, once started (null before), as the SDK's own stdio transport has one. Its
   * presence (with `pid`) is also how the SDK 2.x client's `'auto'` negotiation knows a stdio transport, where a
   * server silent on the `server/discover` probe is a legacy server, not an outage.
   */
  get stderr(): NodeJS.ReadableStream | null {
    return this.#channel?.child.stderr ?? null;
  }

  /** The last lines the server wrote to stderr. */
  get stderrTail(): string[] {
    return this.#channel?.stderrTail ?? [];
  }

  async start(): Promise<void> {
    if (this.#channel !== undefined) throw new Error('StdioTransport already started');
    const channel = new StdioChannel(this.#server, this.#options);
    this.#channel = channel;
    if (this.#stderr === 'inherit') channel.child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    channel.on('message', (msg: Message) => {
      if (!('method' in msg) && (typeof msg.id === 'string' || typeof msg.id === 'number')) this.#pending.delete(msg.id);
      this.onmessage?.(msg);
    });
    // What was skipped is shown, redacted and short, as the SDK's own transport shows the line it failed on.
    channel.on('invalid', (err: FrameError) =>
      this.onerror?.(
        err.preview === ''
          ? err
          : new FrameError(err.code, `${err.reason}: ${err.preview}`, { offset: err.offset, line: err.line, index: err.index }, err.preview),
      ),
    );
    channel.on('close', () => {
      if (!this.#closing) this.#exitedOnItsOwn(channel);
      this.#closedOnce();
    });
    await channel.started;
  }

  /**
   * The server ended by itself: each request still waiting gets an error answer saying how (exit code or signal,
   * last stderr lines), so that the SDK's Client rejects it with that, not only "Connection closed"; onerror
   * hears it too.
   */
  #exitedOnItsOwn(channel: StdioChannel): void {
    const error = channel.endError('the server ended');
    this.onerror?.(error);
    for (const id of this.#pending) this.onmessage?.({ jsonrpc: '2.0', id, error: { code: CODES.serverError, message: error.message } });
    this.#pending.clear();
  }

  async send(message: Message): Promise<void> {
    if (this.#channel === undefined) throw new Error('StdioTransport not started');
    if (typeof message.method === 'string' && (typeof message.id === 'string' || typeof message.id === 'number')) this.#pending.add(message.id);
    await this.#channel.send(message).catch((err: ConnectionError) => {
      if (typeof message.id === 'string' || typeof message.id === 'number') this.#pending.delete(message.id);
      this.onerror?.(err);
      throw err;
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#channel?.close();
    this.#closedOnce();
  }

  #closedOnce(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
