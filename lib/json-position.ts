/*
 * Where a text stops being JSON, as a line and column, for error messages about files a person edits
 * (fixtures, configs). The engine's JSON.parse message on Node 20 gives no position for most errors and quotes
 * the input instead, so this re-reads the text with a small checker. It runs only after JSON.parse has failed.
 */

/** A place in a text. */
interface TextPosition {
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
const DIGIT = /[0-9]/;

/**
 * Reads one JSON text and throws Stop where it stops being JSON. Nesting is kept on an explicit stack, not the
 * call stack, so that a deeply nested file gets a position rather than a RangeError.
 */
class Checker {
  #i = 0;
  readonly #open: string[] = [];

  constructor(readonly text: string) {}

  run(): void {
    for (;;) {
      this.#valueStart();
      while (this.#afterValue()) {
        // A container closed: the value it was part of is complete too.
      }
      if (this.#open.length === 0) break;
    }
    this.#ws();
    if (this.#i < this.text.length) throw new Stop(this.#i);
  }

  /** A value starts: a scalar is read whole; a container is opened up to its first value, or closed when empty. */
  #valueStart(): void {
    for (;;) {
      this.#ws();
      const ch = this.text[this.#i];
      if (ch !== '{' && ch !== '[') return this.#scalar(ch);
      this.#i++;
      this.#ws();
      if (this.text[this.#i] === (ch === '{' ? '}' : ']')) {
        this.#i++;
        return;
      }
      this.#open.push(ch);
      if (ch === '{') this.#member();
    }
  }

  /**
   * After a value, inside a container: a comma goes on to the next value (false), a closing bracket closes the
   * container (true: look again). At the top level, false.
   */
  #afterValue(): boolean {
    const top = this.#open.at(-1);
    if (top === undefined) return false;
    this.#ws();
    const ch = this.text[this.#i];
    if (ch === ',') {
      this.#i++;
      if (top === '{') this.#member();
      return false;
    }
    if (ch !== (top === '{' ? '}' : ']')) throw new Stop(this.#i);
    this.#i++;
    this.#open.pop();
    return true;
  }

  /** An object member's key and colon. */
  #member(): void {
    this.#ws();
    if (this.text[this.#i] !== '"') throw new Stop(this.#i);
    this.#string();
    this.#ws();
    if (this.text[this.#i] !== ':') throw new Stop(this.#i);
    this.#i++;
  }

  #scalar(ch: string | undefined): void {
    if (ch === '"') this.#string();
    else if (ch === 't') this.#literal('true');
    else if (ch === 'f') this.#literal('false');
    else if (ch === 'n') this.#literal('null');
    else if (ch === '-' || DIGIT.test(ch ?? '')) this.#number();
    else throw new Stop(this.#i);
  }

  #ws(): void {
    while (this.#i < this.text.length && WS.has(this.text[this.#i]!)) this.#i++;
  }

  #literal(word: string): void {
    for (const ch of word) {
      if (this.text[this.#i] !== ch) throw new Stop(this.#i);
      this.#i++;
    }
  }

  #digits(): void {
    if (!DIGIT.test(this.text[this.#i] ?? '')) throw new Stop(this.#i);
    while (DIGIT.test(this.text[this.#i] ?? '')) this.#i++;
  }

  #number(): void {
    if (this.text[this.#i] === '-') this.#i++;
    if (this.text[this.#i] === '0') this.#i++;
    else this.#digits();
    if (this.text[this.#i] === '.') {
      this.#i++;
      this.#digits();
    }
    if (this.text[this.#i] === 'e' || this.text[this.#i] === 'E') {
      this.#i++;
      if (this.text[this.#i] === '+' || this.text[this.#i] === '-') this.#i++;
      this.#digits();
    }
  }

  #string(): void {
    const text = this.text;
    this.#i++; // the opening quote
    for (;;) {
      const ch = text[this.#i];
      if (ch === undefined || ch < ' ') throw new Stop(this.#i);
      if (ch === '"') {
        this.#i++;
        return;
      }
      if (ch !== '\\') {
        this.#i++;
      } else if (text[this.#i + 1] === 'u') {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(this.#i + 2, this.#i + 6))) throw new Stop(this.#i);
        this.#i += 6;
      } else if (ESCAPES.has(text[this.#i + 1] ?? '')) {
        this.#i += 2;
      } else {
        throw new Stop(this.#i);
      }
    }
  }
}

/** The position where `text` stops being JSON, or undefined when it is JSON. */
export function jsonErrorPosition(text: string): TextPosition | undefined {
  try {
    new Checker(text).run();
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    const before = text.slice(0, err.at);
    const lineStart = before.lastIndexOf('\n') + 1;
    return { offset: err.at, line: before.split('\n').length, column: err.at - lineStart + 1 };
  }
}
