import { expect } from 'chai';
import { isLoopback } from '../../lib/protocol/loopback.js';

describe('protocol/loopback: hosts only this machine can reach', () => {
  it('knows localhost, ::1 (bracketed or not) and all of 127.0.0.0/8', () => {
    for (const host of ['localhost', '::1', '[::1]', '127.0.0.1', '127.1.2.3', '127.255.255.255']) expect(isLoopback(host), host).to.equal(true);
  });

  it('refuses every other host, and names that merely start like a loopback one', () => {
    for (const host of ['0.0.0.0', '10.0.0.1', '128.0.0.1', 'localhost.example.com', '127.0.0.1.nip.io', 'example.com', '::', '[::2]', '', '127.0.0'])
      expect(isLoopback(host), host).to.equal(false);
  });
});
