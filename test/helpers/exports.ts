import { readFileSync } from 'node:fs';
import { ROOT } from './fixtures.js';

/** Every name an entry point's source (`lib/<entry>`) exports, types included, sorted. */
export function exportedNames(entry: string): string[] {
  const text = readFileSync(`${ROOT}lib/${entry}`, 'utf8');
  const names: string[] = [];
  for (const block of text.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
    for (const item of block[1]!.split(',')) {
      const name = item.trim().replace(/^type /, '');
      if (name !== '') names.push(name);
    }
  }
  return names.sort();
}
