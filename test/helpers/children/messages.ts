/** The messages the child-process tests send, numbered so that either side can check them independently. */
export function numberedMessage(seq: number): object {
  return {
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { seq, text: `é😀 line\nwith\u2028separators ${'ü'.repeat(seq % 37)}`, pad: 'x'.repeat((seq * 7919) % 3000) },
  };
}
