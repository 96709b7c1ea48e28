import { expect } from 'chai';
import { isModernVersion, MODERN_PROTOCOL_VERSIONS } from '../../lib/protocol/modern.js';
import {
  LATEST_LEGACY_PROTOCOL_VERSION,
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '../../lib/protocol/versions.js';

describe('protocol/versions: the revisions of the legacy era', () => {
  it('lists the legacy revisions newest first, the latest first of all', () => {
    expect(LEGACY_PROTOCOL_VERSIONS[0]).to.equal(LATEST_LEGACY_PROTOCOL_VERSION);
    expect([...LEGACY_PROTOCOL_VERSIONS].sort().reverse()).to.deep.equal([...LEGACY_PROTOCOL_VERSIONS]);
    expect(LEGACY_PROTOCOL_VERSIONS).to.include.members(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
    expect(LATEST_PROTOCOL_VERSION).to.equal(LATEST_LEGACY_PROTOCOL_VERSION);
    expect(SUPPORTED_PROTOCOL_VERSIONS).to.equal(LEGACY_PROTOCOL_VERSIONS);
  });

  it('keeps the eras apart: no legacy revision is modern, every modern one is', () => {
    for (const v of LEGACY_PROTOCOL_VERSIONS) expect(isModernVersion(v), v).to.equal(false);
    for (const v of MODERN_PROTOCOL_VERSIONS) expect(isModernVersion(v), v).to.equal(true);
    expect(MODERN_PROTOCOL_VERSIONS.some((v) => LEGACY_PROTOCOL_VERSIONS.includes(v))).to.equal(false);
  });
});
