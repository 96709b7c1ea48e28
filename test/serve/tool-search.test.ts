// serve --tool-search: a gateway of a generated server with hundreds of tools and server-everything (npm), seen
// by the MCP SDK 1.x client (2025-11-25) and the SDK 2.x client (2026-07-28): two tools and the pinned ones
// listed, search ranked and filtered, call_tool answering what tools/call answers, a list change found.
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'chai';
import type { ServerConfig } from '../../lib/client/config.js';
import { type ServeHandle, serve } from '../../lib/serve/index.js';
import { ROOT } from '../helpers/fixtures.js';
import { within } from '../helpers/poll.js';
import { cli } from '../helpers/run.js';
import { OBJECTS } from '../helpers/servers/tracker-words.js';

const MANY: ServerConfig = { command: process.execPath, args: [`${ROOT}dist/test/helpers/servers/many-tools.js`] };
const EVERYTHING: ServerConfig = {
  command: process.execPath,
  args: [`${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'],
};

type Found = { tools: Array<{ name: string; description?: string; inputSchema: unknown }> };

describe('serve --tool-search', function () {
  this.timeout(60_000);
  let bridge: ServeHandle;

  before(async () => {
    bridge = await serve(
      { tracker: MANY, everything: EVERYTHING },
      { log: () => undefined, toolSearch: true, pinTools: ['tracker__list_*'], denyTools: ['tracker__delete_secret'] },
    );
  });
  after(() => bridge.close());

  it('for the MCP SDK 1.x client: lists two tools and the pinned ones, finds by words, calls through call_tool as by name', async () => {
    const client = new Client1({ name: 'search-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport1(new URL(bridge.url!)));
    try {
      const listed = (await client.listTools()).tools.map((t) => t.name);
      expect(listed.slice(0, 2)).to.deep.equal(['search_tools', 'call_tool']);
      expect(listed.slice(2).sort()).to.deep.equal(OBJECTS.map((o) => `tracker__list_${o}`).sort());
      const search = async (query: string, limit?: number): Promise<Found> =>
        (await client.callTool({ name: 'search_tools', arguments: { query, ...(limit === undefined ? {} : { limit }) } })).structuredContent as Found;
      const branch = await search('delete a branch', 3);
      expect(branch.tools).to.have.length(3);
      expect(branch.tools[0]).to.deep.include({ name: 'tracker__delete_branch', description: 'Delete a branch of the tracker.' });
      expect(branch.tools[0]!.inputSchema).to.deep.equal({ type: 'object', properties: { id: { type: 'string' } } });
      expect((await search('echo back the message')).tools.map((t) => t.name)).to.include('everything__echo');
      expect((await search('pull request')).tools).to.have.length(10);
      // A tool the filters hide is never found, and call_tool refuses it as tools/call does.
      expect((await search('delete secret', 50)).tools.map((t) => t.name)).to.not.include('tracker__delete_secret');
      const direct = (await client.callTool({ name: 'tracker__delete_secret', arguments: {} }).catch((e: Error) => e)) as Error;
      const through = (await client
        .callTool({ name: 'call_tool', arguments: { name: 'tracker__delete_secret', arguments: {} } })
        .catch((e: Error) => e)) as Error;
      expect(direct.message).to.match(/Unknown tool: tracker__delete_secret/);
      expect(through.message).to.equal(direct.message);
      // call_tool answers what tools/call answers.
      const byName = await client.callTool({ name: 'tracker__get_issue', arguments: { id: '7' } });
      const viaCall = await client.callTool({ name: 'call_tool', arguments: { name: 'tracker__get_issue', arguments: { id: '7' } } });
      expect(viaCall).to.deep.equal(byName);
      expect(byName.content).to.deep.equal([{ type: 'text', text: 'get_issue {"id":"7"}' }]);
      const wrong = await client.callTool({ name: 'call_tool', arguments: {} });
      expect(wrong.isError).to.equal(true);
      // A list change upstream changes what search finds.
      expect((await search('tomato plant')).tools).to.deep.equal([]);
      const grown = await client.callTool({ name: 'tracker__grow', arguments: { word: 'tomato' } });
      const name = `tracker__${(grown.content as Array<{ text: string }>)[0]!.text}`;
      await within(10_000, 'the grown tool found', async () => ((await search('tomato plant')).tools[0]?.name === name ? true : undefined), 50);
    } finally {
      await client.close();
    }
  });

  it('for the MCP SDK 2.x client of the 2026-07-28 revision: the same two tools, search and call_tool', async () => {
    const host = new Client({ name: 'sdk2-search', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await host.connect(new StreamableHTTPClientTransport(new URL(bridge.url!)));
    try {
      const listed = (await host.listTools()).tools.map((t) => t.name);
      expect(listed.slice(0, 2)).to.deep.equal(['search_tools', 'call_tool']);
      const found = (await host.callTool({ name: 'search_tools', arguments: { query: 'archive milestone', limit: 1 } })).structuredContent as Found;
      expect(found.tools.map((t) => t.name)).to.deep.equal(['tracker__archive_milestone']);
      expect(await host.callTool({ name: 'call_tool', arguments: { name: 'everything__echo', arguments: { message: 'found it' } } })).to.deep.include(
        {
          content: [{ type: 'text', text: 'Echo: found it' }],
        },
      );
    } finally {
      await host.close();
    }
  });

  it('the command line: --pin-tools needs --tool-search', async () => {
    const run = await cli(['serve', '--pin-tools', 'x*', '--', process.execPath, 'dist/examples/server.js']);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('--pin-tools is for --tool-search');
  });
});
