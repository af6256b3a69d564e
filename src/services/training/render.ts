import { ButtonStyle, ComponentType, type APIActionRowComponent, type APIButtonComponent } from 'discord.js';
import { trainingCustomId } from '../discord/custom-ids.js';
import { discordTimestamp as ts, formatBytes } from '../shared/format.js';
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

/** `latino · female · age 28`: ephemeral texts only. */
export function subjectLine(s: Pick<TrainingSession, 'ethnicity' | 'gender' | 'age'>): string {
  return [s.ethnicity, s.gender, ...(s.age !== undefined ? [`age ${s.age}`] : [])].join(' · ');
}

/** `12 / 30 photos — ready to submit` / `3 / 30 photos — 7 more needed (minimum 10)`. */
export function countLine(s: TrainingSession): string {
  const st = statusOf(s);
  const head = `${st.count} / ${MAX_PHOTOS} photos`;
  if (!st.ready) return `${head} — ${st.missing} more needed (minimum ${MIN_PHOTOS})`;
  return st.room === 0 ? `${head} — full, ready to submit` : `${head} — ready to submit`;
}

function expiryLine(s: TrainingSession): string {
  return `Session expires ${ts(s.expiresAt, 'R')} (${ts(s.expiresAt, 'f')}); adding photos renews it.`;
}

function sessionButtons(s: TrainingSession): APIActionRowComponent<APIButtonComponent> {
  const st = statusOf(s);
  return {
    type: ComponentType.ActionRow,
    components: [
      {
        type: ComponentType.Button,
        style: ButtonStyle.Primary,
        label: 'Add photos',
        custom_id: trainingCustomId('add', s.userId),
        disabled: st.room === 0,
      },
      {
        type: ComponentType.Button,
        style: ButtonStyle.Success,
        label: 'Submit',
        custom_id: trainingCustomId('submit', s.userId),
      },
    ],
  };
}

/** The public message of an open session. `checking`: photos being validated right now. */
export function renderSessionMessage(s: TrainingSession, opts: { checking?: number } = {}): SessionPayload {
  const st = statusOf(s);
  const lines = [`📸 **Training photos** of <@${s.userId}>`, `**${countLine(s)}**`];
  if (opts.checking) lines.push(`⏳ Checking ${opts.checking} photo${opts.checking === 1 ? '' : 's'}…`);
  lines.push(
    st.room > 0
      ? `Add up to ${st.room} more with **Add photos** or \`/training-photos add\`; send them with **Submit** or \`/training-photos submit\`.`
      : 'Send them with **Submit** or `/training-photos submit`.',
    expiryLine(s),
  );
  return { content: lines.join('\n'), components: [sessionButtons(s)] };
}

export function renderClosedSessionMessage(
  s: TrainingSession,
  how: 'cancelled' | 'submitted',
): SessionPayload {
  const text =
    how === 'cancelled'
      ? `📸 Training-photo session of <@${s.userId}> cancelled (${s.photos.length} photos discarded).`
      : `📸 Training photos of <@${s.userId}> submitted (${s.photos.length} photos) — progress is shown on the job's own message.`;
  return { content: text, components: [] };
}

function clip(lines: string[], max = MAX_CONTENT): string {
  let out = '';
  for (const [i, line] of lines.entries()) {
    const next = out === '' ? line : `${out}\n${line}`;
    if (next.length > max - 20) return `${out}\n… and ${lines.length - i} more`;
    out = next;
  }
  return out;
}

/** Ephemeral `/training-photos status`. */
export function renderStatus(s: TrainingSession): string {
  const lines = [`**${countLine(s)}** (${subjectLine(s)})`, expiryLine(s)];
  if (s.submission && !s.submission.accepted) lines.push('⏳ These photos are being submitted right now.');
  else if (s.submission) lines.push('📤 Submitted: the session closes when the upload job finishes.');
  else if (s.failedJobId)
    lines.push(
      'The last upload of these photos failed: press **Retry** on its message, or `/training-photos submit`, to send them again.',
    );
  for (const [i, p] of s.photos.entries()) lines.push(`${i + 1}. ${quote(p.name)} — ${formatBytes(p.size)}`);
  return clip(lines);
}

/** Ephemeral summary of an add: what was added, every refusal with its reason. */
export function renderAddResult(r: AddResult): string {
  const lines: string[] = [];
  const n = r.added.length;
  lines.push(
    n > 0
      ? `Added ${n} photo${n === 1 ? '' : 's'}. Session: **${countLine(r.session)}**.`
      : `No photo was added. Session: **${countLine(r.session)}**.`,
  );
  if (r.refused.length > 0) {
    lines.push(`Refused ${r.refused.length}:`);
    for (const f of r.refused) lines.push(`• ${quote(f.name)}: ${f.reason}`);
  }
  return clip(lines);
}
