/*
 * Which hosts only this machine can reach: the rule serve's guard and the sign-in's transport checks share.
 */

/** True for an address or name only this machine can reach (127.0.0.0/8, ::1, localhost), as a URL's hostname has it. */
export function isLoopback(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}
