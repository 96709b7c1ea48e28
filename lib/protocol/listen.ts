/*
 * subscriptions/listen (2026-07-28): what a listen asks for, which notifications it gets, and what a legacy
 * server (which has only its own list-changed notifications and resources/subscribe) can give of it.
 */
import { isObject } from '../jsonrpc.js';

type Json = Record<string, unknown>;

/** What a listen() asks for: list changes by kind, and updates of resources by URI. */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
}

/** Whether a notification is one that `filter` asks for. */
export function wantedBy(filter: ListenFilter, msg: Record<string, unknown>): boolean {
  switch (msg.method) {
    case 'notifications/tools/list_changed':
      return filter.toolsListChanged === true;
    case 'notifications/prompts/list_changed':
      return filter.promptsListChanged === true;
    case 'notifications/resources/list_changed':
      return filter.resourcesListChanged === true;
    case 'notifications/resources/updated': {
      const uri = isObject(msg.params) ? msg.params.uri : undefined;
      return typeof uri === 'string' && (filter.resourceSubscriptions ?? []).includes(uri);
    }
    default:
      return false;
  }
}

/**
 * What a legacy server can give of a listen `filter`, by the capabilities its initialize result declared: the
 * list changes it says it notifies, and resource updates when it takes resources/subscribe.
 */
export function legacyAgreed(filter: ListenFilter, capabilities: unknown): ListenFilter {
  const declared = isObject(capabilities) ? capabilities : {};
  const has = (kind: string, flag: string): boolean => isObject(declared[kind]) && (declared[kind] as Json)[flag] === true;
  const agreed: ListenFilter = {};
  if (filter.toolsListChanged === true && has('tools', 'listChanged')) agreed.toolsListChanged = true;
  if (filter.promptsListChanged === true && has('prompts', 'listChanged')) agreed.promptsListChanged = true;
  if (filter.resourcesListChanged === true && has('resources', 'listChanged')) agreed.resourcesListChanged = true;
  const uris =
    has('resources', 'subscribe') && Array.isArray(filter.resourceSubscriptions)
      ? filter.resourceSubscriptions.filter((u) => typeof u === 'string')
      : [];
  if (uris.length > 0) agreed.resourceSubscriptions = [...new Set(uris)];
  return agreed;
}
