/*
 * What a modern (2026-07-28) HTTP channel needs to know of the server's tools, kept apart from the transport:
 * which requests may be sent again when their stream breaks (harmlessTwice), and which Mcp-Param-* headers a
 * tools/call carries (headersFor), both learnt from the server's tools/list answers (learn). An HttpChannel
 * makes its own unless given one (HttpChannelOptions.toolPolicy), for a host that shares what it learnt.
 */
import { isObject } from '../jsonrpc.js';
import { type ParamHeader, paramHeaderValues, scanParamHeaders } from '../protocol/param-headers.js';

type Json = Record<string, unknown>;

/**
 * Methods a request of which may be sent again when its stream breaks, since running it twice does no harm.
 * Anything else fails with STREAM_LOST: whether to run it again is the caller's decision.
 */
const HARMLESS_METHODS = new Set([
  'ping',
  // A listen stream opened again (its notifications keep the id of the first).
  'subscriptions/listen',
  'server/discover',
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
]);

export class ToolPolicy {
  /** Tools annotated as safe to run twice (readOnlyHint or idempotentHint). */
  readonly #harmlessTools = new Set<string>();
  /** Each tool's x-mcp-header declarations. */
  readonly #paramHeaders = new Map<string, ParamHeader[]>();
  /** Tools already said to break the x-mcp-header rules. */
  readonly #warned = new Set<string>();

  /**
   * Whether a request can be sent again on its own after its stream broke: the 2026-07-28 revision makes a
   * closed stream the request's cancellation, but the server may have acted on it already. Reading and listing
   * methods can, and a tool that the server's tools/list annotated readOnlyHint or idempotentHint.
   */
  harmlessTwice(request: Json): boolean {
    if (typeof request.method !== 'string') return false;
    if (HARMLESS_METHODS.has(request.method)) return true;
    if (request.method !== 'tools/call' || !isObject(request.params)) return false;
    return this.#harmlessTools.has(String(request.params.name));
  }

  /** The Mcp-Param-* headers a tools/call carries, from its tool's x-mcp-header declarations. */
  headersFor(msg: unknown): Record<string, string> {
    if (!isObject(msg) || msg.method !== 'tools/call' || !isObject(msg.params) || typeof msg.params.name !== 'string') return {};
    const declared = this.#paramHeaders.get(msg.params.name);
    return declared === undefined ? {} : paramHeaderValues(declared, msg.params.arguments);
  }

  /**
   * Learns from the answer to a tools/list (`request`): each tool's headers and hints. Tools whose x-mcp-header
   * annotations break the rules cannot be called as the transport requires: they are left out of the answer
   * (and said once each, naming `server`), as the spec tells clients to do.
   */
  learn(request: Json | undefined, answer: Json, server: string): void {
    if (request?.method !== 'tools/list' || !isObject(answer.result) || !Array.isArray(answer.result.tools)) return;
    const kept = answer.result.tools.filter((tool: unknown) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return true;
      const scanned = scanParamHeaders(tool.inputSchema);
      if ('headers' in scanned) {
        if (scanned.headers.length > 0) this.#paramHeaders.set(tool.name, scanned.headers);
        else this.#paramHeaders.delete(tool.name);
        return true;
      }
      this.#paramHeaders.delete(tool.name);
      if (!this.#warned.has(tool.name)) {
        this.#warned.add(tool.name);
        process.emitWarning(`"${server}" lists tool "${tool.name}" with an x-mcp-header that breaks the rules (${scanned.invalid}); it is left out`, {
          code: 'MCP_FRAME_TOOL_HEADERS',
        });
      }
      return false;
    });
    answer.result.tools = kept;
    for (const tool of kept) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const hints = isObject(tool.annotations) ? tool.annotations : {};
      if (hints.readOnlyHint === true || hints.idempotentHint === true) this.#harmlessTools.add(tool.name);
      else this.#harmlessTools.delete(tool.name);
    }
  }
}
