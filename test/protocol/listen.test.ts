import { expect } from 'chai';
import { legacyAgreed, wantedBy } from '../../lib/protocol/listen.js';

describe('protocol/listen: what a subscriptions/listen asks for', () => {
  it('wants a list change only of a kind the filter names, and a resource update only of a URI it names', () => {
    const filter = { toolsListChanged: true, resourceSubscriptions: ['file:///a'] };
    expect(wantedBy(filter, { method: 'notifications/tools/list_changed' })).to.equal(true);
    expect(wantedBy(filter, { method: 'notifications/prompts/list_changed' })).to.equal(false);
    expect(wantedBy(filter, { method: 'notifications/resources/list_changed' })).to.equal(false);
    expect(wantedBy(filter, { method: 'notifications/resources/updated', params: { uri: 'file:///a' } })).to.equal(true);
    expect(wantedBy(filter, { method: 'notifications/resources/updated', params: { uri: 'file:///b' } })).to.equal(false);
    expect(wantedBy(filter, { method: 'notifications/resources/updated', params: { uri: 7 } })).to.equal(false);
    expect(wantedBy(filter, { method: 'notifications/resources/updated' })).to.equal(false);
    // Any other notification is not a listen's.
    expect(wantedBy(filter, { method: 'notifications/progress', params: {} })).to.equal(false);
    expect(wantedBy({}, { method: 'notifications/tools/list_changed' })).to.equal(false);
  });

  it("agrees to what a legacy server's capabilities declare, and nothing else", () => {
    const asked = { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['a', 'b', 'a'] };
    expect(legacyAgreed(asked, { tools: { listChanged: true }, prompts: {}, resources: { subscribe: true } })).to.deep.equal({
      toolsListChanged: true,
      resourceSubscriptions: ['a', 'b'],
    });
    expect(legacyAgreed(asked, { resources: { listChanged: true } })).to.deep.equal({ resourcesListChanged: true });
    // `listChanged` must be true itself, not merely present.
    expect(legacyAgreed(asked, { tools: { listChanged: 'yes' } })).to.deep.equal({});
    expect(legacyAgreed(asked, undefined)).to.deep.equal({});
    // What was not asked for is not agreed to, whatever the server offers.
    expect(legacyAgreed({}, { tools: { listChanged: true }, resources: { subscribe: true } })).to.deep.equal({});
  });
});
