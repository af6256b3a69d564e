export type {
  ApplyResult,
  JobError,
  JobMessageRef,
  JobRecord,
  JobState,
  JobStore,
  JobUpdate,
  KeyValueStore,
  KvClaim,
} from './types.js';
export { TERMINAL_STATES } from './types.js';
export { StoreUnavailableError, isStoreUnavailableError } from './errors.js';
export { mergeJob, isTerminalState, stateRank, normalizePercentage } from './merge.js';
export { createStores, type StoreOptions, type Stores } from './keyv-store.js';
export { jobRecordSchemaOf, type JobOperations } from './schema.js';
