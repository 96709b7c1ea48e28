// The fixture server the MCP conformance suite's server scenarios are run against: every tool, prompt and
// resource the 2025-11-25 and 2026-07-28 requirement sets name, on the MCP SDK 2.x (@modelcontextprotocol/server),
// dual-era. The same factory is served natively over HTTP (`conformanceHttp`, the SDK's own handler) and over
// stdio (test/helpers/servers/conformance.ts) behind `mcp-frame serve`, so a scenario that passes natively and
// fails through serve is serve's fault. Written from the scenarios' own "Server Implementation Requirements".
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import {
  acceptedContent,
  completable,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  hostHeaderValidationResponse,
  inputRequired,
  inputResponse,
  localhostAllowedHostnames,
  McpServer,
  ResourceTemplate,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { registerTasks, TASKS, TaskBoard } from './conformance-tasks.js';
import { writeResponse } from './sdk2.js';

/** A 1x1 PNG and a minimal WAV, small enough to inline. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';
const EMPTY = z.object({});

/** Where the list-changed triggers publish: the HTTP handler's bus, or the one stdio instance. */
export interface ChangeNotifier {
  toolsChanged(): void;
  promptsChanged(): void;
  resourceUpdated(uri: string): void;
}

type Ctx = {
  mcpReq: {
    _meta?: { progressToken?: string | number };
    envelope?: Record<string, unknown>;
    inputResponses?: Record<string, unknown>;
    requestState<T = unknown>(): T | undefined;
    notify(n: unknown): Promise<void>;
    log(level: string, data: unknown): Promise<void>;
  };
};
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const capabilitiesOf = (ctx: Ctx) => (ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {}) as Record<string, unknown>;
const schema = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object' as const, properties, required });

/**
 * The fixture's McpServer. `codec` signs requestState and `board` holds the tasks; one of each per process, so
 * every round reaches its key and every tasks/get its task.
 */
export function conformanceServer(
  notifier: ChangeNotifier,
  codec = createRequestStateCodec({ key: randomBytes(32) }),
  board = new TaskBoard(),
): McpServer {
  const server = new McpServer(
    { name: 'mcp-frame-conformance-fixture', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
        extensions: { [TASKS]: {} },
      },
      requestState: { verify: codec.verify as never },
    },
  );
  const tool = (name: string, handler: (args: never, ctx: Ctx) => unknown, inputSchema: z.ZodObject = EMPTY) =>
    server.registerTool(name, { description: name.replaceAll('_', ' '), inputSchema }, handler as never);

  tool('test_simple_text', () => text('This is a simple text response for testing.'));
  tool('test_image_content', () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  tool('test_audio_content', () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', () => ({
    content: [
      { type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } },
    ],
  }));
  tool('test_multiple_content_types', () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
  const pause = () => new Promise((resolve) => setTimeout(resolve, 50));
  tool('test_tool_with_logging', async (_args, ctx) => {
    for (const [i, step] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i > 0) await pause();
      await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data: step } });
    }
    return text('Tool with logging executed successfully');
  });
  tool('test_logging_tool', async (_args, ctx) => {
    await ctx.mcpReq.log('info', 'test_logging_tool ran');
    return text('Logging tool finished.');
  });
  tool('test_tool_with_progress', async (_args, ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progressToken !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, total: 100 } });
      if (progress < 100) await pause();
    }
    return text(`Progress complete: ${String(progressToken)}`);
  });
  tool('test_error_handling', () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  // Asking for sampling from a client that did not declare it: the SDK answers -32021 itself.
  tool('test_missing_capability', (_args, ctx) => {
    if (capabilitiesOf(ctx).sampling === undefined) {
      return inputRequired({
        inputRequests: {
          needs_sampling: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Anything.' } }], maxTokens: 16 }),
        },
      });
    }
    return text('Sampling capability was declared.');
  });
  tool('test_trigger_tool_change', () => {
    notifier.toolsChanged();
    return text('Tool list change published.');
  });
  tool('test_trigger_prompt_change', () => {
    notifier.promptsChanged();
    return text('Prompt list change published.');
  });
  // Not a scenario's: tells the subscribers of test://watched-resource that it changed.
  tool('test_trigger_resource_update', () => {
    notifier.resourceUpdated('test://watched-resource');
    return text('Resource update published.');
  });

  // JSON Schema 2020-12 keywords, to be listed as written (SEP-1613, SEP-2106).
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: fromJsonSchema({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: {
          name: { type: 'string' },
          address: { $ref: '#/$defs/address' },
          contactMethod: { type: 'string', enum: ['phone', 'email'] },
          phone: { type: 'string' },
          email: { type: 'string' },
        },
        allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
        if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keywords, not a thenable
        then: { required: ['phone'] },
        else: { required: ['email'] },
        additionalProperties: false,
      } as never) as never,
    },
    (async (args: unknown) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`)) as never,
  );
  // A parameter mirrored into a header (SEP-2243): the server checks Mcp-Param-Region against the body.
  tool(
    'test_custom_header',
    ((args: { region: string; query?: string }) => text(`${args.query ?? ''} in ${args.region}`)) as never,
    z.object({
      region: z.string().meta({ 'x-mcp-header': 'Region' }),
      query: z.string().optional(),
    }),
  );

  // Server-to-client requests, written once as input_required results: the SDK runs them as real requests
  // for a 2025-era client (its legacy shim) and returns them as inputRequests to a 2026-07-28 one.
  const elicit = (key: string, message: string, requestedSchema: Record<string, unknown>, done: (content: Record<string, unknown>) => string) =>
    ((_args: never, ctx: Ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses as never, key) as { kind: string; action?: string; content?: Record<string, unknown> };
      if (answer.kind !== 'elicit') return inputRequired({ inputRequests: { [key]: inputRequired.elicit({ message, requestedSchema } as never) } });
      return text(`${done(answer.content ?? {})} (action=${answer.action})`);
    }) as never;
  tool(
    'test_sampling',
    ((args: { prompt: string }, ctx: Ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses as never, 'completion') as { kind: string; result?: { content?: { text?: string } } };
      if (answer.kind !== 'sampling') {
        return inputRequired({
          inputRequests: {
            completion: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }], maxTokens: 100 }),
          },
        });
      }
      return text(`LLM response: ${answer.result?.content?.text ?? 'No response'}`);
    }) as never,
    z.object({ prompt: z.string() }),
  );
  server.registerTool('test_elicitation', { description: 'test elicitation', inputSchema: z.object({ message: z.string() }) }, ((
    args: { message: string },
    ctx: Ctx,
  ) =>
    (
      elicit(
        'response',
        args.message,
        schema({ response: { type: 'string', description: "User's response" } }, ['response']),
        (c) => `User response: ${JSON.stringify(c)}`,
      ) as (a: unknown, c: Ctx) => unknown
    )(args, ctx)) as never);
  tool(
    'test_elicitation_sep1034_defaults',
    elicit(
      'form',
      'Please review and update the form fields with defaults',
      schema(
        {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
        [],
      ),
      (c) => `Elicitation completed: ${JSON.stringify(c)}`,
    ),
  );
  tool(
    'test_elicitation_sep1330_enums',
    elicit(
      'choices',
      'Please select options from the enum fields',
      schema(
        {
          untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
          titledSingle: {
            type: 'string',
            description: 'Select one option with titles',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' },
            ],
          },
          legacyEnum: {
            type: 'string',
            description: 'Select one option (legacy)',
            enum: ['opt1', 'opt2', 'opt3'],
            enumNames: ['Option One', 'Option Two', 'Option Three'],
          },
          untitledMulti: {
            type: 'array',
            description: 'Select multiple options',
            minItems: 1,
            maxItems: 3,
            items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          },
          titledMulti: {
            type: 'array',
            description: 'Select multiple options with titles',
            minItems: 1,
            maxItems: 3,
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' },
              ],
            },
          },
        },
        [],
      ),
      (c) => `Elicitation completed: ${JSON.stringify(c)}`,
    ),
  );

  // The multi round-trip scenarios (SEP-2322), each as its scenario describes it.
  const askName = (message = 'What is your name?') =>
    inputRequired.elicit({ message, requestedSchema: schema({ name: { type: 'string' } }, ['name']) } as never);
  const named = z.object({ name: z.string() });
  tool('test_input_required_result_elicitation', (_args, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses as never, 'user_name', named);
    if (!answer) return inputRequired({ inputRequests: { user_name: askName() } });
    return text(`Hello, ${answer.name}!`);
  });
  tool('test_input_required_result_sampling', (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses as never, 'capital_question') as {
      kind: string;
      result?: { content?: { text?: string } };
    };
    if (answer.kind !== 'sampling') {
      return inputRequired({
        inputRequests: {
          capital_question: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
            maxTokens: 100,
          }),
        },
      });
    }
    return text(`The model said: ${answer.result?.content?.text ?? ''}`);
  });
  tool('test_input_required_result_list_roots', (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses as never, 'client_roots') as { kind: string; roots?: Array<{ uri: string }> };
    if (answer.kind !== 'roots') return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Roots: ${(answer.roots ?? []).map((r) => r.uri).join(', ')}`);
  });
  tool('test_input_required_result_request_state', async (_args, ctx) => {
    const state = ctx.mcpReq.requestState<{ kind?: string }>();
    const answer = acceptedContent(ctx.mcpReq.inputResponses as never, 'confirm', z.object({ ok: z.boolean() }));
    if (state?.kind !== 'request-state' || !answer) {
      return inputRequired({
        requestState: await codec.mint({ kind: 'request-state' }),
        inputRequests: {
          confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: schema({ ok: { type: 'boolean' } }, ['ok']) } as never),
        },
      });
    }
    return text(`state-ok: confirmed=${answer.ok}`);
  });
  tool('test_input_required_result_tampered_state', async (_args, ctx) => {
    const state = ctx.mcpReq.requestState<{ kind?: string }>();
    const answer = acceptedContent(ctx.mcpReq.inputResponses as never, 'user_name', named);
    if (state?.kind !== 'tampered-state' || !answer) {
      return inputRequired({ requestState: await codec.mint({ kind: 'tampered-state' }), inputRequests: { user_name: askName() } });
    }
    return text(`Hello, ${answer.name}!`);
  });
  tool('test_input_required_result_multiple_inputs', async (_args, ctx) => {
    const responses = ctx.mcpReq.inputResponses as never;
    const name = acceptedContent(responses, 'user_name', named);
    const greeting = inputResponse(responses, 'greeting') as { kind: string };
    const roots = inputResponse(responses, 'client_roots') as { kind: string; roots?: unknown[] };
    if (ctx.mcpReq.requestState() === undefined || !name || greeting.kind !== 'sampling' || roots.kind !== 'roots') {
      return inputRequired({
        requestState: await codec.mint({ kind: 'multiple-inputs' }),
        inputRequests: {
          user_name: askName(),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
      });
    }
    return text(`Collected ${name.name}, a greeting and ${roots.roots?.length ?? 0} roots.`);
  });
  tool('test_input_required_result_multi_round', async (_args, ctx) => {
    const state = ctx.mcpReq.requestState<{ round?: number; name?: string }>();
    const name = acceptedContent(ctx.mcpReq.inputResponses as never, 'step1', named);
    const color = acceptedContent(ctx.mcpReq.inputResponses as never, 'step2', z.object({ color: z.string() }));
    if (state?.round === 2 && color) return text(`${state.name ?? '?'} likes ${color.color}.`);
    if (state?.round === 1 && name) {
      return inputRequired({
        requestState: await codec.mint({ round: 2, name: name.name }),
        inputRequests: {
          step2: inputRequired.elicit({
            message: 'Step 2: What is your favorite color?',
            requestedSchema: schema({ color: { type: 'string' } }, ['color']),
          } as never),
        },
      });
    }
    return inputRequired({ requestState: await codec.mint({ round: 1 }), inputRequests: { step1: askName('Step 1: What is your name?') } });
  });
  tool('test_input_required_result_capabilities', (_args, ctx) => {
    const declared = capabilitiesOf(ctx);
    const requests: Record<string, unknown> = {};
    if (declared.sampling !== undefined) {
      requests.greeting = inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }], maxTokens: 20 });
    }
    if (declared.elicitation !== undefined) requests.user_name = askName();
    if (Object.keys(requests).length === 0 || Object.keys(ctx.mcpReq.inputResponses ?? {}).length > 0)
      return text('Done with the inputs the client can give.');
    return inputRequired({ inputRequests: requests as never });
  });
  tool('test_streaming_elicitation', (_args, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses as never, 'stream_input', z.object({ value: z.string() }));
    if (!answer) {
      return inputRequired({
        inputRequests: {
          stream_input: inputRequired.elicit({
            message: 'Provide a value.',
            requestedSchema: schema({ value: { type: 'string' } }, ['value']),
          } as never),
        },
      });
    }
    return text(`Received: ${answer.value}`);
  });

  // Resources.
  server.registerResource('static-text', 'test://static-text', { title: 'Static Text Resource', mimeType: 'text/plain' }, async () => ({
    contents: [{ uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  server.registerResource('static-binary', 'test://static-binary', { title: 'Static Binary Resource', mimeType: 'image/png' }, async () => ({
    contents: [{ uri: 'test://static-binary', mimeType: 'image/png', blob: PNG }],
  }));
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { title: 'Resource Template', mimeType: 'application/json' },
    async (uri, variables) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: 'application/json',
          text: JSON.stringify({ id: variables.id, templateTest: true, data: `Data for ID: ${variables.id}` }),
        },
      ],
    }),
  );
  server.registerResource('watched-resource', 'test://watched-resource', { title: 'Watched Resource', mimeType: 'text/plain' }, async () => ({
    contents: [{ uri: 'test://watched-resource', mimeType: 'text/plain', text: 'Watched resource content' }],
  }));

  // Prompts.
  server.registerPrompt('test_simple_prompt', { title: 'Simple Test Prompt', description: 'A simple prompt without arguments' }, async () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      title: 'Prompt With Arguments',
      description: 'A prompt with required arguments',
      argsSchema: z.object({
        arg1: completable(z.string(), (value) => ['paris', 'park', 'party'].filter((v) => v.startsWith(value))),
        arg2: z.string(),
      }),
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      title: 'Prompt With Embedded Resource',
      description: 'A prompt that includes an embedded resource',
      argsSchema: z.object({ resourceUri: z.string() }),
    },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  server.registerPrompt('test_prompt_with_image', { title: 'Prompt With Image', description: 'A prompt that includes image content' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
  server.registerPrompt(
    'test_input_required_result_prompt',
    { title: 'Prompt that asks first', description: 'A prompt that asks the user for context before it is built' },
    (async (ctx: Ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses as never, 'user_context', z.object({ context: z.string() }));
      if (!answer) {
        return inputRequired({
          inputRequests: {
            user_context: inputRequired.elicit({
              message: 'What context should the prompt use?',
              requestedSchema: schema({ context: { type: 'string' } }, ['context']),
            } as never),
          },
        });
      }
      return { messages: [{ role: 'user', content: { type: 'text', text: `Use the following context: ${answer.context}` } }] };
    }) as never,
  );

  // The 2025-11-25 methods the suite still calls in that era.
  const legacy = server.server as unknown as {
    setRequestHandler(method: string, handler: (request: { params: Record<string, unknown> }) => unknown): void;
  };
  legacy.setRequestHandler('resources/subscribe', () => ({}));
  legacy.setRequestHandler('resources/unsubscribe', () => ({}));
  legacy.setRequestHandler('logging/setLevel', () => ({}));
  registerTasks(server, board);
  return server;
}

export interface ConformanceHttp {
  url: string;
  close(): Promise<void>;
}

/** The fixture natively on the SDK's HTTP handler, on 127.0.0.1 and a free port; 2025-era requests served statelessly. */
export async function conformanceHttp(): Promise<ConformanceHttp> {
  const codec = createRequestStateCodec({ key: randomBytes(32) });
  const board = new TaskBoard();
  const notifier: ChangeNotifier = {
    toolsChanged: () => handler.notify.toolsChanged(),
    promptsChanged: () => handler.notify.promptsChanged(),
    resourceUpdated: (uri) => handler.notify.resourceUpdated(uri),
  };
  const handler = createMcpHandler(() => conformanceServer(notifier, codec, board), { legacy: 'stateless' });
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(key, value);
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method: req.method ?? 'GET',
      headers,
      signal: abort.signal,
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }),
    });
    // A localhost server refuses a Host that is not localhost (DNS rebinding), as the SDK's own examples do.
    const response = hostHeaderValidationResponse(request, localhostAllowedHostnames()) ?? (await handler.fetch(request));
    await writeResponse(res, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await handler.close();
    },
  };
}
