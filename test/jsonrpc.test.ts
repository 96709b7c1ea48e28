import { expect } from 'chai';
import { frameProblem, isErrorResponse, isJsonRpcMessage, isNotification, isRequest, isResponse, jsonRpcProblem } from '../lib/jsonrpc.js';

describe('JSON-RPC validation', () => {
  const valid: Array<[string, unknown, 'request' | 'notification' | 'response' | 'error']> = [
    ['a request with a number id', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'request'],
    ['a request with a string id and params', { jsonrpc: '2.0', id: 'a', method: 'x', params: { k: 1 } }, 'request'],
    ['a request with array params', { jsonrpc: '2.0', id: 0, method: 'x', params: [1] }, 'request'],
    ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }, 'notification'],
    ['a result', { jsonrpc: '2.0', id: 1, result: {} }, 'response'],
    ['a null result', { jsonrpc: '2.0', id: 1, result: null }, 'response'],
    ['an error with a null id', { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }, 'error'],
    ['an error with data', { jsonrpc: '2.0', id: 'x', error: { code: 1, message: '', data: [1] } }, 'error'],
  ];
  for (const [label, msg, kind] of valid) {
    it(`accepts ${label}`, () => {
      expect(jsonRpcProblem(msg)).to.equal(undefined);
      expect(isJsonRpcMessage(msg)).to.equal(true);
      expect([isRequest(msg), isNotification(msg), isResponse(msg), isErrorResponse(msg)]).to.deep.equal([
        kind === 'request',
        kind === 'notification',
        kind === 'response' || kind === 'error',
        kind === 'error',
      ]);
    });
  }

  const invalid: Array<[string, unknown]> = [
    ['a number', 42],
    ['null', null],
    ['no jsonrpc', { id: 1, method: 'x' }],
    ['jsonrpc 1.0', { jsonrpc: '1.0', id: 1, method: 'x' }],
    ['a method that is not a string', { jsonrpc: '2.0', id: 1, method: 5 }],
    ['a request id that is an object', { jsonrpc: '2.0', id: {}, method: 'x' }],
    ['a request id that is null', { jsonrpc: '2.0', id: null, method: 'x' }],
    ['params that are a string', { jsonrpc: '2.0', method: 'x', params: 'p' }],
    ['params that are null', { jsonrpc: '2.0', method: 'x', params: null }],
    ['neither method nor id', { jsonrpc: '2.0', result: {} }],
    ['a response with both result and error', { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'm' } }],
    ['a response with neither result nor error', { jsonrpc: '2.0', id: 1 }],
    ['an error code that is not an integer', { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'm' } }],
    ['an error without a message', { jsonrpc: '2.0', id: 1, error: { code: 1 } }],
    ['an error that is a string', { jsonrpc: '2.0', id: 1, error: 'bad' }],
    ['a response id that is a boolean', { jsonrpc: '2.0', id: true, result: 1 }],
  ];
  for (const [label, msg] of invalid) {
    it(`rejects ${label}`, () => {
      expect(jsonRpcProblem(msg)).to.be.a('string');
      expect(isJsonRpcMessage(msg)).to.equal(false);
    });
  }

  it('checks every element of a batch, and rejects an empty batch', () => {
    expect(
      frameProblem([
        { jsonrpc: '2.0', method: 'a' },
        { jsonrpc: '2.0', id: 1, result: 1 },
      ]),
    ).to.equal(undefined);
    expect(frameProblem([])).to.equal('an empty batch');
    expect(frameProblem([{ jsonrpc: '2.0', method: 'a' }, { id: 1 }])).to.match(/^batch element 1: /);
    expect(frameProblem([[{ jsonrpc: '2.0', method: 'a' }]])).to.match(/batch inside a batch/);
  });
});
