import { describe, expect, it } from 'vitest';
import {
  decodeEditKey,
  encodeEditKey,
  jobMessageOf,
  type EditKey,
} from '../src/services/discord/edits/edit-key.js';

describe('edit keys: one encoding, parsed back to what was encoded', () => {
  const keys: EditKey[] = [
    { kind: 'job', jobId: 'a1b2-c3d4', target: 'message' },
    { kind: 'job', jobId: 'a1b2-c3d4', target: 'reply' },
    { kind: 'job', jobId: 'r-looks-like-a-code', target: 'notice' },
    { kind: 'session', messageId: '123456789012345678' },
  ];

  it('round-trips every kind, ids with dashes too, and no two kinds of one id share a string', () => {
    for (const key of keys) expect(decodeEditKey(encodeEditKey(key))).toEqual(key);
    const ofOneJob = keys.slice(0, 2).map(encodeEditKey);
    expect(new Set(ofOneJob).size).toBe(2);
  });

  it('keeps the BullMQ dedup ids edits were queued under before (m-, r-, n-)', () => {
    expect(encodeEditKey({ kind: 'job', jobId: 'j1', target: 'message' })).toBe('m-j1');
    expect(encodeEditKey({ kind: 'job', jobId: 'j1', target: 'reply' })).toBe('r-j1');
    expect(encodeEditKey({ kind: 'job', jobId: 'j1', target: 'notice' })).toBe('n-j1');
  });

  it('refuses strings it did not make; only a job’s live message names a job to mark', () => {
    for (const s of ['', 'm-', 'j1', 'x-j1', 'j1:reply', 'training-message:1'])
      expect(decodeEditKey(s)).toBeUndefined();
    expect(jobMessageOf('m-j1')).toBe('j1');
    expect(jobMessageOf('r-j1')).toBeUndefined();
    expect(jobMessageOf('s-1')).toBeUndefined();
  });
});
