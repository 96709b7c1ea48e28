/*
 * Reading a paged list (tools/list, prompts/list, resources/list, ...) to its end, bounded: a server that hands
 * back a cursor it gave before, or never stops, must not make its client list forever nor keep every page.
 */
import { isObject } from '../jsonrpc.js';

/** Pages read at most for one listing. */
const MAX_PAGES = 1000;

interface Listing {
  /** Every item of every page read, in order. */
  items: unknown[];
  /** Why the listing stopped before the server said it was done, or undefined when it did. */
  stopped: string | undefined;
}

/**
 * Reads the pages of a list method through `page` (which sends the request with the cursor, undefined for the
 * first), collecting each page's `key` array, until a page has no `nextCursor`, names a cursor seen before, or
 * `maxPages` pages were read.
 */
export async function listPages(page: (cursor: string | undefined) => Promise<unknown>, key: string, maxPages = MAX_PAGES): Promise<Listing> {
  const items: unknown[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 0; ; pages++) {
    if (pages >= maxPages) return { items, stopped: `${maxPages} pages read, and the server offered more` };
    const result = await page(cursor);
    const list = isObject(result) ? result[key] : undefined;
    if (Array.isArray(list)) for (const item of list) items.push(item);
    const next = isObject(result) && typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (next === undefined) return { items, stopped: undefined };
    if (seen.has(next)) return { items, stopped: `the server gave cursor ${JSON.stringify(next.slice(0, 40))} a second time` };
    seen.add(next);
    cursor = next;
  }
}
