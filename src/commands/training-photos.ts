import { FileUploadBuilder, LabelBuilder, ModalBuilder, SlashCommandBuilder } from '@discordjs/builders';
import { MessageFlags, type APIAttachment } from 'discord-api-types/v10';
import type { BotInteraction, MessageBody } from '../services/discord/interactions/interaction.js';
import { randomUUID } from 'node:crypto';
import { ETHNICITIES, GENDERS, type Ethnicity, type Gender } from '../services/media/types.js';
import { parseTrainingCustomId, trainingCustomId } from '../services/discord/interactions/custom-ids.js';
import { encodeEditKey } from '../services/discord/edits/edit-key.js';
import { discordTimestamp as ts } from '../services/shared/format.js';
import type { MessageRef } from '../services/shared/message-ref.js';
import { formatBytes, publicTranslator, translatorFor, type Translator } from '../i18n/index.js';
import { isPersonalPlace } from './preconditions.js';
import {
  MIN_ADULT_AGE,
  renderAddResult,
  renderClosedSessionMessage,
  renderSessionMessage,
  renderStatus,
  countLine,
  subjectLine,
  type SessionPayload,
} from '../services/training/render.js';
import {
  MAX_PHOTOS,
  MIN_PHOTOS,
  TrainingSessionError,
  photoDigest,
  sessionKey,
  statusOf,
  type AddResult,
  type PhotoInput,
  type SessionMessageRef,
  type TrainingSession,
} from '../services/training/sessions.js';
import {
  parseConsentCustomId,
  renderConsentClosed,
  renderConsentPrompt,
  underage,
  type ConsentPrompt,
} from '../services/training/consent.js';
import type { JobRecord } from '../services/store/types.js';
import { runJob } from './run-job.js';
import { operations } from '../services/operations/index.js';
import { UserError, type BotContext, type Command, type ComponentHandler } from './types.js';
import { where } from './where.js';

const PHOTO_OPTIONS = 10;
const AGE_MIN = 1;
const AGE_MAX = 120;
/** Modal file-upload fields (each takes up to 10 files). */
const MODAL_FIELDS = ['photos1', 'photos2', 'photos3'] as const;

const title = (v: string): string => v.replace(/\b\w/g, (c) => c.toUpperCase());

const data = new SlashCommandBuilder()
  .setName('training-photos')
  .setDescription(
    `Collect ${MIN_PHOTOS}-${MAX_PHOTOS} photos of one subject and prepare them for AI training`,
  )
  .addSubcommand((s) => {
    s.setName('start')
      .setDescription('Open a photo session in this channel (you can attach the first photos)')
      .addStringOption((o) =>
        o
          .setName('ethnicity')
          .setDescription('Ethnicity of the subject')
          .setRequired(true)
          .addChoices(...ETHNICITIES.map((v) => ({ name: title(v), value: v }))),
      )
      .addStringOption((o) =>
        o
          .setName('gender')
          .setDescription('Gender of the subject')
          .setRequired(true)
          .addChoices(...GENDERS.map((v) => ({ name: title(v), value: v }))),
      )
      .addIntegerOption((o) =>
        o.setName('age').setDescription('Age of the subject').setMinValue(AGE_MIN).setMaxValue(AGE_MAX),
      );
    for (let n = 1; n <= PHOTO_OPTIONS; n++) {
      s.addAttachmentOption((o) =>
        o.setName(`photo${n}`).setDescription(`Photo ${n} (PNG, JPEG, GIF or WebP)`),
      );
    }
    return s;
  })
  .addSubcommand((s) => {
    s.setName('add').setDescription('Add photos to your open session in this channel');
    for (let n = 1; n <= PHOTO_OPTIONS; n++) {
      s.addAttachmentOption((o) =>
        o
          .setName(`photo${n}`)
          .setDescription(`Photo ${n} (PNG, JPEG, GIF or WebP)`)
          .setRequired(n === 1),
      );
    }
    return s;
  })
  .addSubcommand((s) => s.setName('status').setDescription('Show how many photos your session holds'))
  .addSubcommand((s) =>
    s
      .setName('submit')
      .setDescription(`Send the photos (${MIN_PHOTOS} to ${MAX_PHOTOS}) for training preparation`),
  )
  .addSubcommand((s) => s.setName('cancel').setDescription('Discard your session and its photos'))
  .toJSON();

// ------------------------------------------------------------ helpers

function channelOf(i: { channelId: string | null }): string {
  if (!i.channelId) throw new UserError('no_channel', (tr) => tr.t('training.no_channel'));
  return i.channelId;
}

function toPhotoInput(a: APIAttachment): PhotoInput {
  return { id: a.id, name: a.filename, url: a.url, size: a.size, contentType: a.content_type ?? null };
}

function attachmentsOf(i: BotInteraction): PhotoInput[] {
  const out: PhotoInput[] = [];
  for (let n = 1; n <= PHOTO_OPTIONS; n++) {
    const a = i.options.getAttachment(`photo${n}`);
    if (a) out.push(toPhotoInput(a));
  }
  return out;
}

/** The session's own errors become ephemeral user errors. */
async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof TrainingSessionError) throw new UserError(`training_${err.code}`, err.text);
    throw err;
  }
}

function assertReady(session: TrainingSession): void {
  const st = statusOf(session);
  if (st.ready) return;
  throw new UserError('training_not_enough_photos', (tr) =>
    tr.t('training.not_enough_photos', { count: st.count, min: MIN_PHOTOS, missing: st.missing }),
  );
}

async function requireSession(ctx: BotContext, key: string): Promise<TrainingSession> {
  const s = await ctx.training.current(key);
  if (!s) {
    throw new UserError('training_no_session', (tr) => tr.t('training.no_session'));
  }
  return s;
}

function replyOptions(p: SessionPayload): MessageBody {
  return { content: p.content, components: p.components, allowed_mentions: { parse: [] } };
}

/**
 * Queues an edit of a session's public message on the bot's one edit path
 * (coalesced, rate-budgeted, through the interaction webhook that posted it
 * while its token is fresh, else the channel edit with the bot token, except in
 * a personal place, where the bot is not in the channel; see EditQueue). `final`: the message is closed (submitted, cancelled) and never
 * edited again. `original`: edit the interaction's `@original` (the message a
 * component sits on) rather than a message of its webhook by id. Returns false
 * when the routing rules cannot reach the message any more (the caller may post
 * a new one). A message found deleted is forgotten by the session.
 */
function editSessionMessage(
  ctx: BotContext,
  key: string,
  ref: SessionMessageRef | undefined,
  p: SessionPayload,
  opts: { final?: boolean; original?: boolean } = {},
): boolean {
  if (!ref) return false;
  const final = opts.final ?? false;
  const { messageId: id, ...atOriginal } = ref.interaction;
  const target: MessageRef = opts.original ? { ...ref, interaction: atOriginal } : ref;
  const createdAt = ref.interaction.createdAt;
  // Even a closing note is not worth one of the few edits Discord allows on messages older
  // than 1 h (30046): those are kept for job results.
  if (!ctx.edits.editable(target, createdAt, false)) return false;
  ctx.edits.push({
    // One key per message: a closed message is never edited again.
    jobId: encodeEditKey({ kind: 'session', messageId: id }),
    ref: target,
    messageCreatedAt: createdAt,
    payload: { content: p.content, embeds: [], components: p.components, allowed_mentions: { parse: [] } },
    final,
    onGone: () => {
      // Deleted or out of reach: the next add posts a fresh session message.
      ctx.training
        .get(key)
        .then((cur) =>
          cur?.message?.interaction.messageId === id ? ctx.training.setMessage(key, undefined) : undefined,
        )
        .catch((err: unknown) => ctx.logger.warn({ err, key }, 'could not forget the session message'));
    },
  });
  return true;
}

/** The reply an interaction posted, as a session message reference. */
function replyRef(i: BotInteraction, messageId: string, channelId: string): SessionMessageRef {
  return {
    channelId,
    // The channel route (bot token) needs this id: a personal place's message never takes it.
    ...(isPersonalPlace(i) ? {} : { messageId }),
    interaction: { applicationId: i.applicationId, token: i.token, createdAt: i.createdTimestamp, messageId },
  };
}

/**
 * Shows the session's new state after an add from another interaction: edits
 * the session message, or — when it can no longer be edited (old, deleted) —
 * posts a fresh public one as a follow-up and makes it the session message.
 */
async function showSession(i: BotInteraction, ctx: BotContext, s: TrainingSession): Promise<void> {
  const payload = renderSessionMessage(s, {}, publicTranslator(i.guildLocale));
  if (editSessionMessage(ctx, s.key, s.message, payload)) return;
  const msg = await i.followUp(replyOptions(payload));
  await ctx.training
    .setMessage(s.key, replyRef(i, msg.id, s.channelId))
    .catch((err: unknown) => ctx.logger.warn({ err, key: s.key }, 'could not record the session message'));
}

async function addPhotos(ctx: BotContext, key: string, photos: PhotoInput[]): Promise<AddResult> {
  return guard(() => ctx.training.add(key, photos));
}

/** Refuses what cannot be done while the session's photos are being (or were) submitted. */
function assertNotSubmitted(s: TrainingSession): void {
  if (!s.submission) return;
  const accepted = s.submission.accepted === true;
  throw new UserError(accepted ? 'training_submitted' : 'training_submitting', (tr) =>
    tr.t(accepted ? 'training.submitted_running' : 'training.submitting'),
  );
}

function ownerOf(i: BotInteraction): string {
  const parsed = parseTrainingCustomId(i.customId);
  if (!parsed) throw new UserError('unknown_component', (tr) => tr.t('errors.unknown_button'));
  if (parsed.ownerId !== i.user.id) {
    throw new UserError('training_not_owner', (tr) =>
      tr.t('training.not_owner', { user: `<@${parsed.ownerId}>` }),
    );
  }
  return parsed.ownerId;
}

// ------------------------------------------------------------ subcommands

async function start(i: BotInteraction, ctx: BotContext): Promise<void> {
  const channelId = channelOf(i);
  const ethnicity = i.options.getString('ethnicity', true);
  const gender = i.options.getString('gender', true);
  const age = i.options.getInteger('age');
  if (!(ETHNICITIES as readonly string[]).includes(ethnicity)) {
    throw new UserError('invalid_options', (tr) =>
      tr.t('input.one_of', { field: '`ethnicity`', values: ETHNICITIES.join(', ') }),
    );
  }
  if (!(GENDERS as readonly string[]).includes(gender)) {
    throw new UserError('invalid_options', (tr) =>
      tr.t('input.one_of', { field: '`gender`', values: GENDERS.join(', ') }),
    );
  }
  if (age !== null && (age < AGE_MIN || age > AGE_MAX)) {
    throw new UserError('invalid_options', (tr) =>
      tr.t('input.whole_number_between', { field: '`age`', min: AGE_MIN, max: AGE_MAX }),
    );
  }
  if (age !== null && age < MIN_ADULT_AGE) {
    throw new UserError('training_underage', (tr) => tr.t('training.underage_start', { min: MIN_ADULT_AGE }));
  }
  const photos = attachmentsOf(i);
  const key = sessionKey(i.user.id, channelId);

  const { created, session } = await guard(() =>
    ctx.training.start({
      userId: i.user.id,
      channelId,
      ...(i.guildId ? { guildId: i.guildId } : {}),
      ethnicity: ethnicity as Ethnicity,
      gender: gender as Gender,
      ...(age !== null ? { age } : {}),
    }),
  );
  if (!created) {
    throw new UserError('training_session_open', (tr) =>
      [
        tr.t('training.already_open', {
          status: countLine(session, tr),
          subject: subjectLine(session, tr),
          expires: ts(session.expiresAt, 'R'),
        }),
        tr.t(session.submission ? 'training.already_open_submitted' : 'training.already_open_next'),
        ...(photos.length > 0 ? [tr.t('training.already_open_photos')] : []),
      ].join('\n'),
    );
  }

  const res = await i.reply(
    replyOptions(
      renderSessionMessage(
        session,
        photos.length > 0 ? { checking: photos.length } : {},
        publicTranslator(i.guildLocale),
      ),
    ),
  );
  const messageId = res?.id;
  const ref = messageId ? replyRef(i, messageId, channelId) : undefined;
  if (ref) {
    await ctx.training
      .setMessage(key, ref)
      .catch((err: unknown) => ctx.logger.warn({ err, key }, 'could not record the session message'));
  }
  if (photos.length === 0) return;
  // The checked photos are shown through the edit queue like every later update of this message.
  const show = async (p: SessionPayload) => {
    if (!editSessionMessage(ctx, key, ref, p)) await i.editReply(replyOptions(p));
  };
  let result: AddResult;
  try {
    result = await addPhotos(ctx, key, photos);
  } catch (err) {
    await show(renderSessionMessage(session, {}, publicTranslator(i.guildLocale))).catch(() => undefined);
    throw err;
  }
  await show(renderSessionMessage(result.session, {}, publicTranslator(i.guildLocale)));
  if (result.refused.length > 0) {
    await i.followUp({
      content: renderAddResult(result, translatorFor(i)),
      flags: MessageFlags.Ephemeral,
    });
  }
}

async function add(i: BotInteraction, ctx: BotContext): Promise<void> {
  const key = sessionKey(i.user.id, channelOf(i));
  const photos = attachmentsOf(i);
  if (photos.length === 0) throw new UserError('training_no_photos', (tr) => tr.t('training.no_photos'));
  assertNotSubmitted(await requireSession(ctx, key));
  await i.deferReply({ ephemeral: true });
  const result = await addPhotos(ctx, key, photos);
  await i.editReply({ content: renderAddResult(result, translatorFor(i)), allowed_mentions: { parse: [] } });
  if (result.added.length > 0) await showSession(i, ctx, result.session);
}

async function status(i: BotInteraction, ctx: BotContext): Promise<void> {
  const s = await requireSession(ctx, sessionKey(i.user.id, channelOf(i)));
  await i.reply({
    content: renderStatus(s, translatorFor(i)),
    flags: MessageFlags.Ephemeral,
    allowed_mentions: { parse: [] },
  });
}

async function cancel(i: BotInteraction, ctx: BotContext): Promise<void> {
  const key = sessionKey(i.user.id, channelOf(i));
  const s = await guard(() => ctx.training.cancel(key));
  if (!s) {
    throw new UserError('training_no_session', (tr) => tr.t('training.no_session_to_cancel'));
  }
  await i.reply({
    content: translatorFor(i).t('training.discarded', { count: s.photos.length }),
    flags: MessageFlags.Ephemeral,
  });
  editSessionMessage(
    ctx,
    key,
    s.message,
    renderClosedSessionMessage(s, 'cancelled', publicTranslator(i.guildLocale)),
    { final: true },
  );
}

// ------------------------------------------------------------ submit: consent, then send

/**
 * The submit step (slash command, Submit button, a failed upload's Retry):
 * nothing is sent yet. The session's owner gets the consent text, ephemerally,
 * with **I confirm** and **Cancel**; only Confirm (`confirm`) sends anything.
 */
async function askConsent(i: BotInteraction, ctx: BotContext, key: string, retryOf?: string): Promise<void> {
  const tr = translatorFor(i);
  const session = await requireSession(ctx, key);
  if (session.userId !== i.user.id) {
    throw new UserError('training_not_owner', (tr) =>
      tr.t('training.submit_not_owner', { user: `<@${session.userId}>` }),
    );
  }
  assertNotSubmitted(session);
  assertReady(session);
  if (underage(session)) {
    throw new UserError('training_underage', (tr) =>
      tr.t('training.underage_submit', { age: session.age ?? 0, min: MIN_ADULT_AGE }),
    );
  }
  const prompt = await ctx.consent.prompts.open({
    ownerId: session.userId,
    sessionKey: key,
    photoDigest: photoDigest(session),
    photoCount: session.photos.length,
    language: tr.locale,
    ...(retryOf !== undefined ? { parentJobId: retryOf } : {}),
    ...(i.channelId
      ? {
          shownBy: {
            applicationId: i.applicationId,
            token: i.token,
            createdAt: i.createdTimestamp,
            channelId: i.channelId,
          },
        }
      : {}),
  });
  const days = Math.round(ctx.consent.records.retentionMs / 86_400_000);
  await i.reply({
    ...renderConsentPrompt(session, prompt, days, tr),
    flags: MessageFlags.Ephemeral,
  });
}

/**
 * **I confirm**: claims the submission once in the store (a second click, here
 * or on another instance, is refused and nothing is sent twice), then runs the
 * upload job: a public job message (the reply to this click; a refusal by fair
 * use or credits stays ephemeral), the photos cleaned, the consent recorded,
 * then sent. The claim is then settled from the job: refused or failed, the
 * photos stay in the session for Retry; accepted, the session waits for the
 * job's end.
 */
async function confirm(i: BotInteraction, ctx: BotContext, promptId: string): Promise<void> {
  const prompt = await ctx.consent.prompts.get(promptId);
  if (!prompt || prompt.ownerId !== i.user.id) {
    throw new UserError('training_consent_expired', (tr) => tr.t('training.consent.expired'));
  }
  if (prompt.usedAt !== undefined) {
    // Its photos went already: the prompt closes, saying so (nothing about a failure that did not happen).
    if (prompt.outcome !== undefined) {
      await i.update(renderConsentClosed(prompt.outcome, prompt.photoCount, translatorFor(i)));
      return;
    }
    const s = await ctx.training.current(prompt.sessionKey);
    if (s) assertNotSubmitted(s);
    throw new UserError('training_consent_used', (tr) => tr.t('training.consent.used'));
  }
  const claimId = randomUUID();
  const session = await guard(() => ctx.training.claim(prompt.sessionKey, claimId, prompt.photoDigest));
  await ctx.consent.prompts
    .markUsed(prompt)
    .catch((err: unknown) => ctx.logger.warn({ err }, 'could not mark the consent prompt used'));
  const parent = prompt.parentJobId
    ? await ctx.records.get(prompt.parentJobId).catch(() => undefined)
    : undefined;
  const consentAt = ctx.now();
  let jobId: string | undefined;
  try {
    await runJob(i, ctx, {
      operation: 'upload',
      params: operations.upload.toStored({
        ethnicity: session.ethnicity,
        gender: session.gender,
        photos: session.photos.map((p) => ({ url: p.url })),
      }),
      ...(parent ? { parent } : {}),
      submit: async (webhook, hooks, job) => {
        jobId = job.id;
        // Before anything is sent: from now on the claim follows this job.
        await ctx.training.attachJob(session.key, claimId, job.id);
        return ctx.photoUpload.send(
          session,
          job.id,
          {
            userId: session.userId,
            ...(session.guildId !== undefined ? { guildId: session.guildId } : {}),
            channelId: session.channelId,
            at: consentAt,
            wording: prompt.wording,
            ...(prompt.language !== undefined ? { language: prompt.language } : {}),
          },
          (params, w) => ctx.media.submit('upload', params, w, { onWaiting: hooks.waiting }),
          webhook,
        );
      },
    });
  } finally {
    const outcome = await settleClaim(i, ctx, session, claimId, jobId).catch((err: unknown) => {
      ctx.logger.warn({ err, key: session.key }, 'could not settle the training submission');
      return undefined;
    });
    await settlePrompt(i, ctx, prompt, outcome).catch((err: unknown) =>
      ctx.logger.warn({ err }, 'could not settle the consent prompt'),
    );
  }
}

/**
 * The prompt follows its submission: nothing sent, it can confirm again; sent or
 * failed, it is closed (its buttons removed, saying what became of the photos), so a
 * late Cancel or a second confirm cannot claim that nothing was sent.
 */
async function settlePrompt(
  i: BotInteraction,
  ctx: BotContext,
  prompt: ConsentPrompt,
  outcome: 'not_sent' | 'failed' | 'accepted' | undefined,
): Promise<void> {
  if (outcome === undefined) return; // still unknown: the session's own state answers later clicks
  if (outcome === 'not_sent') {
    await ctx.consent.prompts.release(prompt);
    return;
  }
  const settled = outcome === 'accepted' ? 'sent' : 'failed';
  await ctx.consent.prompts.settle(prompt, settled);
  const shown = prompt.shownBy;
  if (!shown) return;
  // An ephemeral message: only the token of the interaction that showed it can edit it.
  const ref = {
    channelId: shown.channelId,
    interaction: { applicationId: shown.applicationId, token: shown.token, createdAt: shown.createdAt },
  };
  if (!ctx.edits.editable(ref, shown.createdAt, true)) return;
  const closed = renderConsentClosed(settled, prompt.photoCount, translatorFor(i));
  ctx.edits.push({
    jobId: `consent-prompt:${prompt.id}`,
    ref,
    messageCreatedAt: shown.createdAt,
    payload: { ...closed, embeds: [], allowed_mentions: { parse: [] } },
    final: true,
  });
}

/** After runJob: the claim ends as the job went (an unknown outcome keeps it, settled later from the job). */
async function settleClaim(
  i: BotInteraction,
  ctx: BotContext,
  session: TrainingSession,
  claimId: string,
  jobId: string | undefined,
): Promise<'not_sent' | 'failed' | 'accepted' | undefined> {
  const key = session.key;
  if (jobId === undefined) {
    // Nothing was sent (fair use, credits, Discord or the store refused first).
    await ctx.training.endClaim(key, claimId, 'not_sent');
    return 'not_sent';
  }
  const job: JobRecord | undefined = await ctx.records.get(jobId);
  if (job?.state === 'failed') {
    const now = await ctx.training.endClaim(key, claimId, 'failed');
    if (now && !now.submission) {
      await i
        .followUp({
          content: translatorFor(i).t('training.kept_after_failure', {
            count: now.photos.length,
            until: ts(now.expiresAt, 'f'),
          }),
          flags: MessageFlags.Ephemeral,
        })
        .catch(() => undefined);
    }
    return 'failed';
  }
  if (job?.state === 'queued' || job?.state === 'processing' || job?.state === 'finished') {
    const now = await ctx.training.endClaim(key, claimId, 'accepted');
    if (job.state === 'finished') await ctx.training.jobEnded(jobId, 'finished');
    // The public session message is closed; an add after a failed job posts a fresh one.
    if (session.message) {
      editSessionMessage(
        ctx,
        key,
        session.message,
        renderClosedSessionMessage(session, 'submitted', publicTranslator(i.guildLocale)),
        {
          final: true,
        },
      );
      if (now?.message?.interaction.messageId === session.message.interaction.messageId)
        await ctx.training.setMessage(key, undefined);
    }
    return 'accepted';
  }
  // `submitting` (the service's answer was lost) or unknown: the claim waits on the job.
  return undefined;
}

/**
 * **Cancel** on the consent prompt: nothing is sent, the prompt closes. Once its photos
 * went (a late click), it closes saying so; while they are being sent, it says that.
 */
async function decline(i: BotInteraction, ctx: BotContext, promptId: string): Promise<void> {
  const prompt = await ctx.consent.prompts.get(promptId);
  if (prompt?.outcome !== undefined) {
    await i.update(renderConsentClosed(prompt.outcome, prompt.photoCount, translatorFor(i)));
    return;
  }
  if (prompt?.usedAt !== undefined) {
    const s = await ctx.training.current(prompt.sessionKey);
    if (s) assertNotSubmitted(s);
  }
  await ctx.consent.prompts.close(promptId);
  await i.update({
    content: translatorFor(i).t('training.consent.declined'),
    components: [],
  });
}

/**
 * Retry of a failed upload job (its message's Retry button, `/tasks`): the
 * same photos, still in the member's session, go through the consent step
 * again. Called by the Retry handler (src/commands/next-steps.ts).
 */
export async function retryUpload(i: BotInteraction, ctx: BotContext, job: JobRecord): Promise<void> {
  const session = await ctx.training.forRetry(job.id);
  if (!session) {
    const stored = operations.upload.fromStored(job.params);
    throw new UserError(
      'retry_unsupported',
      'cannot' in stored ? stored.cannot : (tr) => tr.t('jobs.cannot.training_not_kept'),
    );
  }
  await askConsent(i, ctx, session.key, job.id);
}

// ------------------------------------------------------------ components

function buildAddModal(tr: Translator, ownerId: string, room: number, maxBytes: number): ModalBuilder {
  const modal = new ModalBuilder()
    .setCustomId(trainingCustomId('modal', ownerId))
    .setTitle(tr.t('training.modal.title'));
  const fields = Math.min(MODAL_FIELDS.length, Math.ceil(room / 10));
  for (let f = 0; f < fields; f++) {
    const max = Math.min(10, room - f * 10);
    const first = f * 10 + 1;
    const upload = new FileUploadBuilder()
      .setCustomId(MODAL_FIELDS[f] ?? `photos${f + 1}`)
      .setMinValues(f === 0 ? 1 : 0)
      .setMaxValues(max)
      .setRequired(f === 0);
    modal.addLabelComponents(
      new LabelBuilder()
        .setLabel(
          fields === 1
            ? tr.t('training.modal.photos')
            : tr.t('training.modal.photos_range', { first, last: first + max - 1 }),
        )
        .setDescription(
          f === 0
            ? tr.t('training.modal.formats', { limit: formatBytes(tr, maxBytes) })
            : tr.t('training.modal.optional'),
        )
        .setFileUploadComponent(upload),
    );
  }
  return modal;
}

/** Files of every upload field, in field order then upload order (a field not in this modal has none). */
function uploadedFiles(i: BotInteraction): PhotoInput[] {
  const fields = i.fields;
  return MODAL_FIELDS.flatMap((id) => fields.getUploadedFiles(id).map(toPhotoInput));
}

async function addButton(i: BotInteraction, ctx: BotContext, key: string): Promise<void> {
  const session = await requireSession(ctx, key);
  const st = statusOf(session);
  assertNotSubmitted(session);
  if (st.room === 0) {
    throw new UserError('training_full', (tr) => tr.t('training.full', { max: MAX_PHOTOS }));
  }
  await i.showModal(
    buildAddModal(translatorFor(i), session.userId, st.room, ctx.limits.maxImageBytes).toJSON(),
  );
}

async function modalSubmit(i: BotInteraction, ctx: BotContext): Promise<void> {
  ownerOf(i);
  const key = sessionKey(i.user.id, channelOf(i));
  const photos = uploadedFiles(i);
  if (photos.length === 0) throw new UserError('training_no_photos', (tr) => tr.t('training.no_files'));
  await requireSession(ctx, key);
  const source = i.message;
  if (source) {
    await i.deferUpdate();
    const result = await addPhotos(ctx, key, photos);
    // The message the Add button sits on, edited as the modal interaction's @original.
    const payload = renderSessionMessage(result.session, {}, publicTranslator(i.guildLocale));
    const ref = replyRef(i, source.id, source.channel_id);
    if (!editSessionMessage(ctx, key, ref, payload, { original: true }))
      await i.editReply(replyOptions(payload));
    await i.followUp({
      content: renderAddResult(result, translatorFor(i)),
      flags: MessageFlags.Ephemeral,
    });
    return;
  }
  await i.deferReply({ ephemeral: true });
  const result = await addPhotos(ctx, key, photos);
  await i.editReply({ content: renderAddResult(result, translatorFor(i)), allowed_mentions: { parse: [] } });
  if (result.added.length > 0) await showSession(i, ctx, result.session);
}

// ------------------------------------------------------------ exports

export const trainingPhotos = {
  data: { ...data, ...where.jobs },
  job: true,
  userInstall: 'job',
  async execute(i: BotInteraction, ctx: BotContext) {
    const sub = i.options.getSubcommand(true);
    switch (sub) {
      case 'start':
        return start(i, ctx);
      case 'add':
        return add(i, ctx);
      case 'status':
        return status(i, ctx);
      case 'submit':
        return askConsent(i, ctx, sessionKey(i.user.id, channelOf(i)));
      case 'cancel':
        return cancel(i, ctx);
      default:
        throw new UserError('unknown_subcommand', (tr) => tr.t('errors.unknown_subcommand'));
    }
  },
} satisfies Command;

export const trainingComponents = {
  prefix: 'training:',
  job: true,
  async button(i: BotInteraction, ctx: BotContext) {
    const consent = parseConsentCustomId(i.customId);
    if (consent) {
      if (consent.ownerId !== i.user.id) {
        throw new UserError('training_not_owner', (tr) =>
          tr.t('training.consent.not_owner', { user: `<@${consent.ownerId}>` }),
        );
      }
      return consent.action === 'confirm'
        ? confirm(i, ctx, consent.promptId)
        : decline(i, ctx, consent.promptId);
    }
    const parsed = parseTrainingCustomId(i.customId);
    const ownerId = ownerOf(i);
    const key = sessionKey(ownerId, channelOf(i));
    if (parsed?.action === 'add') return addButton(i, ctx, key);
    if (parsed?.action === 'submit') return askConsent(i, ctx, key);
    throw new UserError('unknown_component', (tr) => tr.t('errors.unknown_button'));
  },
  async modal(i: BotInteraction, ctx: BotContext) {
    return modalSubmit(i, ctx);
  },
} satisfies ComponentHandler;
