// What a test opened, closed after it in the reverse order, whatever it failed on.
export interface Teardown {
  /** Registers `thing` to be closed after the test; returns it. */
  add<T extends { close(): Promise<unknown> | unknown }>(thing: T): T;
  /** Closes everything registered, last first; for afterEach. */
  run(): Promise<void>;
}

export function teardown(): Teardown {
  const open: Array<{ close(): Promise<unknown> | unknown }> = [];
  return {
    add(thing) {
      open.push(thing);
      return thing;
    },
    async run() {
      while (open.length > 0) await open.pop()!.close();
    },
  };
}
