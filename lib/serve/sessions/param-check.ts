/*
 * The Mcp-Param-* headers of a modern tools/call, checked against its body (the spec's HeaderMismatch) by what
 * each tool declares in x-mcp-header: learnt from every tools/list answer a client gets, from the gateway's own
 * knowledge when the child is one, and else from the child's whole list, read at the first call that needs it
 * (again after the child says its list changed).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Gateway } from '../../gateway/gateway.js';
import { isObject, type JsonRpcRequest } from '../../jsonrpc.js';
import type { Logger } from '../../log.js';
import { decodeHeaderValue } from '../../protocol/modern.js';
import { listPages } from '../../protocol/paging.js';
import { type ParamHeader, scanParamHeaders } from '../../protocol/param-headers.js';
import { CallerGateways } from './callers.js';
import { MODERN_LABEL, type ServedChild } from './children.js';

/** A request of serve's own to the child, and its answer (undefined when none came in time). */
type Ask = (child: ServedChild, method: string, params: unknown, timeoutMs: number) => Promise<Record<string, unknown> | undefined>;

export class ParamCheck {
  readonly #ask: Ask;
  /** Whether the child speaks only the initialize era (its requests then carry no modern `_meta`). */
  readonly #legacy: () => boolean;
  readonly #log: Logger;
  /** Each tool's declarations (only tools that declare some). */
  readonly #toolHeaders = new Map<string, ParamHeader[]>();
  /** The whole tool list has been read since the child last said it changed. */
  #toolsListed = false;

  constructor(ask: Ask, legacy: () => boolean, log: Logger) {
    this.#ask = ask;
    this.#legacy = legacy;
    this.#log = log;
  }

  /** The child said its tool list changed: it is read again at the next call that needs it. */
  listChanged(): void {
    this.#toolsListed = false;
  }

  /** Notes each listed tool's x-mcp-header declarations (a tool whose annotations break the rules has none to check). */
  learn(result: Record<string, unknown>): void {
    if (!Array.isArray(result.tools)) return;
    for (const tool of result.tools) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const scanned = scanParamHeaders(tool.inputSchema);
      if ('headers' in scanned && scanned.headers.length > 0) this.#toolHeaders.set(tool.name, scanned.headers);
      else this.#toolHeaders.delete(tool.name);
    }
  }

  /**
   * Why a tools/call's Mcp-Param-* headers disagree with its body (the spec's HeaderMismatch), or undefined: a
   * declared argument present in the body needs its header, equal once the Base64 form is decoded (numbers
   * compared as numbers); a null or absent one needs none.
   */
  async mismatch(child: ServedChild, msg: JsonRpcRequest, headers: IncomingHttpHeaders): Promise<string | undefined> {
    const params = isObject(msg.params) ? msg.params : {};
    const tool = typeof params.name === 'string' ? params.name : undefined;
    // A gateway knows what each tool it listed declares: nothing is listed again for the call.
    const known = (child instanceof Gateway || child instanceof CallerGateways) && tool !== undefined ? child.declaredHeaders(tool) : undefined;
    if (known === undefined && !this.#toolsListed) {
      // Every page: a tool on page 2 declares headers as one on page 1 does. With the client's protocol metadata
      // (a modern child checks it), without its progress token.
      const { progressToken: _token, ...meta } = isObject(msg.params) && isObject(msg.params._meta) ? msg.params._meta : {};
      const listing = await listPages(async (cursor) => {
        const params = { ...(this.#legacy() ? {} : { _meta: meta }), ...(cursor === undefined ? {} : { cursor }) };
        const listed = await this.#ask(child, 'tools/list', params, 10_000);
        return listed?.result;
      }, 'tools');
      this.learn({ tools: listing.items });
      this.#toolsListed = listing.stopped === undefined;
      if (listing.stopped !== undefined)
        this.#log.warn('server.list_stopped', `the tool list of the server for modern requests: ${listing.stopped}`, { label: MODERN_LABEL });
    }
    const declared = known ?? (tool === undefined ? undefined : this.#toolHeaders.get(tool));
    for (const { name, path } of declared ?? []) {
      let value: unknown = params.arguments;
      for (const key of path) value = isObject(value) ? value[key] : undefined;
      if (value === undefined || value === null) continue;
      const raw = headers[`mcp-param-${name.toLowerCase()}`];
      if (typeof raw !== 'string') return `the body carries ${path.join('.')} but the Mcp-Param-${name} header is absent`;
      const got = decodeHeaderValue(raw);
      if (got === undefined) return `the Mcp-Param-${name} header's Base64 form is malformed (it must be padded, canonical Base64 of UTF-8)`;
      const same = typeof value === 'number' ? Number(got) === value : typeof value === 'boolean' ? got === String(value) : got === value;
      if (!same) return `the Mcp-Param-${name} header does not match the body's ${path.join('.')}`;
    }
    return undefined;
  }
}
