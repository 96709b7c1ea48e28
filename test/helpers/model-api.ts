// A stand-in model API on 127.0.0.1 for driving real MCP hosts (Claude Code, Gemini CLI) without an account: it
// records which tools each request offered the model, and answers the first request that offers the tool it is
// told to call with a call of that tool (its arguments as given), and every other request with a short text. It
// speaks what each host sends: the Anthropic Messages API (`POST /v1/messages`, streamed or not) and Gemini's
// `generateContent` / `streamGenerateContent` (`?alt=sse`), and answers anything else (token counts, probes)
// harmlessly, so that a host's side requests never fail its run.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

export interface ModelApi {
  url: string;
  /** Each model request's offered tool names, in order. */
  offered: string[][];
  /** The results of tool calls the host sent back (their text), in order. */
  results: string[];
  /** Every request's method and path. */
  paths: string[];
  close(): Promise<void>;
}

/** `call`: a tool to call (the first offered name that ends with it) and its arguments. */
export async function startModelApi(call: { tool: string; arguments: Json }): Promise<ModelApi> {
  const api: ModelApi = { url: '', offered: [], results: [], paths: [], close: async () => undefined };
  let called = false;
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      api.paths.push(`${req.method} ${req.url}`);
      let json: Json = {};
      try {
        json = JSON.parse(body || '{}') as Json;
      } catch {
        // Not JSON: answered as anything else is.
      }
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname.endsWith('/v1/messages')) return anthropic(json, res);
      if (/:(stream)?[gG]enerateContent$/.test(url.pathname)) return gemini(json, res, url.pathname.includes(':stream'));
      if (/:countTokens$/.test(url.pathname)) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"totalTokens":10}');
      if (url.pathname.endsWith('/v1/messages/count_tokens'))
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":10}');
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"type":"not_found_error","message":"not here"}}');
    });
  });

  /** The tool to call among `names`, unless it was called already (once per run). */
  const pick = (names: string[]): string | undefined =>
    called ? undefined : names.find((n) => n === call.tool || n.endsWith(`__${call.tool}`) || n.endsWith(`_${call.tool}`));

  function anthropic(json: Json, res: http.ServerResponse): void {
    const tools = Array.isArray(json.tools) ? (json.tools as Json[]).map((t) => String(t.name)) : [];
    if (tools.length > 0) api.offered.push(tools);
    for (const message of Array.isArray(json.messages) ? (json.messages as Json[]) : []) {
      if (!Array.isArray(message.content)) continue;
      for (const part of message.content as Json[]) if (part.type === 'tool_result') api.results.push(textOf(part.content));
    }
    const tool = pick(tools);
    if (tool !== undefined) called = true;
    const content = tool === undefined ? [{ type: 'text', text: 'done' }] : [{ type: 'tool_use', id: 'toolu_01', name: tool, input: call.arguments }];
    const message = {
      id: 'msg_01',
      type: 'message',
      role: 'assistant',
      model: String(json.model ?? 'claude'),
      content,
      stop_reason: tool === undefined ? 'end_turn' : 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5 },
    };
    if (json.stream !== true) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: string, data: Json): void => void res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    send('message_start', { message: { ...message, content: [], stop_reason: null } });
    const block = content[0]!;
    if (block.type === 'tool_use') {
      send('content_block_start', { index: 0, content_block: { ...block, input: {} } });
      send('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.arguments) } });
    } else {
      send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'done' } });
    }
    send('content_block_stop', { index: 0 });
    send('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: 5 } });
    send('message_stop', {});
    res.end();
  }

  function gemini(json: Json, res: http.ServerResponse, stream: boolean): void {
    const tools: string[] = [];
    for (const group of Array.isArray(json.tools) ? (json.tools as Json[]) : []) {
      for (const declaration of Array.isArray(group.functionDeclarations) ? (group.functionDeclarations as Json[]) : [])
        tools.push(String(declaration.name));
    }
    if (tools.length > 0) api.offered.push(tools);
    for (const content of Array.isArray(json.contents) ? (json.contents as Json[]) : []) {
      for (const part of Array.isArray(content.parts) ? (content.parts as Json[]) : []) {
        const response = part.functionResponse as Json | undefined;
        if (response !== undefined) api.results.push(JSON.stringify(response.response ?? {}));
      }
    }
    const tool = pick(tools);
    if (tool !== undefined) called = true;
    const part = tool === undefined ? { text: 'done' } : { functionCall: { name: tool, args: call.arguments } };
    const answer = {
      candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
      modelVersion: 'stand-in',
    };
    if (!stream) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${JSON.stringify(answer)}\r\n\r\n`);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  api.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return api;
}

/** The text of a tool result's content (a string, or text blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content ?? null);
  return content.map((c: Json) => (typeof c.text === 'string' ? c.text : JSON.stringify(c))).join('');
}
