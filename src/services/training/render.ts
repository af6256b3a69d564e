import {
  ButtonStyle,
  ComponentType,
  type APIActionRowComponent,
  type APIButtonComponent,
} from 'discord-api-types/v10';
import { trainingCustomId } from '../discord/interactions/custom-ids.js';
import { discordTimestamp as ts } from '../shared/format.js';
import {
  DEFAULT_LOCALE,
  formatBytes,
  isMessageKey,
  keySegment,
  translator,
  type MessageKey,
  type Translator,
} from '../../i18n/index.js';
import { MAX_PHOTOS, MIN_PHOTOS, quote, statusOf, type AddResult, type TrainingSession } from './sessions.js';

/**
 * Texts and components of the training-photo session (pure; raw API JSON so
 * the same payload serves discord.js replies and REST edits).
 *
 * Ethnicity, gender and age are the member's to see only: they appear in the
 * ephemeral replies (status, consent prompt), never in the public session
 * message.
 */

export interface SessionPayload {
  content: string;
  components: APIActionRowComponent<APIButtonComponent>[];
}

const MAX_CONTENT = 2000;

// ------------------------------------------------------------ texts

/** Below this age no photo is sent (the consent text says the person is 18 or older). */
export const MIN_ADULT_AGE = 18;

/** The texts below are English unless given the member's translator (ephemeral replies are). */
const ENGLISH = translator(DEFAULT_LOCALE);

/** A choice name's key (choice names take no values). */
type ChoiceKey = Extract<MessageKey, `commands.${string}.choices.${string}`>;
const isChoiceKey = (key: string): key is ChoiceKey => isMessageKey(key);

/** `Latino · Female · age 28` in the member's words (the choice names the command registers): ephemeral texts only. */
export function subjectLine(
  s: Pick<TrainingSession, 'ethnicity' | 'gender' | 'age'>,
  tr: Translator = ENGLISH,
): string {
  const choice = (option: 'ethnicity' | 'gender', value: string): string => {
    const key = `commands.training-photos.start.options.${option}.choices.${keySegment(value)}`;
    return isChoiceKey(key) ? tr.t(key) : value;
  };
  const ethnicity = choice('ethnicity', s.ethnicity);
  const gender = choice('gender', s.gender);
  return s.age !== undefined
    ? tr.t('training.subject_age', { ethnicity, gender, age: s.age })
    : tr.t('training.subject', { ethnicity, gender });
}

/** `12 / 30 photos — ready to submit` / `3 / 30 photos — 7 more needed (minimum 10)`. */
export function countLine(s: TrainingSession, tr: Translator = ENGLISH): string {
  const st = statusOf(s);
  if (!st.ready)
    return tr.t('training.count.not_ready', {
      count: st.count,
      max: MAX_PHOTOS,
      missing: st.missing,
      min: MIN_PHOTOS,
    });
  return tr.t(st.room === 0 ? 'training.count.full' : 'training.count.ready', {
    count: st.count,
    max: MAX_PHOTOS,
  });
}

function expiryLine(s: TrainingSession, tr: Translator = ENGLISH): string {
  return tr.t('training.expiry', { relative: ts(s.expiresAt, 'R'), full: ts(s.expiresAt, 'f') });
}

function sessionButtons(s: TrainingSession, tr: Translator): APIActionRowComponent<APIButtonComponent> {
  const st = statusOf(s);
  return {
    type: ComponentType.ActionRow,
    components: [
      {
        type: ComponentType.Button,
        style: ButtonStyle.Primary,
        label: tr.t('buttons.add_photos'),
        custom_id: trainingCustomId('add', s.userId),
        disabled: st.room === 0,
      },
      {
        type: ComponentType.Button,
        style: ButtonStyle.Success,
        label: tr.t('buttons.submit'),
        custom_id: trainingCustomId('submit', s.userId),
      },
    ],
  };
}

/**
 * The public message of an open session, in the server's language (`tr`:
 * publicTranslator(guildLocale)). `checking`: photos being validated right now.
 */
export function renderSessionMessage(
  s: TrainingSession,
  opts: { checking?: number } = {},
  tr: Translator = ENGLISH,
): SessionPayload {
  const st = statusOf(s);
  const lines = [
    `📸 ${tr.t('training.session.header_public', { user: `<@${s.userId}>` })}`,
    `**${countLine(s, tr)}**`,
  ];
  if (opts.checking) lines.push(`⏳ ${tr.t('training.session.checking', { count: opts.checking })}`);
  lines.push(
    st.room > 0 ? tr.t('training.session.add_more', { room: st.room }) : tr.t('training.session.send'),
    expiryLine(s, tr),
  );
  return { content: lines.join('\n'), components: [sessionButtons(s, tr)] };
}

/** The public message of a closed session, in the server's language. */
export function renderClosedSessionMessage(
  s: TrainingSession,
  how: 'cancelled' | 'submitted',
  tr: Translator = ENGLISH,
): SessionPayload {
  const values = { user: `<@${s.userId}>`, count: s.photos.length };
  const text = tr.t(how === 'cancelled' ? 'training.closed.cancelled' : 'training.closed.submitted', values);
  return { content: `📸 ${text}`, components: [] };
}

function clip(lines: string[], tr: Translator, max = MAX_CONTENT): string {
  let out = '';
  for (const [i, line] of lines.entries()) {
    const next = out === '' ? line : `${out}\n${line}`;
    if (next.length > max - 40) return `${out}\n${tr.t('training.more_lines', { count: lines.length - i })}`;
    out = next;
  }
  return out;
}

/** Ephemeral `/training-photos status`, in the member's language. */
export function renderStatus(s: TrainingSession, tr: Translator = ENGLISH): string {
  const lines = [`**${countLine(s, tr)}** (${subjectLine(s, tr)})`, expiryLine(s, tr)];
  if (s.submission && !s.submission.accepted) lines.push(`⏳ ${tr.t('training.status.submitting')}`);
  else if (s.submission) lines.push(`📤 ${tr.t('training.status.submitted')}`);
  else if (s.failedJobId) lines.push(tr.t('training.status.last_failed'));
  for (const [i, p] of s.photos.entries())
    lines.push(`${i + 1}. ${quote(p.name)} — ${formatBytes(tr, p.size)}`);
  return clip(lines, tr);
}

/** Ephemeral summary of an add, in the member's language: what was added, every refusal with its reason. */
export function renderAddResult(r: AddResult, tr: Translator = ENGLISH): string {
  const lines: string[] = [];
  const n = r.added.length;
  const status = countLine(r.session, tr);
  lines.push(
    n > 0 ? tr.t('training.add.added', { count: n, status }) : tr.t('training.add.none', { status }),
  );
  if (r.refused.length > 0) {
    lines.push(tr.t('training.add.refused', { count: r.refused.length }));
    for (const f of r.refused) lines.push(`• ${quote(f.name)}: ${f.reason(tr)}`);
  }
  return clip(lines, tr);
}
