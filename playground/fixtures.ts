/**
 * Components V2 fixture messages for developing and testing the page's V2
 * rendering before the bot produces such cards. They are posted through the
 * fake Discord's REST with the bot token, as the bot would post them, so the
 * fake checks them (OpenAPI schema, the V2 rules) and echoes them the way
 * Discord does (component ids, unfurled media, attachments). Reached only
 * through the playground's debug route, never from the page's UI.
 */
import { mediaFileFor } from '../test/emulator/media/index.js';

/** `1 << 15`: the message is made of components only (no content, no embeds). */
export const IS_COMPONENTS_V2 = 1 << 15;

export type V2FixtureName = 'song-card' | 'gallery';

export interface V2FixtureContext {
  /** The member the card mentions (who ran the job). */
  userId: string;
  /** The media emulator's base URL (external media: gallery items, link buttons). */
  mediaUrl: string;
}

interface FixtureFile {
  filename: string;
  contentType: string;
  bytes: Buffer;
}

interface FixtureMessage {
  body: Record<string, unknown>;
  files: FixtureFile[];
}

const file = (filename: string): FixtureFile => {
  const media = mediaFileFor(filename);
  if (!media) throw new Error(`no generated media for ${filename}`);
  return { filename, contentType: media.contentType, bytes: media.bytes };
};

/** A finished song extension as the result card will look: container, gallery, files, sections, buttons. */
function songCard(ctx: V2FixtureContext): FixtureMessage {
  const files = [file('cover-1.png'), file('song-1.wav'), file('song-1.mp4')];
  const jobId = '00000000-0000-4000-8000-00000000c0de';
  return {
    files,
    body: {
      flags: IS_COMPONENTS_V2,
      allowed_mentions: { parse: [] },
      attachments: files.map((f, i) => ({ id: String(i), filename: f.filename })),
      components: [
        {
          type: 17,
          accent_color: 0x57f287,
          components: [
            {
              type: 9,
              components: [
                { type: 10, content: '## Song extension' },
                {
                  type: 10,
                  content: `Ran by <@${ctx.userId}> · took 9s · from \`song-parent-0001\`\n**Lyrics** \\[Verse\\] Emulated lyrics, take 1`,
                },
              ],
              accessory: {
                type: 11,
                media: { url: 'attachment://cover-1.png' },
                description: 'Cover of song 1',
              },
            },
            {
              type: 12,
              items: [
                { media: { url: 'attachment://cover-1.png' }, description: 'Cover of song 1' },
                {
                  media: { url: `${ctx.mediaUrl}/files/fixture-cover-2.png` },
                  description: 'Cover of song 2',
                },
              ],
            },
            { type: 14, divider: true, spacing: 1 },
            { type: 13, file: { url: 'attachment://song-1.wav' } },
            { type: 13, file: { url: 'attachment://song-1.mp4' } },
            {
              type: 9,
              components: [{ type: 10, content: 'Continue from the end of song 1' }],
              accessory: { type: 2, style: 1, custom_id: 'fixture:extend-song:1', label: 'Extend song 1' },
            },
            { type: 14, divider: false, spacing: 2 },
            { type: 10, content: `-# AI-generated · Job ${jobId}` },
            {
              type: 1,
              components: [
                { type: 2, style: 1, custom_id: 'fixture:extend-song:2', label: 'Extend song 2' },
                { type: 2, style: 2, custom_id: 'fixture:retry', label: 'Retry', disabled: true },
                {
                  type: 2,
                  style: 5,
                  url: `${ctx.mediaUrl}/files/fixture-song-1.wav`,
                  label: 'Audio 1',
                },
              ],
            },
          ],
        },
      ],
    },
  };
}

/** Ten images in one gallery (Discord's mosaic), then a spoilered container. */
function gallery(ctx: V2FixtureContext): FixtureMessage {
  return {
    files: [],
    body: {
      flags: IS_COMPONENTS_V2,
      allowed_mentions: { parse: [] },
      components: [
        { type: 10, content: '### Upscaled images (10)' },
        {
          type: 12,
          items: Array.from({ length: 10 }, (_, i) => ({
            media: { url: `${ctx.mediaUrl}/files/fixture-gallery-${i + 1}.png` },
            description: `Image ${i + 1}`,
          })),
        },
        {
          type: 17,
          spoiler: true,
          components: [{ type: 10, content: 'A spoilered container: click to reveal' }],
        },
      ],
    },
  };
}

const FIXTURES: Record<V2FixtureName, (ctx: V2FixtureContext) => FixtureMessage> = {
  'song-card': songCard,
  gallery,
};

export const V2_FIXTURE_NAMES = Object.keys(FIXTURES) as V2FixtureName[];

/**
 * Posts a fixture to `POST /channels/{channelId}/messages` with the bot token
 * (multipart when it has files, as discord.js sends them). Returns the created
 * message's id, or throws with Discord's status and error code.
 */
export async function postV2Fixture(
  discord: { apiUrl: string; token: string },
  channelId: string,
  name: V2FixtureName,
  ctx: V2FixtureContext,
): Promise<string> {
  const { body, files } = FIXTURES[name](ctx);
  const form = new FormData();
  form.append('payload_json', JSON.stringify(body));
  files.forEach((f, i) =>
    form.append(`files[${i}]`, new Blob([new Uint8Array(f.bytes)], { type: f.contentType }), f.filename),
  );
  const res = await fetch(`${discord.apiUrl}/v10/channels/${channelId}/messages`, {
    method: 'POST',
    headers: { authorization: `Bot ${discord.token}` },
    body: form,
  });
  const answer = (await res.json()) as { id?: string; code?: number; message?: string; errors?: unknown };
  if (!res.ok || typeof answer.id !== 'string')
    throw new Error(
      `Discord answered ${res.status} ${answer.code ?? ''} ${answer.message ?? ''} ${JSON.stringify(answer.errors ?? {})}`,
    );
  return answer.id;
}
