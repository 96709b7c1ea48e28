// SEP-1034: an accepted elicitation form gets the requested schema's defaults for the fields the handler left
// out, in both eras, against the conformance fixture (the MCP SDK 2.x) on stdio as a real child process.
import { expect } from 'chai';
import type { Connection } from '../../lib/client/connection.js';
import { connect } from '../../lib/client/connect.js';
import { ROOT } from '../helpers/fixtures.js';

const FIXTURE = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/conformance.js`] };
const DEFAULTS = { name: 'John Doe', age: 30, score: 95.5, status: 'active', verified: true };

/** The JSON the fixture's sep1034 tool reports it was sent, with the handler accepting `content`. */
async function sent(c: Connection, content: Record<string, unknown>): Promise<Record<string, unknown>> {
  c.onRequest('elicitation/create', () => ({ action: 'accept', content }));
  const result = (await c.request('tools/call', { name: 'test_elicitation_sep1034_defaults', arguments: {} })) as {
    content: Array<{ text: string }>;
  };
  const text = result.content[0]!.text;
  return JSON.parse(/Elicitation completed: (\{.*\}) \(action=accept\)/.exec(text)![1]!) as Record<string, unknown>;
}

describe('elicitation defaults (SEP-1034)', function () {
  this.timeout(20_000);
  const open: Connection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });

  for (const protocolVersion of ['2026-07-28', '2025-11-25']) {
    it(`fills the fields an accepting handler left out with the schema's defaults (${protocolVersion})`, async () => {
      const c = await connect(FIXTURE, { protocolVersion, capabilities: { elicitation: {} } });
      open.push(c);
      expect(c.era).to.equal(protocolVersion === '2026-07-28' ? 'modern' : 'legacy');
      expect(await sent(c, { age: 41 })).to.deep.equal({ ...DEFAULTS, age: 41 });
    });
  }

  it('sends what the handler returned, as it is, with elicitationDefaults: false', async () => {
    const c = await connect(FIXTURE, { protocolVersion: '2026-07-28', elicitationDefaults: false });
    open.push(c);
    expect(await sent(c, { age: 41 })).to.deep.equal({ age: 41 });
  });
});
