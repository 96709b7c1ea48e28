/**
 * Where a text stops being JSON, as a line and column, for error messages about files a person edits
 * (fixtures, configs). The engine's JSON.parse message on Node 20 gives no position for most errors and quotes
 * the input instead, so this re-reads the text with a small recursive-descent checker. It runs only after
 * JSON.parse has failed.
 */
export interface TextPosition {
  offset: number;
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units. */
  column: number;
}

class Stop {
  constructor(readonly at: number) {}
}

const WS = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

function check(text: string): void {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && WS.has(text[i]!)) i++;
  };
  const literal = (word: string): void => {
    for (const ch of word) {
      if (text[i] !== ch) throw new Stop(i);
      i++;
    }
  };
  const digits = (): void => {
    if (!/[0-9]/.test(text[i] ?? '')) throw new Stop(i);
    while (/[0-9]/.test(text[i] ?? '')) i++;
  };
  const number = (): void => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else digits();
    if (text[i] === '.') {
      i++;
      digits();
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits();
    }
  };
  const string = (): void => {
    i++; // the opening quote
    for (;;) {
      const ch = text[i];
      if (ch === undefined || ch < ' ') throw new Stop(i);
      if (ch === '"') {
        i++;
        return;
      }
      if (ch === '\\') {
        const esc = text[i + 1] ?? '';
        if (esc === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) throw new Stop(i);
          i += 6;
        } else if (ESCAPES.has(esc)) {
          i += 2;
        } else {
          throw new Stop(i);
        }
      } else {
        i++;
      }
    }
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') throw new Stop(i);
        string();
        ws();
        if (text[i] !== ':') throw new Stop(i);
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return;
        } else throw new Stop(i);
      }
    } else if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return;
        } else throw new Stop(i);
      }
    } else if (ch === '"') string();
    else if (ch === 't') literal('true');
    else if (ch === 'f') literal('false');
    else if (ch === 'n') literal('null');
    else if (ch === '-' || /[0-9]/.test(ch ?? '')) number();
    else throw new Stop(i);
  };
  value();
  ws();
  if (i < text.length) throw new Stop(i);
}

/** The position where `text` stops being JSON, or undefined when it is JSON. */
export function jsonErrorPosition(text: string): TextPosition | undefined {
  try {
    check(text);
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    const before = text.slice(0, err.at);
    const lineStart = before.lastIndexOf('\n') + 1;
    return { offset: err.at, line: before.split('\n').length, column: err.at - lineStart + 1 };
  }
}
