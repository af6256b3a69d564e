/**
 * The consent step of a training-photo submission: nothing is sent until the
 * session's owner confirms, on an ephemeral prompt, that the photos show them
 * or a person who agreed, and that this person is 18 or older. The wording is
 * versioned: a consent record (src/services/training/consent-store.ts) names
 * the version it was given under, and every version's text stays here.
 *
 * A prompt is kept in the store for the life of the interaction that showed
 * it (so any instance can take the click), with the fingerprint of the photos
 * it was shown for: a confirmation is for those photos only.
 */
import { randomBytes } from 'node:crypto';
import {
  ButtonStyle,
  ComponentType,
  type APIActionRowComponent,
  type APIButtonComponent,
} from 'discord-api-types/v10';
import { z } from 'zod';
import type { KeyValueStore } from '../store/types.js';
import { MIN_ADULT_AGE, subjectLine } from './render.js';
import type { TrainingSession } from './sessions.js';
import type { MessageKey, Translator } from '../../i18n/index.js';

/** The wording in use; a new text gets a new version and the old one stays in CONSENT_WORDINGS. */
export const CONSENT_WORDING = 'consent-v1';

/** Every wording ever shown, by version: what a record's `wording` refers to. */
export const CONSENT_WORDINGS: Readonly<Record<string, readonly string[]>> = {
  'consent-v1': [
    'These photos show me, or a person who agreed to their photos being used for AI training.',
    'The person in these photos is 18 or older.',
  ],
};

/**
 * Each wording's statements as the member reads them, in their language: the
 * English catalog text is the wording's own (test/i18n.test.ts checks
 * they match), so the record's version names what was shown in any language.
 */
type ConsentKey = Extract<MessageKey, `training.consent.v${string}`>;
export const CONSENT_WORDING_TEXTS: Readonly<Record<string, readonly ConsentKey[]>> = {
  'consent-v1': ['training.consent.v1.own', 'training.consent.v1.adult'],
};

/** How long a prompt can be answered: the interaction token's life, a little less. */
export const PROMPT_TTL_MS = 14 * 60_000;

const promptSchema = z.object({
  v: z.literal(1),
  id: z.string(),
  ownerId: z.string(),
  sessionKey: z.string(),
  /** photoDigest() of the session when shown. */
  photoDigest: z.string(),
  photoCount: z.number().int(),
  /** A failed upload job this submission retries (its new job links it). */
  parentJobId: z.string().optional(),
  wording: z.string(),
  /** The language the prompt was shown in (recorded with the consent). */
  language: z.string().optional(),
  createdAt: z.number(),
  /** Set once a click claimed the submission with it. */
  usedAt: z.number().optional(),
  /**
   * The interaction that showed the prompt: an ephemeral message only its token can
   * edit, so the prompt can be closed once the photos were sent.
   */
  shownBy: z
    .object({ applicationId: z.string(), token: z.string(), createdAt: z.number(), channelId: z.string() })
    .optional(),
  /** How the submission it confirmed ended: a late click on the prompt answers that. */
  outcome: z.enum(['sent', 'failed']).optional(),
});
export type ConsentPrompt = z.output<typeof promptSchema>;

export interface ConsentPromptsOptions {
  kv: KeyValueStore;
  now?: () => number;
}

const promptKey = (id: string): string => `consent-prompt:${id}`;

/** Pending consent prompts, in the store shared by every instance. */
export class ConsentPrompts {
  private readonly kv: KeyValueStore;
  private readonly now: () => number;

  constructor(opts: ConsentPromptsOptions) {
    this.kv = opts.kv;
    this.now = opts.now ?? Date.now;
  }

  async open(input: Omit<ConsentPrompt, 'v' | 'id' | 'createdAt' | 'wording'>): Promise<ConsentPrompt> {
    const prompt: ConsentPrompt = {
      v: 1,
      id: randomBytes(9).toString('base64url'),
      wording: CONSENT_WORDING,
      createdAt: this.now(),
      ...input,
    };
    await this.kv.set(promptKey(prompt.id), prompt, PROMPT_TTL_MS);
    return prompt;
  }

  async get(id: string): Promise<ConsentPrompt | undefined> {
    const parsed = promptSchema.safeParse(await this.kv.get<unknown>(promptKey(id)));
    if (!parsed.success || parsed.data.createdAt + PROMPT_TTL_MS <= this.now()) return undefined;
    return parsed.data;
  }

  /** Marks the prompt used (its confirmation was spent on a submission). */
  async markUsed(prompt: ConsentPrompt): Promise<void> {
    await this.save({ ...prompt, usedAt: this.now() });
  }

  /** The submission it confirmed was sent (accepted) or failed: the prompt stays used. */
  async settle(prompt: ConsentPrompt, outcome: NonNullable<ConsentPrompt['outcome']>): Promise<void> {
    await this.save({ ...prompt, usedAt: prompt.usedAt ?? this.now(), outcome });
  }

  /** Nothing was sent (a refusal before the service call): the prompt can confirm again. */
  async release(prompt: ConsentPrompt): Promise<void> {
    const { usedAt: _usedAt, ...rest } = prompt;
    await this.save(rest);
  }

  private async save(prompt: ConsentPrompt): Promise<void> {
    const ttl = prompt.createdAt + PROMPT_TTL_MS - this.now();
    if (ttl > 0) await this.kv.set(promptKey(prompt.id), prompt, ttl);
  }

  async close(id: string): Promise<void> {
    await this.kv.delete(promptKey(id));
  }
}

// ------------------------------------------------------------ custom ids

/**
 * `training:confirm:{ownerId}:{promptId}` / `training:decline:…`: in the
 * `training:` namespace (routed to the training-photo handlers) beside
 * `training:add|submit|modal` (src/services/discord/interactions/custom-ids.ts); the owner
 * is in the id so anyone else's click is refused before anything is read.
 */
export type ConsentAction = 'confirm' | 'decline';

export const consentCustomId = (action: ConsentAction, ownerId: string, promptId: string): string =>
  `training:${action}:${ownerId}:${promptId}`;

export function parseConsentCustomId(
  customId: string,
): { action: ConsentAction; ownerId: string; promptId: string } | undefined {
  const m = /^training:(confirm|decline):(\d{1,20}):([\w-]{1,24})$/.exec(customId);
  if (!m?.[1] || !m[2] || !m[3]) return undefined;
  return { action: m[1] as ConsentAction, ownerId: m[2], promptId: m[3] };
}

// ------------------------------------------------------------ rendering

export interface ConsentPayload {
  content: string;
  components: APIActionRowComponent<APIButtonComponent>[];
}

/** Whether the age given for the subject rules a submission out. */
export function underage(s: Pick<TrainingSession, 'age'>): boolean {
  return s.age !== undefined && s.age < MIN_ADULT_AGE;
}

/** The ephemeral consent prompt (only the session's owner sees it). */
export function renderConsentPrompt(
  s: TrainingSession,
  prompt: ConsentPrompt,
  consentRetentionDays: number,
  tr: Translator,
): ConsentPayload {
  const keys = CONSENT_WORDING_TEXTS[prompt.wording];
  // A wording without translations is shown as recorded (English).
  const statements = keys ? keys.map((k) => tr.t(k)) : (CONSENT_WORDINGS[prompt.wording] ?? []);
  const content = [
    tr.t('training.consent.heading', { count: s.photos.length }),
    ...statements.map((t) => `• ${t}`),
    '',
    tr.t('training.consent.subject', { subject: subjectLine(s, tr) }),
    tr.t('training.consent.cleaning'),
    tr.t('training.consent.record', { days: consentRetentionDays }),
  ].join('\n');
  return {
    content,
    components: [
      {
        type: ComponentType.ActionRow,
        components: [
          {
            type: ComponentType.Button,
            style: ButtonStyle.Success,
            label: tr.t('buttons.confirm_consent'),
            custom_id: consentCustomId('confirm', prompt.ownerId, prompt.id),
          },
          {
            type: ComponentType.Button,
            style: ButtonStyle.Secondary,
            label: tr.t('buttons.cancel'),
            custom_id: consentCustomId('decline', prompt.ownerId, prompt.id),
          },
        ],
      },
    ],
  };
}

/** The prompt once answered by a submission: no buttons, what became of the photos. */
export function renderConsentClosed(
  outcome: NonNullable<ConsentPrompt['outcome']>,
  photoCount: number,
  tr: Translator,
): ConsentPayload {
  return {
    content: tr.t(outcome === 'sent' ? 'training.consent.sent' : 'training.consent.failed', {
      count: photoCount,
    }),
    components: [],
  };
}
