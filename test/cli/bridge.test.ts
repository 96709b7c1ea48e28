import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { startEverything } from '../helpers/everything-http.js';
import { ROOT } from '../helpers/fixtures.js';
import { hostile, legacyHttp } from '../helpers/hostile-http.js';
import { FaultServer } from '../helpers/http-server.js';
import { cli, jsonLines } from '../helpers/run.js';
import { sdkServer } from '../helpers/sdk-http-server.js';
import { within, until } from '../helpers/poll.js';
import { serve } from '../../lib/serve/index.js';

describe('mcp-frame bridge', function () {
  this.timeout(30_000);

  it("lets the MCP SDK's stdio client use a remote Streamable HTTP server, across a dropped stream", async () => {
    const server = await sdkServer();
    const client = new Client({ name: 'stdio-only-host', version: '1.0.0' });
    const stderr: string[] = [];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', server.url, '--header', 'Authorization: Bearer sk-bridge-secret-123'],
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => stderr.push(d.toString()));
    try {
      await client.connect(transport);
      expect(client.getServerVersion()).to.deep.include({ name: 'sdk-http' });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).to.deep.equal(['confirm', 'echo', 'roots', 'steps']);
      expect(await client.callTool({ name: 'echo', arguments: { text: 'through the bridge ✓' } })).to.deep.include({
        content: [{ type: 'text', text: 'through the bridge ✓' }],
      });
      const notes: string[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notes.push(String(n.params.data)));
      const result = await client.callTool({ name: 'steps', arguments: { n: 6, drop: true } });
      expect(result).to.deep.include({ content: [{ type: 'text', text: '6 steps' }] });
      expect(notes).to.deep.equal(['step 1', 'step 2', 'step 3', 'step 4', 'step 5', 'step 6']);
    } finally {
      await client.close();
      await server.close();
    }
    expect(stderr.join('')).to.match(/reconnecting/);
    expect(stderr.join('')).to.not.include('sk-bridge-secret');
  });

  it('writes nothing to the host before its initialize result, through a gateway whose server says its list changed at once', async () => {
    const peer = (name: string, env: Record<string, string> = {}) => ({
      command: process.execPath,
      args: [`${ROOT}dist/test/helpers/servers/gateway-peer.js`, name],
      env,
    });
    const g = await serve({ a: peer('a', { PEER_CHANGED: '1' }), b: peer('b', { PEER_CHANGED: '1' }) }, { log: () => undefined });
    const children: ChildProcess[] = [];
    try {
      for (let run = 0; run < 4; run++) {
        const child = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', g.url!], { stdio: ['pipe', 'pipe', 'pipe'] });
        children.push(child);
        const lines = jsonLines(child.stdout);
        const init = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'host', version: '1' } };
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: init })}\n`);
        await within(10_000, 'the initialize result', () => Promise.resolve(lines.length > 0 ? true : undefined));
        // The list change comes after the host said it is initialized, never before the result.
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(lines[0], `run ${run}`).to.deep.include({ id: 1 });
        expect(lines.filter((l) => l.method !== undefined).length, `run ${run}: before initialized`).to.equal(0);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
        await within(10_000, 'the tool list', () => Promise.resolve(lines.some((l) => l.id === 2) ? true : undefined));
        child.stdin.end();
        await new Promise((resolve) => child.once('exit', resolve));
      }
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill();
      await g.close();
    }
  });

  it('lists and calls the tools of server-everything over Streamable HTTP, for the SDK stdio client', async () => {
    const everything = await startEverything('streamableHttp');
    const client = new Client({ name: 'stdio-only-host', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', everything.url],
    });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).to.include('echo');
      const result = await client.callTool({ name: 'echo', arguments: { message: 'bridged ünïcödé' } });
      expect(result).to.deep.include({ content: [{ type: 'text', text: 'Echo: bridged ünïcödé' }] });
    } finally {
      await client.close();
      await everything.stop();
    }
  });

  it('--ignore-tool leaves tools out of the list and answers a call of one with -32602, never sending it on', async () => {
    const everything = await startEverything('streamableHttp');
    const client = new Client({ name: 'stdio-only-host', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', everything.url, '--ignore-tool', 'echo', '--ignore-tool', 'get-*'],
    });
    try {
      await client.connect(transport);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).to.not.include('echo');
      expect(names.filter((n) => n.startsWith('get-'))).to.deep.equal([]);
      // The rest are there: only what matched is left out.
      expect(names).to.include('trigger-long-running-operation');
      const refused = await client.callTool({ name: 'echo', arguments: { message: 'x' } }).then(
        () => expect.fail('the call went through'),
        (err: Error & { code?: number }) => err,
      );
      expect(refused.code).to.equal(-32602);
      expect(refused.message).to.include('Unknown tool: echo');
    } finally {
      await client.close();
      await everything.stop();
    }
  });

  it('answers a request the remote server can no longer answer with an error, not silence', async () => {
    const server = new FaultServer({ dropAfterEvents: 1, noIds: true });
    const url = await server.listen();
    const client = new Client({ name: 'host', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', url],
      stderr: 'pipe',
    });
    try {
      await client.connect(transport);
      let caught: unknown;
      try {
        await client.callTool({ name: 'echo', arguments: { text: 'x', steps: 3 } }, undefined, { timeout: 10_000 });
      } catch (err) {
        caught = err;
      }
      expect(String(caught)).to.match(/STREAM|stream/);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('exits 2 with usage for bad arguments, and 3 (config) for a server that is not http', async () => {
    expect((await cli(['bridge'])).code).to.equal(2);
    expect((await cli(['bridge', '--url', 'http://127.0.0.1:1/mcp', '--header', 'no colon'])).code).to.equal(2);
    const r = await cli(['bridge', 'demo']);
    expect(r.code).to.equal(3);
    expect(r.stderr).to.match(/server "demo" is not a remote server/);
  });
});

describe('mcp-frame bridge against a host that stops reading', function () {
  this.timeout(30_000);

  it("stops reading the remote server's stream while the host leaves its stdout unread, and delivers it all later", async () => {
    const total = 400;
    let sent = 0;
    const server = await hostile(
      legacyHttp(
        () => undefined,
        (_req, res) => {
          // The GET stream: 400 messages of 1 MiB, written as fast as the bridge takes them.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const data = 'f'.repeat(1024 * 1024);
          const more = (): void => {
            while (sent < total && !res.destroyed) {
              sent++;
              const event = `id: e${sent}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${sent} ${data}"}}\n\n`;
              if (!res.write(event)) return void res.once('drain', more);
            }
          };
          more();
        },
      ),
    );
    const bridge = spawn(process.execPath, [`${ROOT}dist/lib/cli/main.js`, 'bridge', '--url', `${server.url}/mcp`]);
    try {
      bridge.stdout.pause();
      bridge.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'h', version: '1' } } })}\n`,
      );
      bridge.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${bridge.pid}/status`, 'utf8'))![1]) * 1024;
      expect(sent, 'MiB the server could send while the host read nothing').to.be.below(total / 4);
      expect(rss, "the bridge's RSS").to.be.below(200 * 1024 * 1024);
      let received = 0;
      let carry = '';
      bridge.stdout.setEncoding('utf8');
      bridge.stdout.on('data', (d: string) => {
        const lines = (carry + d).split('\n');
        carry = lines.pop()!;
        received += lines.filter((l) => l.includes('notifications/message')).length;
      });
      bridge.stdout.resume();
      await until(10000, 'every message received', () => received >= total, 10);
      expect(received).to.equal(total);
    } finally {
      bridge.kill();
      await new Promise((resolve) => bridge.once('exit', resolve));
      await server.close();
    }
  });
});
