/* An HTTP response's life, as a server sees it: when it is gone, whoever ended it. */
import type { ServerResponse } from 'node:http';

/**
 * Calls `fn` once, when the response closes or the connection it belongs to does: a pipelined response queued
 * behind another never emits 'close' itself when the client goes. The connection's listener is removed with
 * the response, so that a kept-alive connection does not gather one per request. Returns a function that removes
 * them without calling `fn` (for a wait that ended otherwise).
 */
export function whenGone(res: ServerResponse, fn: () => void): () => void {
  const socket = res.req?.socket;
  let done = false;
  const forget = (): void => {
    done = true;
    res.off('close', gone);
    socket?.off('close', gone);
  };
  const gone = (): void => {
    if (done) return;
    forget();
    fn();
  };
  res.once('close', gone);
  socket?.once('close', gone);
  return forget;
}
