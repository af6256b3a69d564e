import type { DeserializedData, Deserialize, Serialize } from 'keyv';

/**
 * The store's record format: what every stored value (a job record, an index key, a kv
 * value) is, as text, on Redis and in SQLite. It is the store's own and declared here
 * only: Keyv writes and reads it through `keyvSerialize`/`keyvDeserialize` below, and
 * what reads stored text without Keyv (Redis compare-and-set, the SQLite claim and
 * expiry sweep) reads it through `decodeRecord`, never through Keyv's internals.
 *
 *   {"value": <JSON>, "expires": <epoch ms>}
 *
 * `expires` absent (or null, never written): no expiry. Redis also expires the key itself (PX, the same
 * time); SQLite has no TTL, so a row past `expires` counts as absent and is swept by
 * `json_extract(value, '$.expires')`. The text is plain JSON (no compression, no
 * base64), the same as the previous versions wrote, so their records read unchanged.
 */

/** Returned for stored text that is not a record (kept apart from "absent"). */
export const CORRUPT: unique symbol = Symbol('store.corrupt');

export interface StoredRecord {
  value: unknown;
  /** Epoch ms; undefined: no expiry. */
  expires: number | undefined;
}

/** The record's text. `expires` undefined: no expiry. */
export function encodeRecord(value: unknown, expires: number | undefined): string {
  return JSON.stringify(expires === undefined ? { value } : { value, expires });
}

/** The record `text` holds, or CORRUPT when it is not one (not JSON, not an object). */
export function decodeRecord(text: string): StoredRecord | typeof CORRUPT {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return CORRUPT;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return CORRUPT;
  const { value, expires } = parsed as { value?: unknown; expires?: unknown };
  return { value, expires: typeof expires === 'number' ? expires : undefined };
}

/** Is the record past its expiry at `now`? (Exactly at `expires` it is still live, as Keyv has it.) */
export function isExpired(record: StoredRecord, now: number): boolean {
  return record.expires !== undefined && now > record.expires;
}

/**
 * The value a record holds at `now`: undefined when absent or expired, CORRUPT when
 * the text is not a record.
 */
export function liveValue(text: string | null | undefined, now: number): unknown {
  if (text === null || text === undefined) return undefined;
  const record = decodeRecord(text);
  if (record === CORRUPT) return CORRUPT;
  return isExpired(record, now) ? undefined : record.value;
}

/** Keyv hands `serialize` its `{value, expires}`: written in the store's format. */
export const keyvSerialize: Serialize = (data) =>
  encodeRecord(data.value, typeof data.expires === 'number' ? data.expires : undefined);

/**
 * Keyv's view of a stored record (it checks `expires` and drops expired ones); text that
 * is not a record reads as the value CORRUPT, so callers tell it from absent.
 */
export const keyvDeserialize: Deserialize = <Value>(text: string): DeserializedData<Value> | undefined => {
  const record = decodeRecord(text);
  if (record === CORRUPT) return { value: CORRUPT as unknown as Value };
  return {
    value: record.value as Value,
    ...(record.expires !== undefined ? { expires: record.expires } : {}),
  };
};
