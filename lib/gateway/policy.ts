/*
 * Who may call which tool: a policy of rules that allow
 * tools and prompts, by the names the gateway exposes, to callers with some scopes or some claims.
 *
 * A name is allowed when one rule that names it (a glob of `tools` or `prompts`, not one of its `except`) is
 * met: the caller has every scope of its `scopes`, and for each claim of its `claims` the caller's claim (a
 * string, or an array of strings) holds one of the values. A name no rule allows is not there for that caller
 * (not listed; a call is an unknown tool), except where a rule's claims are met and only its scopes are
 * missing: then the call is refused with the scopes that would allow it (an HTTP 403 `insufficient_scope`, so
 * that the client can ask the user for more).
 */
import { jsonErrorPosition } from '../json-position.js';
import { isObject } from '../jsonrpc.js';
import type { Caller } from '../protocol/caller.js';
import { globPattern } from './names.js';
import { parseRate, type Rate } from './rate.js';

/** One rule of a policy file. */
export interface PolicyRule {
  /** Globs on exposed tool names (`*` any run, `?` one character). */
  tools?: string[];
  prompts?: string[];
  /** Names the globs above match that this rule does not allow. */
  except?: string[];
  /** Scopes the caller must all have. */
  scopes?: string[];
  /** Claims the caller must have: each a value, or values of which one must be the caller's (or among its array). */
  claims?: Record<string, string | string[]>;
  /** Calls of the tools it matches a caller it allows may make (`<n>/<s|m|h>`), counted per caller. */
  rate?: string;
}

/** What a policy says of one name for one caller. */
export type Decision = { allowed: true } | { allowed: false; scopes?: string[] };

/** A policy file that is not one: where (line, when the JSON is broken) and why. */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

interface CompiledRule {
  /** The rule's tool and prompt globs as written, by kind, for what names them in a warning. */
  globs: Record<'tools' | 'prompts', string[]>;
  tools: RegExp[];
  prompts: RegExp[];
  except: RegExp[];
  scopes: string[];
  claims: Array<[string, string[]]>;
  rate: Rate | undefined;
}

const RULE_KEYS = new Set(['tools', 'prompts', 'except', 'scopes', 'claims', 'rate', 'description']);

function strings(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== ''))
    throw new PolicyError(`${where} must be an array of non-empty strings`);
  return value as string[];
}

export class Policy {
  readonly #rules: CompiledRule[];

  private constructor(rules: CompiledRule[]) {
    this.#rules = rules;
  }

  /** A policy from its JSON text; PolicyError naming the line (broken JSON) or the rule and key (a wrong shape). */
  static parse(text: string, source = 'policy'): Policy {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      const at = jsonErrorPosition(text);
      throw new PolicyError(`${source}: not valid JSON${at === undefined ? '' : ` at line ${at.line}, column ${at.column}`}`);
    }
    try {
      return new Policy(Policy.#compile(parsed));
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      const rule = /^rules\[(\d+)\]/.exec(err.message)?.[1];
      const line = rule === undefined ? undefined : ruleLine(text, Number(rule));
      throw new PolicyError(`${source}${line === undefined ? '' : ` line ${line}`}: ${err.message}`);
    }
  }

  static #compile(parsed: unknown): CompiledRule[] {
    if (!isObject(parsed) || !Array.isArray(parsed.rules)) throw new PolicyError('the policy must be an object with a "rules" array');
    for (const key of Object.keys(parsed))
      if (key !== 'rules' && key !== 'description') throw new PolicyError(`unknown key "${key}" (rules, description)`);
    return parsed.rules.map((rule, i) => {
      const where = `rules[${i}]`;
      if (!isObject(rule)) throw new PolicyError(`${where} must be an object`);
      for (const key of Object.keys(rule)) {
        if (!RULE_KEYS.has(key)) throw new PolicyError(`${where}: unknown key "${key}" (${[...RULE_KEYS].join(', ')})`);
      }
      const tools = strings(rule.tools, `${where}.tools`);
      const prompts = strings(rule.prompts, `${where}.prompts`);
      if (tools.length === 0 && prompts.length === 0) throw new PolicyError(`${where} names no tools and no prompts`);
      const claims: Array<[string, string[]]> = [];
      if (rule.claims !== undefined) {
        if (!isObject(rule.claims)) throw new PolicyError(`${where}.claims must be an object of claim names to values`);
        for (const [claim, value] of Object.entries(rule.claims)) {
          const values = typeof value === 'string' ? [value] : strings(value, `${where}.claims.${claim}`);
          if (values.length === 0) throw new PolicyError(`${where}.claims.${claim} names no value`);
          claims.push([claim, values]);
        }
      }
      return {
        globs: { tools, prompts },
        tools: tools.map(globPattern),
        prompts: prompts.map(globPattern),
        except: strings(rule.except, `${where}.except`).map(globPattern),
        scopes: strings(rule.scopes, `${where}.scopes`),
        claims,
        rate: rateOf(rule.rate, `${where}.rate`),
      };
    });
  }

  /** The rules' globs that match none of `names` (the exposed names offered), as `rules[i].tools "glob"`. */
  unmatched(names: Record<'tools' | 'prompts', readonly string[]>): string[] {
    const out: string[] = [];
    this.#rules.forEach((rule, i) => {
      for (const kind of ['tools', 'prompts'] as const) {
        rule[kind].forEach((re, j) => {
          if (!names[kind].some((name) => re.test(name))) out.push(`rules[${i}].${kind} ${JSON.stringify(rule.globs[kind][j])}`);
        });
      }
    });
    return out;
  }

  /** Every scope a rule asks for (for the protected resource metadata's scopes_supported). */
  get scopes(): string[] {
    return [...new Set(this.#rules.flatMap((rule) => rule.scopes))];
  }

  /** What the policy says of `name` (a tool's or a prompt's exposed name) for `caller` (undefined: nobody signed in). */
  decide(caller: Caller | undefined, kind: 'tools' | 'prompts', name: string): Decision {
    let stepUp: string[] | undefined;
    for (const rule of this.#rules) {
      if (!rule[kind].some((re) => re.test(name)) || rule.except.some((re) => re.test(name))) continue;
      if (!rule.claims.every(([claim, values]) => holds(caller?.claims[claim], values))) continue;
      const missing = rule.scopes.filter((scope) => !caller?.scopes.includes(scope));
      if (missing.length === 0) return { allowed: true };
      // The rule that asks the fewest scopes more is the one to step up to.
      if (stepUp === undefined || missing.length < stepUp.length) stepUp = rule.scopes;
    }
    return stepUp === undefined ? { allowed: false } : { allowed: false, scopes: stepUp };
  }

  allows(caller: Caller | undefined, kind: 'tools' | 'prompts', name: string): boolean {
    return this.decide(caller, kind, name).allowed;
  }

  /** The rates of the rules that allow `caller` the tool `name`, each with its key (`rules[i]`): counted per caller. */
  rates(caller: Caller | undefined, name: string): Array<{ key: string; rate: Rate }> {
    const out: Array<{ key: string; rate: Rate }> = [];
    this.#rules.forEach((rule, i) => {
      if (rule.rate === undefined || !rule.tools.some((re) => re.test(name)) || rule.except.some((re) => re.test(name))) return;
      if (!rule.claims.every(([claim, values]) => holds(caller?.claims[claim], values))) return;
      if (rule.scopes.every((scope) => caller?.scopes.includes(scope))) out.push({ key: `rules[${i}]`, rate: rule.rate });
    });
    return out;
  }
}

/** A rule's rate, parsed; a PolicyError naming where when it is not one. */
function rateOf(value: unknown, where: string): Rate | undefined {
  if (value === undefined) return undefined;
  try {
    return parseRate(value, where);
  } catch (err) {
    throw new PolicyError((err as Error).message);
  }
}

/** The caller's claim is one of `values`, or (an array) holds one of them. */
function holds(claim: unknown, values: string[]): boolean {
  if (typeof claim === 'string') return values.includes(claim);
  if (typeof claim === 'number' || typeof claim === 'boolean') return values.includes(String(claim));
  return Array.isArray(claim) && claim.some((c) => typeof c === 'string' && values.includes(c));
}

/**
 * The line where the `index`th element of the top-level "rules" array starts, found by walking the JSON text
 * (strings skipped, depth counted); undefined where it cannot be told.
 */
function ruleLine(text: string, index: number): number | undefined {
  const key = /"rules"\s*:\s*\[/g;
  let depth = 0;
  let start: number | undefined;
  // The "rules" key of the top-level object: the first one met at depth 1.
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      key.lastIndex = i;
      const m = depth === 1 ? key.exec(text) : null;
      if (m !== null && m.index === i) {
        start = i + m[0].length;
        break;
      }
      i = stringEnd(text, i);
    } else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
  }
  if (start === undefined) return undefined;
  let element = 0;
  let nested = 0;
  let seen = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (/\s/.test(ch)) continue;
    if (nested === 0 && ch === ']') return undefined;
    if (nested === 0 && ch === ',') {
      element++;
      seen = false;
      continue;
    }
    if (nested === 0 && !seen) {
      seen = true;
      if (element === index) return text.slice(0, i).split('\n').length;
    }
    if (ch === '"') i = stringEnd(text, i);
    else if (ch === '{' || ch === '[') nested++;
    else if (ch === '}' || ch === ']') nested--;
  }
  return undefined;
}

/** The index of the quote that closes the string opening at `open`. */
function stringEnd(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return text.length;
}

/** Where forwarded requests carry the caller's claims (with forwardClaims). */
export const CALLER_META = 'mcp-frame/caller';

/**
 * serve itself as a caller: its own requests to a gateway (the tool list it reads to learn header declarations)
 * see every tool, whatever the policy hides from callers, and carry no caller's claims. Known by identity: no
 * token can make a caller that is this object.
 */
export const SERVE_ITSELF: Caller = Object.freeze({ subject: 'mcp-frame serve', scopes: Object.freeze([]), claims: Object.freeze({}) });

/**
 * `params` with the caller's `forwardClaims` in `_meta` (when there are any to forward), any a client put there
 * replaced: every message that reaches a server carries the signed-in caller's claims or none.
 */
export function withCaller(forwardClaims: readonly string[], params: Record<string, unknown>, caller: Caller | undefined): Record<string, unknown> {
  if (forwardClaims.length === 0) return params;
  const meta: Record<string, unknown> = isObject(params._meta) ? { ...params._meta } : {};
  delete meta[CALLER_META];
  if (caller !== undefined && caller !== SERVE_ITSELF) {
    const claims: Record<string, unknown> = {};
    for (const name of forwardClaims) if (caller.claims[name] !== undefined) claims[name] = caller.claims[name];
    meta[CALLER_META] = claims;
  }
  return { ...params, _meta: meta };
}
