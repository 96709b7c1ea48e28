// The words of the generated tools (a tracker's): `<verb>_<object>`, for many-tools.ts, its test and the bench.
export const VERBS = ['create', 'delete', 'list', 'get', 'update', 'search', 'archive', 'export', 'lock', 'assign'];
export const OBJECTS = [
  'issue',
  'pull_request',
  'repository',
  'branch',
  'comment',
  'user',
  'team',
  'label',
  'milestone',
  'release',
  'file',
  'commit',
  'webhook',
  'secret',
  'workflow',
  'deployment',
  'project',
  'discussion',
  'gist',
  'tag',
];

/** A tool's description: "<Verb> a <object> of the tracker." */
export const describe = (verb: string, object: string): string =>
  `${verb[0]!.toUpperCase()}${verb.slice(1)} a ${object.replace('_', ' ')} of the tracker.`;
