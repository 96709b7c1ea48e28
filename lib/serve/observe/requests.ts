/*
 * Each request a session, the modern hub or a socket sends its child, begun and ended as events: the sender passes
 * every message through outgoing() (which publishes `request:start` and gives back the message to send, its params
 * as the subscribers left them), and the tap hears the child's answers (`request:end`) and its close (every
 * request still open ends `gone`). Nothing is wrapped or replaced on the child: it is listened to. With nobody
 * listening, a child is not watched and a message costs one lookup; the work per request otherwise is a Map entry and a clock read
 * (bench/observe.ts measures it against serve's own).
 */
import { idKey, isObject, isRequest, isResponse } from '../../jsonrpc.js';
import type { Caller } from '../../protocol/caller.js';
import type { Outcome, RequestStart, Telemetry } from './events.js';

/** The methods that are their own label value; any other is `other` (a client could make up endless ones). */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'server/discover',
  'subscriptions/listen',
]);

/** A method as a label value: its own name when MCP has it, else `other`. */
export const methodLabel = (method: string): string => (KNOWN_METHODS.has(method) ? method : 'other');

/** Names of one child's listed tools and prompts kept as labels at most (a server could list endless ones too). */
const MAX_LISTED_NAMES = 2000;
/** The lists whose names may be labels, and the key of their items. */
const LISTS: Record<string, string> = { 'tools/list': 'tools', 'prompts/list': 'prompts' };

/** A served child, as the tap hears it. */
export interface Heard {
  on(event: 'message', listener: (msg: unknown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
}

interface ChildState {
  era: 'legacy' | 'modern';
  label: string;
  /** Requests sent and not answered, by id as sent: their start, and the tool or prompt they name. */
  open: Map<string, { start: RequestStart; name: string }>;
  /** The tool and prompt names the child listed (to serve or to a client): the only names that are labels. */
  listed: Set<string>;
  /** Lists asked of the child and not answered yet: the key of their items, by request id. */
  lists: Map<string, string>;
}

export class RequestTap {
  readonly #telemetry: Telemetry;
  readonly #children = new WeakMap<object, ChildState>();

  constructor(telemetry: Telemetry) {
    this.#telemetry = telemetry;
  }

  /**
   * Hears `child`'s answers from now on, its requests known by `era` and `label`; nothing at all when nobody
   * listens to requests (serve's subscribers are in place before any child starts). `namesOf`: a child watched
   * already whose listed names this one shares (a session's view of the gateway every session shares).
   */
  watch(child: Heard, era: 'legacy' | 'modern', label: string, namesOf?: object): void {
    if (!this.#listened()) return;
    // A session's view of a shared gateway knows the names the gateway listed to anyone (`namesOf`), and adds to them.
    const listed = (namesOf === undefined ? undefined : this.#children.get(namesOf)?.listed) ?? new Set<string>();
    const state: ChildState = { era, label, open: new Map(), listed, lists: new Map() };
    this.#children.set(child, state);
    child.on('message', (msg: unknown) => this.#answered(state, msg));
    child.on('close', () => {
      for (const entry of state.open.values()) this.#end(state, entry, 'gone');
      state.open.clear();
    });
  }

  /** `msg` on its way to `child` (from `caller`): the message to send, begun as a request when it is one. */
  outgoing(child: object, msg: unknown, caller: Caller | undefined): unknown {
    const state = this.#children.get(child);
    if (state === undefined || !isRequest(msg)) return msg;
    if (LISTS[msg.method] !== undefined) state.lists.set(idKey(msg.id), LISTS[msg.method]!);
    // serve's own requests (the era probe, the translated initialize) are no client's.
    if (typeof msg.id === 'string' && msg.id.startsWith('mcp-frame-')) return msg;
    const params = isObject(msg.params) ? msg.params : undefined;
    const start = { label: state.label, era: state.era, method: msg.method, params, caller: caller?.subject, at: performance.now() };
    this.#telemetry.publish('request:start', start);
    const name = (msg.method === 'tools/call' || msg.method === 'prompts/get') && typeof params?.name === 'string' ? params.name : '';
    state.open.set(idKey(msg.id), { start: start as RequestStart, name });
    // A new params only when a subscriber gave one: a request without params stays without.
    return start.params === params ? msg : { ...msg, params: start.params };
  }

  #listened(): boolean {
    return this.#telemetry.listened('request:start') || this.#telemetry.listened('request:end');
  }

  #answered(state: ChildState, msg: unknown): void {
    if (!isResponse(msg)) return;
    const key = idKey(msg.id);
    const list = state.lists.get(key);
    if (list !== undefined) {
      state.lists.delete(key);
      learn(state.listed, (msg as { result?: unknown }).result, list);
    }
    const entry = state.open.get(key);
    if (entry === undefined) return;
    state.open.delete(key);
    const error = isObject((msg as { error?: unknown }).error) ? (msg as { error: { code?: unknown } }).error : undefined;
    const result = (msg as { result?: unknown }).result;
    if (error !== undefined) this.#end(state, entry, 'error', typeof error.code === 'number' ? error.code : undefined);
    else this.#end(state, entry, isObject(result) && result.isError === true ? 'tool_error' : 'ok');
  }

  #end(state: ChildState, entry: { start: RequestStart; name: string }, outcome: Outcome, code?: number): void {
    this.#telemetry.publish('request:end', {
      start: entry.start,
      outcome,
      code,
      seconds: (performance.now() - entry.start.at) / 1000,
      // A name is a label only when the server listed it and took it: an unknown name a client sent is not.
      tool: (outcome === 'ok' || outcome === 'tool_error') && state.listed.has(entry.name) ? entry.name : '',
    });
  }
}

/** The names of a list's items, kept (a bounded number, each short) as names that may be labels. */
function learn(listed: Set<string>, result: unknown, key: string): void {
  const items = isObject(result) ? result[key] : undefined;
  if (!Array.isArray(items)) return;
  for (const item of items) {
    if (listed.size >= MAX_LISTED_NAMES) return;
    if (isObject(item) && typeof item.name === 'string' && item.name.length <= 200) listed.add(item.name);
  }
}
