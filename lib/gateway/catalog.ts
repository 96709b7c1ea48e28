/*
 * What a gateway knows of its upstreams' lists, and the lists it answers with: each upstream's tool and prompt
 * names (and the x-mcp-header declarations of its tools), which resources and templates are whose, the exposed name
 * of each tool and prompt (per the prefix mode and the filters) and the upstream behind one, and the merged,
 * paged lists. Learnt from every page that passes through, read whole only where a name depends on another
 * upstream's list (prefix `conflicts` and `never`), one reading per server at a time, whoever asks.
 *
 * Each server's pages are kept while they are known to hold (see #keepFor): a server of the initialize era that
 * declared `listChanged` says when its list changes, so its pages are kept until it does (or restarts, or goes
 * down); any other server's for as long as its result's `ttlMs` says, or 5 s when it says nothing. A list every
 * session asks for is then read from its servers once, and answered from here after.
 */
import { RpcError } from '../client/connection.js';
import { isObject } from '../jsonrpc.js';
import type { Logger } from '../log.js';
import { CODES } from '../protocol/codes.js';
import { listPages } from '../protocol/paging.js';
import { type ParamHeader, scanParamHeaders } from '../protocol/param-headers.js';
import { decodeCursor, encodeCursor, type ListPosition, type NameFilter, type PrefixMode, templatePattern } from './names.js';
import type { Policy } from './policy.js';
import type { Upstream } from './upstream.js';
import { LATEST_LEGACY_PROTOCOL_VERSION } from '../protocol/versions.js';
import { VERSION } from '../version.js';

type Json = Record<string, unknown>;

/** After a list request of the gateway's timed out, the server is skipped for that list this long. */
const LIST_RETRY_MS = 30_000;
export type Kind = 'tools' | 'prompts' | 'resources' | 'templates';

interface KindInfo {
  method: string;
  key: string;
  capability: string;
  changed: string;
}

const KINDS: Record<Kind, KindInfo> = {
  tools: { method: 'tools/list', key: 'tools', capability: 'tools', changed: 'notifications/tools/list_changed' },
  prompts: { method: 'prompts/list', key: 'prompts', capability: 'prompts', changed: 'notifications/prompts/list_changed' },
  resources: { method: 'resources/list', key: 'resources', capability: 'resources', changed: 'notifications/resources/list_changed' },
  templates: {
    method: 'resources/templates/list',
    key: 'resourceTemplates',
    capability: 'resources',
    changed: 'notifications/resources/list_changed',
  },
};

/** Items of one server's list of one kind kept at most: past them, its pages are asked for each time. */
const KEPT_ITEMS = 10_000;
/**
 * A page of a server that says neither that it tells of changes (listChanged) nor how long its list holds (ttlMs)
 * is kept this long: its list is read again at most this often, however many sessions ask (mcp-hub keeps such a
 * list until the server restarts; a server whose list changes unsaid is seen to within this).
 */
const UNSAID_KEEP_MS = 5000;

/** Upstream pages one list request may read (a page of the gateway's is its upstreams' pages, merged). */
const MAX_STEPS = 256;

/**
 * A page of a merged list holds every server's items up to this many, or about PAGE_BYTES of them: hosts that read
 * one page of tools/list (Gemini CLI, the Inspector CLI, an SDK 1.x listTools() without a loop) see every server.
 * Past it, the gateway's own cursors go on.
 */
const PAGE_ITEMS = 1000;
const PAGE_BYTES = 4 * 1024 * 1024;

/** What the gateway knows of one upstream's list of one kind, learnt from what it listed. */
interface Known {
  names: Set<string>;
  /** The names of the last whole reading, while a new one is under way (to tell whether they changed). */
  before: Set<string> | undefined;
  /** Tools: the Mcp-Param-* declarations (x-mcp-header) of each, as last listed (none for a tool whose annotations break the rules). */
  headers: Map<string, readonly ParamHeader[]>;
  /** The whole list was read since the upstream last said it changed. */
  complete: boolean;
  ttlMs: number | undefined;
  cacheScope: string | undefined;
  /** The server's pages kept, by its cursor ('' for the first): the result, and until when it holds. */
  pages: Map<string, { result: unknown; until: number }>;
  /** The items those pages hold. */
  keptItems: number;
}

interface CatalogOptions {
  /** The upstreams, in config order (the gateway's own array: a reload changes it in place). */
  ups: readonly Upstream[];
  separator: string;
  prefix: PrefixMode;
  filters: Record<'tools' | 'prompts', NameFilter>;
  /** How long a list request may take before the server is skipped for that list (LIST_RETRY_MS). */
  listTimeoutMs: number;
  log: Logger;
  /** One server's names are prefixed too (as beside others); without it one server keeps its names. */
  prefixOne?: boolean;
}

/** What is known of a list never read. */
function unknown(): Known {
  return {
    names: new Set(),
    before: undefined,
    headers: new Map(),
    complete: false,
    ttlMs: undefined,
    cacheScope: undefined,
    pages: new Map(),
    keptItems: 0,
  };
}

export class Catalog {
  readonly #ups: readonly Upstream[];
  readonly #separator: string;
  readonly #prefix: PrefixMode;
  readonly #filters: Record<'tools' | 'prompts', NameFilter>;
  readonly #listTimeoutMs: number;
  readonly #log: Logger;
  readonly #prefixOne: boolean;
  /** Lists a server did not answer in time, by `kind:index`: until when it is skipped for them. */
  readonly #stalled = new Map<string, number>();
  /** Lists being read whole, by `kind:index`: one reading at a time, whoever asks. */
  readonly #indexing = new Map<string, Promise<void>>();
  readonly #known = new Map<string, Known>();
  /** A URI's upstream (the first in config order that listed it). */
  readonly #uris = new Map<string, number>();
  readonly #templates = new Map<number, RegExp[]>();
  readonly #warned = new Set<string>();
  /**
   * With prefix `conflicts` or `never`: each exposed name of a kind to its server and own name (null when two
   * would take it), made when a call needs it and dropped when a server's names change, so that a call costs a
   * lookup, as with `always`, and not a search of every name.
   */
  readonly #byExposed = new Map<Kind, Map<string, { up: Upstream; name: string } | null>>();
  /** Filter and policy globs said to match nothing, until a server's lists change (see warnUnmatched). */
  readonly #unmatched = new Set<string>();
  #checking: Promise<void> | undefined;

  constructor(options: CatalogOptions) {
    this.#ups = options.ups;
    this.#separator = options.separator;
    this.#prefix = options.prefix;
    this.#filters = options.filters;
    this.#listTimeoutMs = options.listTimeoutMs;
    this.#log = options.log;
    this.#prefixOne = options.prefixOne === true;
  }

  /** Names carry their server's prefix (per the prefix mode): with several servers, or one when asked. */
  get #prefixed(): boolean {
    return this.#ups.length > 1 || this.#prefixOne;
  }

  /** The upstream of `index` (an Upstream's own index, kept across reloads), while it is one of the gateway's. */
  #at(index: number): Upstream | undefined {
    return this.#ups.find((up) => up.index === index);
  }

  /** `up` left the gateway (a reload): what was known of it goes, and the names it held. */
  forget(up: Upstream): void {
    this.upstreamChanged(up, false);
    for (const kind of Object.keys(KINDS) as Kind[]) {
      this.#known.delete(`${kind}:${up.index}`);
      this.#stalled.delete(`${kind}:${up.index}`);
    }
  }

  knownOf(kind: Kind, up: Upstream): Known {
    const key = `${kind}:${up.index}`;
    let known = this.#known.get(key);
    if (known === undefined) {
      known = unknown();
      this.#known.set(key, known);
    }
    return known;
  }

  /** Whether `up` offers lists of `kind` now. */
  offers(up: Upstream, kind: Kind): boolean {
    return up.state === 'up' && up.capabilities[KINDS[kind].capability] !== undefined;
  }

  /**
   * Reads the whole list of `kind` of every upstream whose list is not known in full (one reading per server at
   * a time, whoever asks); a server that does not answer within listTimeoutMs is skipped (see #listPage).
   */
  async index(kind: Kind): Promise<void> {
    await Promise.all(
      this.#ups.map((up) => {
        if (!this.#listable(up, kind) || this.knownOf(kind, up).complete) return undefined;
        const key = `${kind}:${up.index}`;
        let reading = this.#indexing.get(key);
        if (reading === undefined) {
          reading = this.#readWhole(kind, up).finally(() => this.#indexing.delete(key));
          this.#indexing.set(key, reading);
        }
        return reading;
      }),
    );
  }

  async #readWhole(kind: Kind, up: Upstream): Promise<void> {
    let first = true;
    let failed = false;
    const listing = await listPages(async (cursor) => {
      const result = await this.#listPage(kind, up, cursor);
      if (result === undefined) failed = true;
      this.#learn(kind, up, result, first);
      first = false;
      return result;
    }, KINDS[kind].key);
    if (listing.stopped !== undefined)
      this.#log.warn('upstream.list_stopped', `the ${kind} list of server "${up.name}": ${listing.stopped}`, { upstream: up.name, kind });
    else if (!failed) this.knownOf(kind, up).complete = true;
  }

  /**
   * One page of `up`'s list of `kind`, or undefined when it failed. Bounded by listTimeoutMs: past it the server
   * is skipped for that list for LIST_RETRY_MS (logged, and said on /healthz), then asked again.
   */
  async #listPage(kind: Kind, up: Upstream, cursor: string | undefined): Promise<unknown> {
    const method = KINDS[kind].method;
    const known = this.knownOf(kind, up);
    const kept = known.pages.get(cursor ?? '');
    if (kept !== undefined && kept.until > Date.now()) return kept.result;
    try {
      const result = await up.request(method, cursor === undefined ? {} : { cursor }, { timeoutMs: this.#listTimeoutMs });
      up.note(undefined);
      this.#keep(kind, up, cursor, result);
      return result;
    } catch (err) {
      if ((err as { code?: unknown }).code === 'TIMEOUT') {
        this.#stalled.set(`${kind}:${up.index}`, Date.now() + LIST_RETRY_MS);
        up.note(`${method} went unanswered for ${this.#listTimeoutMs} ms: left out of lists, asked again in ${LIST_RETRY_MS / 1000} s`);
      }
      this.#log.warn('upstream.failed', `server "${up.name}" failed ${method}: ${(err as Error).message}`, { upstream: up.name, method });
      return undefined;
    }
  }

  /** Keeps a page of `up`'s list of `kind` for as long as it is known to hold (see #keepFor), within KEPT_ITEMS. */
  #keep(kind: Kind, up: Upstream, cursor: string | undefined, result: unknown): void {
    const known = this.knownOf(kind, up);
    const items = isObject(result) ? result[KINDS[kind].key] : undefined;
    const ms = this.#keepFor(kind, up, result);
    if (ms <= 0 || !Array.isArray(items) || known.keptItems + items.length > KEPT_ITEMS) return;
    if (cursor === undefined) {
      known.pages.clear();
      known.keptItems = 0;
    }
    known.pages.set(cursor ?? '', { result, until: Date.now() + ms });
    known.keptItems += items.length;
  }

  /** How long a page of `up`'s list of `kind` holds: until it says it changed (Infinity), its ttlMs, or UNSAID_KEEP_MS. */
  #keepFor(kind: Kind, up: Upstream, result: unknown): number {
    const declared = up.capabilities[KINDS[kind].capability];
    if (up.era === 'legacy' && isObject(declared) && declared.listChanged === true) return Number.POSITIVE_INFINITY;
    return isObject(result) && typeof result.ttlMs === 'number' ? result.ttlMs : UNSAID_KEEP_MS;
  }

  /** Whether `up`'s list of `kind` is to be read now: it offers one, and did not time out lately. */
  #listable(up: Upstream, kind: Kind): boolean {
    if (!this.offers(up, kind)) return false;
    const until = this.#stalled.get(`${kind}:${up.index}`);
    if (until === undefined) return true;
    if (Date.now() < until) return false;
    this.#stalled.delete(`${kind}:${up.index}`);
    return true;
  }

  /** Notes what a page of `up`'s list of `kind` shows: names, URIs, templates, cache hints. */
  #learn(kind: Kind, up: Upstream, result: unknown, firstPage: boolean): void {
    if (!isObject(result)) return;
    const known = this.knownOf(kind, up);
    if (firstPage) {
      known.before ??= known.names;
      known.names = new Set();
      known.headers.clear();
      if (kind === 'templates') this.#templates.set(up.index, []);
    }
    known.ttlMs = typeof result.ttlMs === 'number' ? result.ttlMs : undefined;
    known.cacheScope = typeof result.cacheScope === 'string' ? result.cacheScope : undefined;
    const items = result[KINDS[kind].key];
    if (!Array.isArray(items)) return;
    for (const item of items) {
      if (!isObject(item)) continue;
      if ((kind === 'tools' || kind === 'prompts') && typeof item.name === 'string') known.names.add(item.name);
      if (kind === 'tools' && typeof item.name === 'string') {
        const scanned = scanParamHeaders(item.inputSchema);
        known.headers.set(item.name, 'headers' in scanned ? scanned.headers : []);
      }
      if (kind === 'resources' && typeof item.uri === 'string') this.#owns(item.uri, up);
      if (kind === 'templates' && typeof item.uriTemplate === 'string') this.#templates.get(up.index)?.push(templatePattern(item.uriTemplate));
    }
    if (typeof result.nextCursor !== 'string') {
      known.complete = true;
      const before = known.before;
      known.before = undefined;
      if (before === undefined || before.size !== known.names.size || [...before].some((n) => !known.names.has(n))) this.#byExposed.delete(kind);
    }
  }

  /** `up` lists `uri`: it is its, unless an upstream before it in config order listed it too. */
  #owns(uri: string, up: Upstream): void {
    const owner = this.#uris.get(uri);
    if (owner === undefined || owner > up.index || this.#at(owner)?.state !== 'up') {
      this.#uris.set(uri, up.index);
      return;
    }
    if (owner !== up.index)
      this.#warnOnce(
        `uri:${uri}`,
        `resource ${uri} is listed by "${this.#at(owner)?.name}" and "${up.name}": reads go to "${this.#at(owner)?.name}"`,
      );
  }

  #warnOnce(key: string, line: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#log.warn('gateway.warning', line);
  }

  /**
   * Warns, once each until a server's lists change, of an `--allow-tools`/`--deny-tools` (or prompts) glob or a
   * policy rule's glob that matches no tool or prompt the servers offer: a typo, or a name written without its
   * `<server>__` prefix, would otherwise hide tools silently. Only when every server is up (one still starting
   * offers nothing yet).
   */
  warnUnmatched(policy: Policy | undefined): Promise<void> {
    // Nothing to check, nothing read: the lists are read here only for globs to check them against.
    const globs = policy !== undefined || !this.#filters.tools.empty || !this.#filters.prompts.empty;
    if (!globs || this.#ups.some((up) => up.state !== 'up')) return Promise.resolve();
    this.#checking ??= (async () => {
      const names = { tools: await this.offeredNames('tools'), prompts: await this.offeredNames('prompts') };
      const found = (['tools', 'prompts'] as const).flatMap((kind) =>
        this.#filters[kind].unmatched(names[kind]).map((g) => `--${g.slice(0, g.indexOf(' '))}-${kind} ${g.slice(g.indexOf(' ') + 1)}`),
      );
      found.push(...(policy?.unmatched(names) ?? []).map((rule) => `the policy's ${rule}`));
      for (const glob of found) {
        if (this.#unmatched.has(glob)) continue;
        this.#unmatched.add(glob);
        this.#log.warn(
          'config.unmatched',
          `${glob} matches no tool or prompt any server offers (is the <server>${this.#separator} prefix missing?)`,
          {
            glob,
          },
        );
      }
    })().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /** The policy changed: a glob that still matches nothing is said again (a server's lists changing does this too). */
  recheck(): void {
    this.#unmatched.clear();
  }

  /**
   * Every name of `kind` the servers up offer, as exposed before the filters (what a filter's or a policy's glob
   * is written against); the lists are read whole first.
   */
  async offeredNames(kind: 'tools' | 'prompts'): Promise<string[]> {
    await this.index(kind);
    const names: string[] = [];
    for (const up of this.#ups) {
      if (!this.offers(up, kind)) continue;
      for (const name of this.knownOf(kind, up).names) {
        const exposed = this.exposed(kind, up, name, false);
        if (exposed !== undefined) names.push(exposed);
      }
    }
    return names;
  }

  /**
   * The name the client sees for `up`'s tool or prompt `name`, or undefined when it is left out (filtered, unless
   * `filtered` is false, or a clash under `never`).
   */
  exposed(kind: 'tools' | 'prompts', up: Upstream, name: string, filtered = true): string | undefined {
    let exposed = name;
    if (this.#prefixed && this.#prefix !== 'never' && !up.transparent) {
      const clash = this.#prefix === 'always' || this.#ups.some((other) => other !== up && this.knownOf(kind, other).names.has(name));
      if (clash) exposed = `${up.name}${this.#separator}${name}`;
    }
    if (this.#prefix === 'never' && this.#prefixed) {
      const first = this.#ups.find((other) => this.knownOf(kind, other).names.has(name) && this.offers(other, kind));
      if (first !== undefined && first !== up) {
        this.#warnOnce(
          `${kind}:${name}:${up.name}`,
          `${kind === 'tools' ? 'tool' : 'prompt'} ${name} of "${up.name}" is left out: "${first.name}" offers one of that name`,
        );
        return undefined;
      }
    }
    return !filtered || this.#filters[kind].passes(exposed) ? exposed : undefined;
  }

  /**
   * The Mcp-Param-* declarations (x-mcp-header) of the tool exposed as `exposed`, as its server last listed it
   * through this gateway; undefined when the gateway has not seen it listed since the server last changed (the
   * caller then reads the list). serve checks a modern call's headers by it, with no list read for the call.
   */
  declaredHeaders(exposed: string): readonly ParamHeader[] | undefined {
    if (this.#prefix === 'always' || !this.#prefixed) {
      const owner = this.#owner(exposed);
      return owner === undefined ? undefined : this.knownOf('tools', owner.up).headers.get(owner.name);
    }
    for (const up of this.#ups) {
      for (const [name, headers] of this.knownOf('tools', up).headers) if (this.exposed('tools', up, name) === exposed) return headers;
    }
    return undefined;
  }

  /** Whether the filters leave the exposed name out (`--allow-tools`, `--deny-tools` and the same for prompts). */
  filtered(kind: 'tools' | 'prompts', exposed: string): boolean {
    return !this.#filters[kind].passes(exposed);
  }

  /** The upstream and its own name for an exposed tool or prompt name, or undefined when no upstream offers it. */
  async resolve(kind: 'tools' | 'prompts', exposed: string): Promise<{ up: Upstream; name: string } | undefined> {
    if (this.#prefix === 'always' || !this.#prefixed) return this.#filters[kind].passes(exposed) ? this.#owner(exposed) : undefined;
    await this.index(kind);
    // An exact match, and only one: a name two servers' tools would both take is called on neither.
    const found = this.#exposedIndex(kind).get(exposed);
    if (found !== null) return found;
    const owners = this.#ups.filter((up) => [...this.knownOf(kind, up).names].some((name) => this.exposed(kind, up, name) === exposed));
    this.#warnOnce(
      `ambiguous:${exposed}`,
      `${exposed} names a ${kind === 'tools' ? 'tool' : 'prompt'} of ${owners.map((up) => `"${up.name}"`).join(' and of ')}: called on neither`,
    );
    return undefined;
  }

  /**
   * With prefix `always` (or one server): the upstream whose prefix `exposed` carries, and its own name; a
   * transparent upstream's when none does (its names are as they are).
   */
  #owner(exposed: string): { up: Upstream; name: string } | undefined {
    if (!this.#prefixed) return this.#ups[0] === undefined ? undefined : { up: this.#ups[0], name: exposed };
    // The longest server name first: "a__b" must not be taken by a server "a" when a server "a__b" exists.
    const byLength = this.#ups.filter((u) => !u.transparent).sort((a, b) => b.name.length - a.name.length);
    const up = byLength.find((u) => exposed.startsWith(`${u.name}${this.#separator}`));
    if (up !== undefined) return { up, name: exposed.slice(up.name.length + this.#separator.length) };
    const through = this.#ups.find((u) => u.transparent);
    return through === undefined ? undefined : { up: through, name: exposed };
  }

  /** Each exposed name of `kind` to its server and own name, null when two would take it (see #byExposed). */
  #exposedIndex(kind: 'tools' | 'prompts'): Map<string, { up: Upstream; name: string } | null> {
    let index = this.#byExposed.get(kind);
    if (index !== undefined) return index;
    index = new Map();
    for (const up of this.#ups) {
      for (const name of this.knownOf(kind, up).names) {
        const exposed = this.exposed(kind, up, name);
        if (exposed !== undefined) index.set(exposed, index.has(exposed) ? null : { up, name });
      }
    }
    this.#byExposed.set(kind, index);
    return index;
  }

  /**
   * One page of the gateway's merged list of `kind`: the upstreams' pages from the cursor's place on, in config
   * order, until PAGE_ITEMS or PAGE_BYTES (every server's whole list, when the total is modest).
   */
  async list(kind: Kind, params: Json, allowed: (kind: 'tools' | 'prompts', exposed: string) => boolean): Promise<Json> {
    let position: ListPosition | undefined = { upstream: 0, cursor: undefined };
    if (typeof params.cursor === 'string') {
      position = decodeCursor(kind, params.cursor);
      if (position === undefined)
        throw new RpcError(CODES.invalidParams, `Invalid cursor: ${JSON.stringify(params.cursor.slice(0, 40))} is not one this gateway gave`);
    }
    // Names that depend on the other upstreams' lists need those lists whole.
    if ((kind === 'tools' || kind === 'prompts') && this.#prefix !== 'always' && this.#prefixed) await this.index(kind);
    const info = KINDS[kind];
    const items: unknown[] = [];
    // The first page of every server from here on, asked at once: most lists are one page of each.
    const firsts = new Map<number, Promise<unknown>>();
    for (let i = position.cursor === undefined ? position.upstream : position.upstream + 1; i < this.#ups.length; i++) {
      const up = this.#ups[i]!;
      if (this.#listable(up, kind)) firsts.set(up.index, this.#listPage(kind, up, undefined));
    }
    let bytes = 0;
    for (let steps = 0; position.upstream < this.#ups.length && steps < MAX_STEPS; steps++) {
      const up = this.#ups[position.upstream]!;
      let result: unknown;
      if (this.#listable(up, kind)) {
        result = await ((position.cursor === undefined ? firsts.get(up.index) : undefined) ?? this.#listPage(kind, up, position.cursor));
        this.#learn(kind, up, result, position.cursor === undefined);
      }
      const page = isObject(result) && Array.isArray(result[info.key]) ? (result[info.key] as unknown[]) : [];
      for (const item of page) {
        if (!isObject(item)) continue;
        let out: unknown;
        if (kind === 'tools' || kind === 'prompts') {
          const exposed = typeof item.name === 'string' ? this.exposed(kind, up, item.name) : undefined;
          if (exposed !== undefined && allowed(kind, exposed)) out = { ...item, name: exposed };
        } else if (kind !== 'resources' || typeof item.uri !== 'string' || this.#uris.get(item.uri) === up.index) out = item;
        if (out === undefined) continue;
        items.push(out);
        bytes += JSON.stringify(out).length;
      }
      const next: string | undefined = isObject(result) && typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
      position = next === undefined ? { upstream: position.upstream + 1, cursor: undefined } : { upstream: position.upstream, cursor: next };
      // An upstream that offers no such list gets no page of its own (a last, empty page for nothing).
      while (next === undefined && position.upstream < this.#ups.length && !this.#listable(this.#ups[position.upstream]!, kind)) position.upstream++;
      if (items.length >= PAGE_ITEMS || bytes >= PAGE_BYTES) break;
    }
    return {
      [info.key]: items,
      ...(position.upstream < this.#ups.length ? { nextCursor: encodeCursor(kind, position) } : {}),
      ...this.#hints(kind),
    };
  }

  /** Cache hints for a merged list: the smallest ttlMs, and private when any upstream says so; none when one gave none. */
  #hints(kind: Kind): Json {
    let ttlMs: number | undefined;
    let scope: string | undefined = 'shared';
    for (const up of this.#ups) {
      if (!this.offers(up, kind)) continue;
      const known = this.knownOf(kind, up);
      if (known.ttlMs === undefined) return {};
      ttlMs = Math.min(ttlMs ?? Infinity, known.ttlMs);
      if (known.cacheScope === 'private' || known.cacheScope === undefined) scope = 'private';
    }
    return ttlMs === undefined ? {} : { ttlMs, cacheScope: scope };
  }

  /** The upstream that serves `uri`: the first in config order that listed it, else one whose template matches it. */
  uriOwner(uri: string): Upstream | undefined {
    const owner = this.#uris.get(uri);
    const listed = owner === undefined ? undefined : this.#at(owner);
    if (listed?.state === 'up') return listed;
    return this.#ups.find((up) => up.state === 'up' && (this.#templates.get(up.index) ?? []).some((re) => re.test(uri)));
  }

  /** The names two upstreams both offer (tools and prompts), as `name (a, b)`: what `never` refuses at start. */
  async clashes(): Promise<string[]> {
    const out: string[] = [];
    for (const kind of ['tools', 'prompts'] as const) {
      await this.index(kind);
      const owners = new Map<string, string[]>();
      for (const up of this.#ups) for (const name of this.knownOf(kind, up).names) owners.set(name, [...(owners.get(name) ?? []), up.name]);
      for (const [name, ups] of owners) if (ups.length > 1) out.push(`${kind === 'tools' ? 'tool' : 'prompt'} ${name} (${ups.join(', ')})`);
    }
    return out;
  }

  /** `up` said its list of `kind` changed (its list_changed notification). */
  listChanged(up: Upstream, method: string): void {
    for (const kind of Object.keys(KINDS) as Kind[]) {
      if (KINDS[kind].changed !== method) continue;
      const known = this.knownOf(kind, up);
      known.complete = false;
      // What a tool declares may have changed with it: read again before a call is checked by it.
      known.headers.clear();
      known.pages.clear();
      known.keptItems = 0;
      this.#unmatched.clear();
    }
  }

  /** `up` came up or went down: what it offered is read again, or forgotten. */
  upstreamChanged(up: Upstream, isUp: boolean): void {
    // Which server's name wins (never) and whose names there are (conflicts) depend on which are up.
    this.#byExposed.clear();
    this.#unmatched.clear();
    for (const kind of Object.keys(KINDS) as Kind[]) {
      const known = this.knownOf(kind, up);
      known.complete = false;
      known.headers.clear();
      known.pages.clear();
      known.keptItems = 0;
      if (!isUp) {
        known.names.clear();
        known.before = undefined;
      }
    }
    if (!isUp) {
      this.#templates.delete(up.index);
      for (const [uri, owner] of this.#uris) if (owner === up.index) this.#uris.delete(uri);
    }
  }

  /** The upstream that listed `uri` or whose template matches it (the lists read first when none is known to). */
  async findUriOwner(uri: string): Promise<Upstream | undefined> {
    const known = this.uriOwner(uri);
    if (known !== undefined) return known;
    await Promise.all([this.index('resources'), this.index('templates')]);
    return this.uriOwner(uri);
  }

  /** The upstream (up now) one of whose templates `template` matches. */
  templateOwner(template: string): Upstream | undefined {
    return this.#ups.find((u) => u.state === 'up' && (this.#templates.get(u.index) ?? []).some((re) => re.test(template)));
  }
}

/**
 * A gateway's initialize result: the union of the capabilities of its upstreams that are up (every list change
 * notified, since upstreams come and go), their instructions under their names, and `name` as its serverInfo.
 */
export function initializeResult(ups: readonly Upstream[], name: string): Record<string, unknown> {
  const capabilities: Record<string, unknown> = { tools: { listChanged: true } };
  const parts: string[] = [];
  for (const up of ups) {
    const caps = up.capabilities;
    if (caps.prompts !== undefined) capabilities.prompts = { listChanged: true };
    if (isObject(caps.resources)) {
      const subscribe = caps.resources.subscribe === true || (isObject(capabilities.resources) && capabilities.resources.subscribe === true);
      capabilities.resources = { listChanged: true, ...(subscribe ? { subscribe: true } : {}) };
    }
    if (caps.logging !== undefined) capabilities.logging = {};
    if (caps.completions !== undefined) capabilities.completions = {};
    const instructions = up.info?.instructions;
    if (typeof instructions === 'string' && instructions.trim() !== '') parts.push(`## ${up.name}\n\n${instructions.trim()}`);
  }
  return {
    protocolVersion: LATEST_LEGACY_PROTOCOL_VERSION,
    capabilities,
    serverInfo: { name, version: VERSION },
    ...(parts.length === 0 ? {} : { instructions: parts.join('\n\n') }),
  };
}

/**
 * Where a completion/complete goes, and with what params: the server of the prompt it names (under that server's
 * own name; only a prompt `allowed` lets through), or of the resource template or URI; an RpcError otherwise.
 */
export async function completionTarget(
  catalog: Catalog,
  params: Record<string, unknown>,
  allowed: (prompt: string) => boolean,
): Promise<{ up: Upstream; params: Record<string, unknown> }> {
  const ref = isObject(params.ref) ? params.ref : {};
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
    const found = allowed(ref.name) ? await catalog.resolve('prompts', ref.name) : undefined;
    if (found === undefined) throw new RpcError(CODES.invalidParams, `Unknown prompt: ${ref.name.slice(0, 120)}`);
    return { up: found.up, params: { ...params, ref: { ...ref, name: found.name } } };
  }
  if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
    const template = ref.uri;
    await catalog.index('templates');
    const owner = catalog.templateOwner(template) ?? catalog.uriOwner(template);
    if (owner === undefined)
      throw new RpcError(CODES.resourceNotFound, `Resource not found: no server behind the gateway offers ${template.slice(0, 200)}`);
    return { up: owner, params };
  }
  throw new RpcError(CODES.invalidParams, 'completion/complete needs a ref of type ref/prompt or ref/resource');
}
