export type {
  ApplyResult,
  JobError,
  JobRecord,
  JobState,
  JobStore,
  JobUpdate,
  KeyValueStore,
  KvClaim,
} from './types.js';
export { StoreUnavailableError, isStoreUnavailableError } from './errors.js';
export { mergeJob, isFinal, stateRank, normalizePercentage } from './merge.js';
export { createStores, type StoreOptions, type Stores } from './keyv-store.js';
export { jobRecordSchemaOf, type JobOperations } from './schema.js';
