declare module 'split2' {
  import type { Transform } from 'node:stream';
  function split2(mapper?: (line: string) => unknown, options?: { maxLength?: number }): Transform;
  export default split2;
}

declare module 'ndjson' {
  import type { Transform } from 'node:stream';
  export function parse(options?: { strict?: boolean }): Transform;
  export function stringify(options?: object): Transform;
}
