/*
 * Custom headers from tool parameters (MCP 2026-07-28 Streamable HTTP, SEP-2243): a tool's inputSchema may mark
 * a property with `x-mcp-header: "Name"`, and a client calling that tool over HTTP mirrors the argument into an
 * `Mcp-Param-Name` header, so that intermediaries can route on it without reading the body. A tool whose
 * annotations break the rules is not to be used.
 */
import { isObject } from '../jsonrpc.js';
import { headerValue } from './modern.js';

/** One mirrored parameter: the header's name part, and the path of `properties` keys to the argument. */
export interface ParamHeader {
  name: string;
  path: string[];
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
/** Keywords whose subschemas are not reached by `properties` alone: an annotation under them is invalid. */
const UNREACHABLE = [
  'items',
  'prefixItems',
  'additionalProperties',
  'patternProperties',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
  'dependentSchemas',
  'contains',
];

/**
 * The `x-mcp-header` declarations of an input schema, or why the schema breaks the rules: an annotation that is
 * not a non-empty RFC 9110 token, is on a property that is not a string, integer or boolean, is not reached
 * through `properties` keys alone (not at the top, nor under items, compositions, conditionals, `$defs`), or
 * repeats another name in any case.
 */
export function scanParamHeaders(schema: unknown): { headers: ParamHeader[] } | { invalid: string } {
  const headers: ParamHeader[] = [];
  const seen = new Map<string, string>();
  let invalid: string | undefined;
  const walk = (node: unknown, path: string[], reachable: boolean, depth: number): void => {
    if (invalid !== undefined || !isObject(node) || depth > 64) return;
    if ('x-mcp-header' in node) {
      const raw = node['x-mcp-header'];
      const where = path.length === 0 ? 'the schema itself' : path.join('.');
      if (!reachable || path.length === 0) invalid = `${where}: x-mcp-header is allowed only on properties reached through "properties" keys`;
      else if (typeof raw !== 'string' || !TOKEN.test(raw)) invalid = `${where}: x-mcp-header must be an HTTP token, got ${JSON.stringify(raw)}`;
      else if (typeof node.type !== 'string' || !PRIMITIVE.has(node.type))
        invalid = `${where}: x-mcp-header is allowed only on string, integer or boolean properties`;
      else if (seen.has(raw.toLowerCase())) invalid = `x-mcp-header "${raw}" repeats "${seen.get(raw.toLowerCase())}"`;
      else {
        seen.set(raw.toLowerCase(), raw);
        headers.push({ name: raw, path });
      }
    }
    if (isObject(node.properties)) for (const [key, child] of Object.entries(node.properties)) walk(child, [...path, key], reachable, depth + 1);
    for (const keyword of UNREACHABLE) {
      const sub = node[keyword];
      for (const child of Array.isArray(sub)
        ? sub
        : isObject(sub) && (keyword === '$defs' || keyword === 'definitions' || keyword === 'patternProperties' || keyword === 'dependentSchemas')
          ? Object.values(sub)
          : [sub]) {
        walk(child, path, false, depth + 1);
      }
    }
  };
  walk(schema, [], true, 0);
  return invalid === undefined ? { headers } : { invalid };
}

/** The `Mcp-Param-*` headers of a tools/call's arguments: absent and null arguments get none. */
export function paramHeaderValues(declared: ParamHeader[], args: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name, path } of declared) {
    let value: unknown = args;
    for (const key of path) value = isObject(value) ? value[key] : undefined;
    if (value === undefined || value === null) continue;
    const text = typeof value === 'string' ? headerValue(value) : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
    if (text !== undefined) out[`mcp-param-${name.toLowerCase()}`] = text;
  }
  return out;
}
