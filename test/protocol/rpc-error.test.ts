import { expect } from 'chai';
import { RpcError as FromClient } from '../../lib/client/connection.js';
import { RpcError } from '../../lib/protocol/rpc-error.js';

describe('protocol/rpc-error: a JSON-RPC error response as a rejection', () => {
  it("keeps the response's code, message and data, and is the class the client rejects with", () => {
    const err = new RpcError(-32602, 'Unknown tool: x', { name: 'x' });
    expect(err).to.be.instanceOf(Error);
    expect([err.name, err.code, err.message, err.data]).to.deep.equal(['RpcError', -32602, 'Unknown tool: x', { name: 'x' }]);
    expect(new RpcError(-32000, 'no data').data).to.equal(undefined);
    expect(FromClient).to.equal(RpcError);
  });
});
