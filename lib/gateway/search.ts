/*
 * Tool search (serve --tool-search): in place of every tool, the gateway lists two of its own, `search_tools`
 * and `call_tool`, and the tools `--pin-tools` names. A host then offers its model two tools and the pinned ones,
 * not hundreds: the model searches, and calls what it found through `call_tool` (or by its name, which still works).
 *
 * Ranking is BM25 (k1 1.2, b 0.75) over each tool's words: its exposed name split at `_`, `-`, `.`, `/` and case
 * changes (counted twice: a name says more than a sentence of its description), and its description. The index is
 * made from the merged list once per change of it (a server's list_changed, a server coming or going), and a
 * search filters it by what the caller may see (the filters, the policy) before ranking. Made of plain maps: an
 * index of 10,000 tools is a few MB, a search a walk of the query words' postings.
 */
import { isObject } from '../jsonrpc.js';
import type { Caller } from '../protocol/caller.js';
import { globPattern } from './names.js';
import type { Call } from './running.js';

type Json = Record<string, unknown>;

/** What a search answers with, per tool. */
interface FoundTool {
  name: string;
  description?: string;
  inputSchema: unknown;
}

const SEARCH_TOOL = 'search_tools';
const CALL_TOOL = 'call_tool';
/** Results of a search: by default, and at most. */
const LIMIT = 10;
const MAX_LIMIT = 50;
const K1 = 1.2;
const B = 0.75;
/** How many times a name's words count against a description's. */
const NAME_WEIGHT = 2;
/** A word whose weight is below this (in nearly every tool: "a", "the") adds nothing a ranking can tell by. */
const MIN_IDF = 0.01;

/** The two tools of the gateway's own, as tools/list gives them. */
const SEARCH_TOOLS: readonly Json[] = [
  {
    name: SEARCH_TOOL,
    title: 'Search the tools',
    description:
      'Finds tools by what they do: give a few words (a task, an object, an action) and get the tools that match best, each with its name, description and input schema. Call one with call_tool.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Words of what the tool should do' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: `How many tools at most (default ${LIMIT})` },
      },
      required: ['query'],
    },
  },
  {
    name: CALL_TOOL,
    title: 'Call a tool',
    description: 'Calls a tool search_tools found, by its name, with its arguments; answers what the tool answers.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'The tool’s name, as search_tools gave it' },
        arguments: { type: 'object', description: 'The tool’s arguments, as its input schema says' },
      },
      required: ['name'],
    },
  },
];

/** Words of a text: split at what is not a letter or digit and at case changes, lowercased. */
export function words(text: string): string[] {
  return text
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** A BM25 index of tools (exposed names, descriptions). */
export class ToolIndex {
  readonly #tools: FoundTool[];
  /** Word to its postings: tool index and weighted count. */
  readonly #postings = new Map<string, Array<[number, number]>>();
  readonly #lengths: number[];
  readonly #average: number;
  /** Each tool's score in the search under way (zero again after it). */
  readonly #scores: Float64Array;

  constructor(tools: readonly Json[]) {
    this.#tools = tools.map((t) => ({
      name: String(t.name),
      ...(typeof t.description === 'string' ? { description: t.description } : {}),
      inputSchema: t.inputSchema ?? { type: 'object' },
    }));
    this.#lengths = this.#tools.map((tool, i) => {
      const counts = new Map<string, number>();
      for (const w of words(tool.name)) counts.set(w, (counts.get(w) ?? 0) + NAME_WEIGHT);
      for (const w of words(tool.description ?? '')) counts.set(w, (counts.get(w) ?? 0) + 1);
      let length = 0;
      for (const [w, n] of counts) {
        const list = this.#postings.get(w) ?? [];
        if (list.length === 0) this.#postings.set(w, list);
        list.push([i, n]);
        length += n;
      }
      return length;
    });
    this.#average = this.#lengths.reduce((a, b) => a + b, 0) / Math.max(1, this.#lengths.length);
    this.#scores = new Float64Array(this.#tools.length);
  }

  get size(): number {
    return this.#tools.length;
  }

  /**
   * The tools `visible` lets through that match words of `query`, best first (ties by name), at most `limit`:
   * scores summed in one array over the query words' postings (a word nearly every tool has, whose weight is
   * next to nothing, is skipped), and the best kept as they come, never a sort of every match.
   */
  search(query: string, limit: number, visible: (name: string) => boolean): FoundTool[] {
    const n = this.#tools.length;
    const scores = this.#scores;
    const touched: number[] = [];
    for (const word of new Set(words(query))) {
      const list = this.#postings.get(word);
      if (list === undefined) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      if (idf < MIN_IDF) continue;
      for (const [i, tf] of list) {
        if (scores[i] === 0) touched.push(i);
        scores[i]! += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * this.#lengths[i]!) / this.#average));
      }
    }
    const best: number[] = [];
    const before = (a: number, b: number): boolean =>
      scores[a]! > scores[b]! || (scores[a] === scores[b] && this.#tools[a]!.name < this.#tools[b]!.name);
    for (const i of touched) {
      if (best.length === limit && !before(i, best[limit - 1]!)) continue;
      if (!visible(this.#tools[i]!.name)) continue;
      let at = best.length;
      while (at > 0 && before(i, best[at - 1]!)) at--;
      best.splice(at, 0, i);
      if (best.length > limit) best.pop();
    }
    const found = best.map((i) => this.#tools[i]!);
    for (const i of touched) scores[i] = 0;
    return found;
  }
}

/** A search_tools call's arguments, checked: the query and the limit; a message saying what is wrong otherwise. */
export function searchArguments(args: unknown): { query: string; limit: number } | string {
  if (!isObject(args) || typeof args.query !== 'string' || args.query.trim() === '')
    return 'search_tools needs a query: a few words of what the tool should do';
  const limit = args.limit ?? LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    return `search_tools: limit is a whole number from 1 to ${MAX_LIMIT}`;
  return { query: args.query, limit };
}

/** A search's answer: the tools as structured content, and the same as text. */
export function searchResult(tools: FoundTool[]): Json {
  const structured = { tools };
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/** What the search face reads and calls through its gateway. */
interface SearchHooks {
  /** One page of the merged tools list as serve itself sees it (every tool the filters let through). */
  page(cursor: string | undefined): Promise<Json>;
  /** Whether `caller` may see and call the tool `name` (the policy). */
  allowed(caller: Caller | undefined, name: string): boolean;
  /** A tools/call of an exposed name, as the gateway answers one. */
  call(call: Call, params: Json): Promise<unknown>;
}

/** The gateway's tools/list and its two tools, under --tool-search. */
export class SearchFace {
  readonly #pin: RegExp[];
  readonly #hooks: SearchHooks;
  #made: Promise<{ tools: Json[]; index: ToolIndex }> | undefined;

  constructor(pin: readonly string[], hooks: SearchHooks) {
    this.#pin = pin.map(globPattern);
    this.#hooks = hooks;
  }

  /** Whether a tools/call of `name` is one of the two of the gateway's own. */
  handles(name: unknown): boolean {
    return name === SEARCH_TOOL || name === CALL_TOOL;
  }

  /** The merged list changed: the index is made again at the next search. */
  changed(): void {
    this.#made = undefined;
  }

  /** tools/list: the two tools, and the pinned ones `caller` may see. */
  async list(caller: Caller | undefined): Promise<Json> {
    const { tools } = await this.#all();
    const pinned = tools.filter((t) => this.#pin.some((re) => re.test(String(t.name))) && this.#hooks.allowed(caller, String(t.name)));
    return { tools: [...SEARCH_TOOLS, ...pinned] };
  }

  /** A call of search_tools or call_tool; a wrong argument is a tool error (isError), as a tool's input error is. */
  async call(call: Call, params: Json): Promise<unknown> {
    const args = params.arguments;
    if (params.name === CALL_TOOL) {
      if (!isObject(args) || typeof args.name !== 'string' || args.name === '')
        return toolError('call_tool needs the name of a tool, as search_tools gave it');
      if (args.arguments !== undefined && !isObject(args.arguments))
        return toolError('call_tool: arguments is an object, as the tool’s input schema says');
      return this.#hooks.call(call, { ...params, name: args.name, arguments: args.arguments ?? {} });
    }
    const asked = searchArguments(args);
    if (typeof asked === 'string') return toolError(asked);
    const { index } = await this.#all();
    return searchResult(index.search(asked.query, asked.limit, (name) => this.#hooks.allowed(call.caller, name)));
  }

  /** Every tool, and their index: made once per change of the list. */
  #all(): Promise<{ tools: Json[]; index: ToolIndex }> {
    this.#made ??= this.#make().catch((err: unknown) => {
      this.#made = undefined;
      throw err;
    });
    return this.#made;
  }

  async #make(): Promise<{ tools: Json[]; index: ToolIndex }> {
    const tools: Json[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#hooks.page(cursor);
      if (Array.isArray(page.tools)) tools.push(...page.tools.filter(isObject));
      cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined;
    } while (cursor !== undefined);
    return { tools, index: new ToolIndex(tools) };
  }
}

function toolError(text: string): Json {
  return { content: [{ type: 'text', text }], isError: true };
}
