/** The edit policy's rules on their own (pure: no clock, no I/O); the drivers' suite is test/edit-drivers.test.ts. */
import { DiscordAPIError } from '@discordjs/rest';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_EDIT_POLICY as P,
  classify,
  decide,
  dmNoticeAt,
  interactionReadyAt,
  routeFor,
  type MessageFacts,
  type OutcomeContext,
} from '../src/services/discord/edits/edit-policy.js';

const T = 1_800_000_000_000;
const MIN = 60_000;
const interaction = (ageMs: number) => ({ applicationId: '1', token: 'tok', createdAt: T - ageMs });
const facts = (extra: Partial<MessageFacts> & { tokenAgeMs?: number; messageId?: string }): MessageFacts => ({
  ref: {
    channelId: 'c',
    ...(extra.messageId !== undefined ? { messageId: extra.messageId } : {}),
    ...(extra.tokenAgeMs !== undefined ? { interaction: interaction(extra.tokenAgeMs) } : {}),
  },
  messageCreatedAt: extra.messageCreatedAt ?? T - (extra.tokenAgeMs ?? 0),
  ...(extra.tokenRefused !== undefined ? { tokenRefused: extra.tokenRefused } : {}),
  ...(extra.personal !== undefined ? { personal: extra.personal } : {}),
});
const apiError = (code: number, status: number) =>
  new DiscordAPIError({ code, message: `e${code}` }, code, status, 'PATCH', 'https://x/api', {});
const ctx = (extra: Partial<OutcomeContext> = {}): OutcomeContext => ({
  route: 'interaction',
  final: true,
  attempts: 1,
  failures: 1,
  withheld: false,
  bare: false,
  random: 0.5,
  ...extra,
});

describe('edit policy: routes', () => {
  it('fresh token → interaction; past ~14 min or refused → the channel with the bot token', () => {
    expect(routeFor(facts({ tokenAgeMs: 13 * MIN, messageId: 'm' }), T, false, P).route).toBe('interaction');
    expect(routeFor(facts({ tokenAgeMs: 14 * MIN, messageId: 'm' }), T, false, P).route).toBe('channel');
    expect(routeFor(facts({ tokenAgeMs: 1000, messageId: 'm', tokenRefused: true }), T, true, P).route).toBe(
      'channel',
    );
  });

  it('a refused token and no message id: nowhere to send', () => {
    expect(routeFor(facts({ tokenAgeMs: 1000, tokenRefused: true }), T, true, P).route).toBe('none');
  });

  it('a message over an hour old: finals only', () => {
    const old = facts({ messageId: 'm', messageCreatedAt: T - 61 * MIN });
    expect(routeFor(old, T, false, P).route).toBe('skip');
    expect(routeFor(old, T, true, P).route).toBe('channel');
  });

  it('a personal job never gets the bot token in its channel: past its token, progress skipped, the final by DM', () => {
    const personal = facts({ tokenAgeMs: 20 * MIN, messageId: 'm', personal: true });
    expect(routeFor(personal, T, false, P).route).toBe('skip');
    expect(routeFor(personal, T, true, P).route).toBe('dm');
    const refused = facts({ tokenAgeMs: 1000, messageId: 'm', personal: true, tokenRefused: true });
    expect(routeFor(refused, T, true, P).route).toBe('dm');
  });

  it('the DM notice is due once, at dmNoticeMs after the interaction, for a running personal job only', () => {
    const ref = { channelId: 'c', interaction: interaction(0) };
    expect(dmNoticeAt({ ref, personal: true, final: false }, P)).toBe(T + P.dmNoticeMs);
    expect(dmNoticeAt({ ref, personal: true, final: false, dmNoticeAt: T }, P)).toBeUndefined();
    expect(dmNoticeAt({ ref, personal: true, final: true }, P)).toBeUndefined();
    expect(dmNoticeAt({ ref, final: false }, P)).toBeUndefined();
    expect(dmNoticeAt({ ref, personal: true, final: false, tokenRefusedAt: T }, P)).toBeUndefined();
  });
});

describe('edit policy: spacing and finals first', () => {
  it('progress leaves finalReserve slots of the window and is spaced; a final takes any free slot', () => {
    const done = [T - 3000, T - 2000, T - 1000];
    // Three in the window: progress waits for the oldest to leave it; the final goes now.
    expect(interactionReadyAt(done, false, T, P)).toBe(T - 3000 + P.interactionWindowMs);
    expect(interactionReadyAt(done, true, T, P)).toBe(T);
    // Spaced from the last answer; nothing answered yet: now.
    expect(interactionReadyAt([T - 200], false, T, P)).toBe(T - 200 + P.progressIntervalMs);
    expect(interactionReadyAt([T - 200], true, T, P)).toBe(T);
    expect(interactionReadyAt([], false, T, P)).toBe(T);
  });
});

describe('edit policy: outcomes', () => {
  it('401 / 50027 on the interaction route: the token is refused (remembered by the driver)', () => {
    expect(decide(classify(apiError(50027, 401), 'interaction'), ctx(), P)).toEqual({ do: 'token_refused' });
    expect(decide(classify(apiError(0, 401), 'interaction'), ctx(), P)).toEqual({ do: 'token_refused' });
  });

  it('gone, 30046 and 5xx: a final is retried with backoff, a progress state dropped after its retries', () => {
    expect(decide(classify(apiError(10008, 404), 'channel'), ctx({ route: 'channel' }), P)).toMatchObject({
      do: 'gone',
    });
    const old = classify(apiError(30046, 400), 'channel');
    expect(decide(old, ctx({ route: 'channel', final: false }), P)).toMatchObject({ do: 'drop' });
    expect(decide(old, ctx({ route: 'channel' }), P)).toMatchObject({ do: 'retry', failure: true });
    const boom = classify(apiError(0, 500), 'interaction');
    expect(decide(boom, ctx({ final: false, attempts: P.finalRetryLimit + 1 }), P)).toMatchObject({
      do: 'drop',
    });
    expect(decide(boom, ctx({ attempts: 1000, failures: 1000 }), P)).toMatchObject({
      do: 'retry',
      delayMs: P.maxBackoffMs * 0.75,
    });
  });

  it('429: waits retry_after, blocking the channel (or every channel) on the channel route', () => {
    const body: Record<string, unknown> = { retry_after: 1.5, global: false };
    const limited = new DiscordAPIError(
      { code: 0, message: 'limited', ...body },
      0,
      429,
      'PATCH',
      'https://x/api',
      {},
    );
    expect(decide(classify(limited, 'channel'), ctx({ route: 'channel', channelId: 'c' }), P)).toEqual({
      do: 'retry',
      delayMs: 1500,
      failure: false,
      block: { channelId: 'c' },
    });
    expect(decide(classify(limited, 'interaction'), ctx(), P)).toEqual({
      do: 'retry',
      delayMs: 1500,
      failure: false,
    });
  });

  it('AutoMod: withhold the member’s text, then once more without any free text, then give up', () => {
    const refused = classify(apiError(200000, 400), 'interaction');
    expect(decide(refused, ctx(), P)).toEqual({ do: 'withhold' });
    expect(decide(refused, ctx({ withheld: true }), P)).toEqual({ do: 'bare' });
    expect(decide(refused, ctx({ withheld: true, bare: true }), P)).toMatchObject({
      do: 'drop',
      level: 'error',
    });
  });

  it('50007 on a DM: the member’s DMs are closed (recorded, no retry); elsewhere an invalid request', () => {
    expect(decide(classify(apiError(50007, 403), 'dm'), ctx({ route: 'dm' }), P)).toEqual({
      do: 'dm_refused',
    });
    expect(decide(classify(apiError(50007, 403), 'channel'), ctx({ route: 'channel' }), P)).toMatchObject({
      do: 'drop',
    });
  });
});
