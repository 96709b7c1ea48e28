/*
 * Between eras, on a Connection: a legacy host (it sends `initialize`) in front of a modern-only server, for
 * `bridge` (a remote server) and `serve` (a stdio one). The translation itself is the floor's
 * (protocol/translate.ts); here the Connection that speaks modern to the server is opened for it.
 */
import { isObject } from '../jsonrpc.js';
import { pickModernVersion } from '../protocol/modern.js';
import { LegacyHostSession } from '../protocol/translate.js';
import type { Channel } from './channel.js';
import { type Connection, connectOver } from './connection.js';

type Json = Record<string, unknown>;

/**
 * After `refusal` (see modernOnlyRefusal) of the host's initialize: a Connection over `channel` that speaks the
 * modern revision the server named, with the host's clientInfo and capabilities, and the host's session over
 * it, whose answer to that initialize is sent through `toHost`. Rejects when the server cannot be reached the
 * modern way either (the Connection is then closed).
 */
export async function startLegacyHostSession(
  channel: Channel,
  init: { id: unknown; params: Json },
  refusal: Json,
  toHost: (msg: Json) => void,
): Promise<{ session: LegacyHostSession; connection: Connection; version: string | undefined }> {
  const data = isObject(refusal.error) && isObject(refusal.error.data) ? refusal.error.data : {};
  const version = pickModernVersion(data.supported);
  const hostCapabilities = isObject(init.params.capabilities) ? init.params.capabilities : {};
  const connection = await connectOver(channel, {
    ...(version === undefined ? {} : { protocolVersion: version }),
    capabilities: hostCapabilities,
    ...(isObject(init.params.clientInfo) ? { clientInfo: init.params.clientInfo as { name: string; version: string } } : {}),
  });
  const session = new LegacyHostSession(connection, toHost, hostCapabilities);
  // What the host is told it will hear (list changes) is listened for first: what the server does not agree to
  // send is not advertised.
  await session.listenAdvertised();
  toHost({ jsonrpc: '2.0', id: init.id, result: session.initializeResult(init.params.protocolVersion) });
  return { session, connection, version };
}
