/*
 * The client the MCP conformance suite drives (`conformance client --command "node <this> " --scenario auth/...`):
 * connect() with `auth` as a user would set it for each scenario, a headless user agent that follows the
 * authorization server's redirect (its authorization endpoint approves at once), then tools/list and a tool
 * call. Exits 1 with the error on stderr when the connection fails, as the suite expects of a client.
 */
import { connect, crossAppAccess } from '../lib/client/index.js';
import type { AuthOptions } from '../lib/client/index.js';
import { headlessAuthorize } from './helpers/oauth-server.js';

const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

function authFor(scenario: string, context: Record<string, string>): AuthOptions {
  const base: AuthOptions = {
    authorize: headlessAuthorize,
    redirectUri: 'http://127.0.0.1:3000/callback',
    clientName: 'mcp-frame-conformance',
    clientMetadataUrl: CLIENT_METADATA_URL,
  };
  switch (scenario) {
    case 'auth/pre-registration':
      return { ...base, client: { clientId: context.client_id!, clientSecret: context.client_secret! } };
    case 'auth/client-credentials-basic':
      return {
        grant: 'client_credentials',
        client: { clientId: context.client_id!, clientSecret: context.client_secret!, authMethod: 'client_secret_basic' },
      };
    case 'auth/client-credentials-jwt':
      return {
        grant: 'client_credentials',
        client: {
          clientId: context.client_id!,
          privateKey: context.private_key_pem!,
          signingAlg: (context.signing_algorithm as 'ES256' | 'RS256' | undefined) ?? 'ES256',
          authMethod: 'private_key_jwt',
        },
      };
    case 'auth/cross-app-access-complete-flow':
    case 'auth/enterprise-managed-authorization':
      return {
        client: { clientId: context.client_id!, clientSecret: context.client_secret!, authMethod: 'client_secret_basic' },
        grant: crossAppAccess({ idpTokenEndpoint: context.idp_token_endpoint!, idToken: context.idp_id_token!, idpClientId: context.idp_client_id! }),
      };
    case 'auth/wif-jwt-bearer':
      // Workload identity federation (SEP-1933): the platform's workload token is the jwt-bearer assertion.
      return {
        client: { clientId: context.client_id!, authMethod: 'none' },
        grant: { type: 'jwt-bearer', assertion: async () => context.valid_jwt! },
      };
    default:
      return base;
  }
}

async function main(): Promise<void> {
  const url = process.argv[2];
  if (url === undefined) throw new Error('usage: conformance-client <server-url>');
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, string> & { toolCalls?: unknown };
  const server = await connect({ type: 'http', url }, { auth: authFor(scenario, context), timeoutMs: 20_000 });
  // What a host's user would answer: accept a form with what it asks for (the MRTR scenarios' confirmation).
  server.onRequest('elicitation/create', () => ({ action: 'accept', content: { confirmed: true } }));
  try {
    const listed = (await server.request('tools/list')) as { tools?: Tool[] };
    const calls = Array.isArray(context.toolCalls)
      ? (context.toolCalls as unknown as Array<{ name: string; arguments: Record<string, unknown> }>)
      : scenario.startsWith('auth/')
        ? [listed.tools?.find((t) => t.name === 'test-tool') ?? listed.tools?.[0]]
            .filter((t) => t !== undefined)
            .map((t) => ({ name: t.name, arguments: {} }))
        : (listed.tools ?? []).map((t) => ({ name: t.name, arguments: argumentsFor(t, listed.tools ?? []) }));
    for (const call of calls) await server.request('tools/call', call);
  } finally {
    await server.close();
  }
}

interface Tool {
  name: string;
  inputSchema?: { properties?: Record<string, { type?: string }>; required?: string[] };
}

/**
 * Arguments a user would give a tool: a value of each required property's type. The schema-preservation
 * scenario's echo tool is given the inputSchema this client listed for the tool it names, as it was listed.
 */
function argumentsFor(tool: Tool, all: Tool[]): Record<string, unknown> {
  if (tool.name === 'json_schema_echo') return { schema: all.find((t) => t.name === 'json_schema_2020_12_tool')?.inputSchema ?? {} };
  const args: Record<string, unknown> = {};
  const properties = tool.inputSchema?.properties ?? {};
  for (const name of tool.inputSchema?.required ?? []) {
    const type = properties[name]?.type;
    args[name] = type === 'number' || type === 'integer' ? 2 : type === 'boolean' ? true : 'text';
  }
  return args;
}

main().catch((err: Error & { code?: string }) => {
  process.stderr.write(`${err.code ?? err.name}: ${err.message}\n`);
  process.exitCode = 1;
});
