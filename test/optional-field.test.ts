/**
 * optionalField: an optional key of the stored records' schemas, typed as zod's exactOptional()
 * but passing an absent key without running the key's own schema (exactOptional runs it on the
 * absent value and discards the issue it files: ~280 bytes a field, a stored job has ~25 of them).
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { optionalField } from '../src/services/shared/optional-field.js';

describe('optionalField', () => {
  it('passes an absent key without running its schema, which exactOptional() does', () => {
    let runs = 0;
    const counted = () =>
      z.custom<string>((v) => {
        runs++;
        return typeof v === 'string';
      });
    z.object({ a: counted().exactOptional() }).parse({});
    expect(runs).toBe(1);
    runs = 0;
    expect(z.object({ a: optionalField(counted()) }).parse({})).toEqual({});
    expect(runs).toBe(0);
  });

  it('checks a present key as its schema says, and leaves an absent one absent', () => {
    const schema = z.object({ a: optionalField(z.number().int().min(0)), b: z.string() });
    expect(schema.parse({ a: 3, b: 'x' })).toEqual({ a: 3, b: 'x' });
    expect('a' in schema.parse({ b: 'x' })).toBe(false);
    expect(schema.safeParse({ a: -1, b: 'x' }).success).toBe(false);
    expect(schema.safeParse({ a: '3', b: 'x' }).success).toBe(false);
  });

  it('is typed as exactOptional (key?: T, without undefined)', () => {
    const schema = z.object({ a: optionalField(z.string()) });
    expectTypeOf(schema.parse({})).toEqualTypeOf<{ a?: string }>();
  });
});
