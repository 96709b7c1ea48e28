// A legacy server that asks its client for roots at a moment of its own (as server-everything does after
// initialized): during a tool call it does not need them for. The call's answer says what the roots request got.
import { serve, write } from './mini.js';

type Json = Record<string, unknown>;

let rootsAnswer = 'none yet';
serve(
  'asks-roots',
  (msg) => {
    if (msg.method !== 'tools/call') return {};
    write({ jsonrpc: '2.0', id: 'roots-1', method: 'roots/list' });
    // Answers the call a little later, whatever the roots request got by then.
    setTimeout(() => write({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: `roots: ${rootsAnswer}` }] } }), 150);
    return undefined;
  },
  {
    onOther: (msg: Json) => {
      if (msg.id !== 'roots-1') return;
      const error = msg.error as { code?: number } | undefined;
      rootsAnswer = error === undefined ? 'answered' : `error ${error.code}`;
    },
  },
);
