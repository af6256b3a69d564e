import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_SPEC_PATH, OpenApiSpec, startFakeDiscord } from './fake-discord/index.js';

const MESSAGES = '/channels/{channel_id}/messages';

describe('fake Discord: the OpenAPI document, loaded once per process', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('every fake shares one parsed spec and the validators it compiled', async () => {
    const first = await startFakeDiscord({ warmUpValidators: true });
    const second = await startFakeDiscord();
    try {
      expect(second.spec).toBe(first.spec);
      expect(OpenApiSpec.load()).toBe(first.spec);
      expect(OpenApiSpec.load(DEFAULT_SPEC_PATH)).toBe(first.spec);
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('another document gets a spec of its own', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fake-spec-'));
    dirs.push(dir);
    const copy = join(dir, 'discord-openapi.json');
    await copyFile(DEFAULT_SPEC_PATH, copy);
    expect(OpenApiSpec.load(copy)).not.toBe(OpenApiSpec.load());
    expect(OpenApiSpec.load(copy)).toBe(OpenApiSpec.load(copy));
  });

  it('validators built from shared referenced schemas still find errors deep in a body, call after call', () => {
    const spec = OpenApiSpec.load();
    const good = { content: 'hi', embeds: [{ title: 't' }] };
    const bad = { content: 'hi', embeds: [{ title: 'x'.repeat(257) }] };
    for (let round = 0; round < 2; round++) {
      expect(spec.validateRequestBody(MESSAGES, 'POST', good)).toEqual({ ok: true, quirks: [] });
      const result = spec.validateRequestBody(MESSAGES, 'POST', bad);
      expect(result.ok).toBe(false);
      if (result.ok !== false) return;
      expect(result.errors.map((e) => e.path)).toContain('/embeds/0/title');
      // PATCH shares the embed schema with POST: compiled once, checked the same.
      const patched = spec.validateRequestBody(`${MESSAGES}/{message_id}`, 'PATCH', bad);
      expect(patched.ok).toBe(false);
    }
  });
});
