import { expect } from 'chai';
import { CODES } from '../../lib/protocol/codes.js';
import { isModernError, MODERN_ERRORS } from '../../lib/protocol/modern.js';

describe('protocol/codes: the JSON-RPC error codes', () => {
  it("gives each situation its own code, JSON-RPC 2.0's where it has one and the server range's otherwise", () => {
    const values = Object.values(CODES);
    expect(new Set(values).size, 'one code a situation').to.equal(values.length);
    for (const [name, code] of Object.entries(CODES)) {
      const reserved = code >= -32768 && code <= -32000;
      expect(reserved, name).to.equal(true);
      // JSON-RPC 2.0 defines -32700 and -32600 to -32603; the rest of the reserved block is the server range's.
      if (code < -32099) expect([-32700, -32600, -32601, -32602, -32603], name).to.include(code);
    }
    expect(CODES).to.include({ parseError: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internalError: -32603 });
  });

  it("holds the 2026-07-28 revision's codes, which say a server is modern, and no other code does", () => {
    expect(MODERN_ERRORS).to.deep.equal({ headerMismatch: -32020, missingRequiredClientCapability: -32021, unsupportedProtocolVersion: -32022 });
    for (const [name, code] of Object.entries(CODES))
      expect(isModernError(code), name).to.equal(Object.values(MODERN_ERRORS).includes(code as (typeof MODERN_ERRORS)[keyof typeof MODERN_ERRORS]));
  });
});
