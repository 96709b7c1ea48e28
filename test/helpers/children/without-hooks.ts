// Module resolution hooks that make the packages named in MCP_FRAME_TEST_HIDE (comma-separated) not found, as
// on a machine where they are not installed; registered by without.ts.
const hidden = new Set((process.env.MCP_FRAME_TEST_HIDE ?? '').split(',').filter(Boolean));

type Next = (specifier: string, context: unknown) => Promise<unknown>;

export async function resolve(specifier: string, context: unknown, next: Next): Promise<unknown> {
  const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
  if (hidden.has(name)) {
    throw Object.assign(new Error(`Cannot find package '${name}' imported from the test (hidden)`), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}
