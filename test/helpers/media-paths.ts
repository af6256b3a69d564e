import type { MediaClientOptions } from '../../src/services/media/client.js';
import { operationModules } from '../../src/services/operations/index.js';

/** The media client's endpoints at their defaults: fetch, fetch-many and each operation's own. */
export const DEFAULT_MEDIA_PATHS: MediaClientOptions['paths'] = {
  fetch: '/fetch',
  fetchMany: '/fetch-many',
  submit: Object.fromEntries(operationModules.map((m) => [m.operation, m.path.default])),
};
