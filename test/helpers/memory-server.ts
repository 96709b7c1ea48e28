/*
 * MCP servers in the test process, over two in-memory byte streams: the example server, or a legacy server whose
 * every request a test answers itself (to hold one, fail one, or see what arrived). For unit tests of what sits on
 * a Connection (an upstream, a gateway) with no child process.
 */
import { PassThrough } from 'node:stream';
import { type Channel, StreamChannel } from '../../lib/client/channel.js';
import { serveDemo } from '../../examples/demo.js';

/** The example server in process. */
export function demoChannel(name = 'demo'): Channel {
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  void serveDemo(toServer, toClient);
  return new StreamChannel(toClient, toServer, { name });
}

type Json = Record<string, unknown>;

/** A request the scripted server got: its method and params, and how to answer it. */
export interface Asked {
  method: string;
  params: Json;
  answer(result: unknown): void;
  fail(code: number, message: string): void;
}

/**
 * A legacy server in process: initialize is answered (with `capabilities`), every other request goes to `onRequest`,
 * which answers it when it likes; notifications are kept in `notified`, and the answers to its own requests (sent
 * with `say`) in `answers`.
 */
export function scriptedChannel(
  onRequest: (asked: Asked) => void,
  capabilities: Json = { tools: {} },
): { channel: Channel; notified: Json[]; answers: Json[]; say(msg: Json): void } {
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  const notified: Json[] = [];
  const answers: Json[] = [];
  const say = (msg: Json): void => void toClient.write(`${JSON.stringify(msg)}\n`);
  let buffered = '';
  toServer.setEncoding('utf8');
  toServer.on('data', (text: string) => {
    buffered += text;
    for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
      const msg = JSON.parse(buffered.slice(0, nl)) as Json;
      buffered = buffered.slice(nl + 1);
      if (msg.id === undefined) notified.push(msg);
      else if (msg.method === undefined) answers.push(msg);
      else if (msg.method === 'initialize') {
        const params = msg.params as Json;
        say({
          jsonrpc: '2.0',
          id: msg.id,
          result: { protocolVersion: params.protocolVersion, capabilities, serverInfo: { name: 'scripted', version: '1' } },
        });
      } else if (typeof msg.method === 'string') {
        onRequest({
          method: msg.method,
          params: (msg.params ?? {}) as Json,
          answer: (result) => say({ jsonrpc: '2.0', id: msg.id, result }),
          fail: (code, message) => say({ jsonrpc: '2.0', id: msg.id, error: { code, message } }),
        });
      }
    }
  });
  toServer.on('end', () => toClient.end());
  return { channel: new StreamChannel(toClient, toServer, { name: 'scripted' }), notified, answers, say };
}
