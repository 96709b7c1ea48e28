// The same sign-in by the MCP SDK's client (1.32.2) and by mcp-frame's, against one authorization server: the
// SDK discovers again for the token step (after the redirect, finishAuth() starts over), mcp-frame reuses what
// it found. Counted as requests to the authorization server's side (metadata, registration, authorize, token).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import { connect } from '../../lib/client/connect.js';
import { headlessAuthorize, OAuthServer } from '../helpers/oauth-server.js';
import { MemoryProvider, REDIRECT } from '../helpers/sdk-oauth.js';
import { note } from '../helpers/note.js';

describe('one sign-in, counted: mcp-frame against the MCP SDK', function () {
  this.timeout(20_000);

  it('makes fewer requests to the authorization server than the SDK, which discovers twice', async () => {
    const sdkSide = await OAuthServer.start();
    const ours = await OAuthServer.start();
    try {
      // The SDK: connect, get redirected, finish with the code, connect again.
      const provider = new MemoryProvider();
      const first = new StreamableHTTPClientTransport(new URL(sdkSide.url), { authProvider: provider });
      await new Client({ name: 'sdk', version: '1' }).connect(first).catch(() => undefined);
      const back = new URL(await headlessAuthorize({ url: provider.authorizationUrl! }));
      await first.finishAuth(back.searchParams.get('code')!);
      const client = new Client({ name: 'sdk', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(sdkSide.url), { authProvider: provider }));
      await client.listTools();
      await client.close();

      const c = await connect({ type: 'http', url: ours.url }, { auth: { authorize: headlessAuthorize, redirectUri: REDIRECT } });
      await c.request('tools/list');
      await c.close();

      const sdkCount = sdkSide.authServerRequests.length;
      const ourCount = ours.authServerRequests.length;
      note(`requests to the authorization server for one sign-in: SDK ${sdkCount}, mcp-frame ${ourCount}`);
      expect(sdkSide.counts.code).to.equal(1);
      expect(ours.counts.code).to.equal(1);
      expect(ourCount).to.be.lessThan(sdkCount);
      // Discovery once: one protected resource metadata and one authorization server metadata request.
      expect(ours.authServerRequests.filter((l) => l.path.startsWith('/.well-known/')).length).to.equal(2);
    } finally {
      await sdkSide.close();
      await ours.close();
    }
  });
});
