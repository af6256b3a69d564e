/**
 * Result cards on the wire: a classic job message becomes a Components V2 card
 * through either edit route (the interaction webhook, the channel message), the
 * card's flag and components reach Discord, its classic fields are cleared, and
 * the message keeps its files. Checked against the fake Discord, which applies
 * Discord's V2 rules and validates every body against the OpenAPI file.
 */
import { REST } from '@discordjs/rest';
import { ButtonStyle, ComponentType, Routes } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardPayload, type CardSpec } from '../src/services/discord/render/card.js';
import { createInteractionRest, createRestTransport } from '../src/services/discord/discord-transport.js';
import { renderRemoved, createJobRenderer } from '../src/services/discord/render/job-render.js';
import type { JobRecord } from '../src/services/store/types.js';
import type { FakeDiscord } from './fake-discord/index.js';
import { fakeWithClient, type FakeWithClient } from './helpers/fake-discord-client.js';
import {
  componentCount,
  customIds,
  isCardMessage,
  messageText,
  textDisplayLength,
  walkComponents,
} from './helpers/message-text.js';
import { renderOperations } from '../src/services/operations/index.js';

const { renderJob } = createJobRenderer(renderOperations);

const USER = '123456789012345678';

function finishedVideo(): JobRecord {
  return {
    id: 'job-card-1',
    secret: 's',
    operation: 'video',
    userId: USER,
    message: { channelId: '1' },
    params: { task_id: 'parent-1', prompt: 'a fox runs' },
    state: 'finished',
    percentage: 100,
    taskId: 'task-card-1',
    result: { kind: 'video', videoUrl: 'https://cdn.example.com/out/fox.mp4' },
    createdAt: 0,
    updatedAt: 1000,
    finishedAt: 1000,
    version: 3,
  };
}

describe('a card through both edit routes', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  let transport: ReturnType<typeof createRestTransport>;

  beforeAll(async () => {
    t = await fakeWithClient();
    fake = t.fake;
    transport = createRestTransport({
      botRest: new REST({ api: fake.apiUrl }).setToken(fake.token),
      interactionRest: createInteractionRest({ api: fake.apiUrl }),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('interaction webhook: the classic reply becomes the card (flag, components, no content/embeds)', async () => {
    t.handler = async (i) => {
      if (i.isChatInputCommand())
        await i.reply({ content: '⚙️ **Video extension** · 40%', embeds: [{ title: 'Video extension' }] });
    };
    const cmd = fake.sendCommand({ name: 'extend-video' });
    const first = await cmd.message();
    expect(isCardMessage(first)).toBe(false);
    await transport.editInteractionOriginal(fake.applicationId, cmd.token, renderJob(finishedVideo(), 0));
    const after = fake.messages.get(first.id);
    expect(after && isCardMessage(after)).toBe(true);
    expect(after?.content).toBe('');
    expect(after?.embeds).toEqual([]);
    expect(after?.components[0]?.['type']).toBe(ComponentType.Container);
    expect(messageText(after)).toContain('https://cdn.example.com/out/fox.mp4');
    // A player, not only a link: the video is the card's gallery item, as Discord takes it.
    const gallery = walkComponents(after?.components).find((c) => c['type'] === ComponentType.MediaGallery);
    expect(gallery?.['items']).toMatchObject([
      { media: { url: 'https://cdn.example.com/out/fox.mp4' }, description: 'Video extension' },
    ]);
    expect(customIds(after)).toEqual(['next:extend-video:job-card-1']);
    expect(t.errors).toEqual([]);
    fake.assertNoViolations();
  });

  it('channel message: the card replaces content and embeds, the files stay', async () => {
    const rest = new REST({ api: fake.apiUrl }).setToken(fake.token);
    const posted = (await rest.post(Routes.channelMessages(fake.defaultChannelId), {
      body: { content: 'classic', embeds: [{ title: 'old' }], attachments: [{ id: '0', filename: 'a.txt' }] },
      files: [{ name: 'a.txt', data: Buffer.from('hello') }],
    })) as { id: string };
    await transport.editChannelMessage(fake.defaultChannelId, posted.id, renderJob(finishedVideo(), 0));
    const after = fake.messages.get(posted.id);
    expect(after && isCardMessage(after)).toBe(true);
    expect(after?.content).toBe('');
    expect(after?.embeds).toEqual([]);
    expect(after?.attachments.map((a) => a['filename'])).toEqual(['a.txt']);
    // A card stays a card: a classic edit of it is refused, as Discord refuses it.
    await expect(
      transport.editChannelMessage(fake.defaultChannelId, posted.id, {
        content: 'back to classic?',
        embeds: [],
        components: [],
        allowed_mentions: { parse: [] },
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect(fake.takeViolations()).toHaveLength(1);
  });

  it('renderRemoved PATCHed as it is (files dropped) turns a classic message with files into the removed card', async () => {
    const rest = new REST({ api: fake.apiUrl }).setToken(fake.token);
    const posted = (await rest.post(Routes.channelMessages(fake.defaultChannelId), {
      body: { content: 'a cat in a hat', attachments: [{ id: '0', filename: 'cat.png' }] },
      files: [{ name: 'cat.png', data: Buffer.from('png') }],
    })) as { id: string };
    await rest.patch(Routes.channelMessage(fake.defaultChannelId, posted.id), {
      body: { ...renderRemoved({ locale: 'de' }), attachments: [] },
    });
    const after = fake.messages.get(posted.id);
    expect(after && isCardMessage(after)).toBe(true);
    expect(after?.content).toBe('');
    expect(after?.attachments).toEqual([]);
    expect(messageText(after)).toBe('🚫 Dieses Ergebnis wurde von einem Moderator entfernt.');
    fake.assertNoViolations();
  });
});

describe('cardPayload: the V2 limits, whatever the spec holds', () => {
  const base: CardSpec = {
    accent: 0x57f287,
    head: ['### title'],
    params: [],
    media: [],
    links: [],
    notes: [],
    details: [],
    rows: [],
    more: (n) => `… and ${n} more`,
  };
  const button = (id: string) => ({
    type: ComponentType.Button as const,
    style: ButtonStyle.Secondary as const,
    label: id,
    custom_id: id,
  });

  it('rows beyond 40 components are left out; a custom_id used twice is kept once', () => {
    const rows = Array.from({ length: 10 }, (_, r) =>
      Array.from({ length: 5 }, (_, b) => button(`r${r}b${b}`)),
    );
    rows.push([button('r0b0'), button('extra')]);
    const p = cardPayload({ ...base, footer: 'Job x', rows });
    expect(componentCount(p)).toBeLessThanOrEqual(40);
    const ids = customIds(p);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.slice(0, 5)).toEqual(['r0b0', 'r0b1', 'r0b2', 'r0b3', 'r0b4']);
  });

  it('4000 characters across Text Displays: lists end with "… and N more", notes are cut, the head stays', () => {
    const p = cardPayload({
      ...base,
      head: ['### A very important title'],
      params: Array.from({ length: 200 }, (_, i) => `**Param ${i}:** ${'v'.repeat(50)}`),
      links: Array.from({ length: 200 }, (_, i) => `[link ${i}](https://a.example/${i}/${'x'.repeat(40)})`),
      notes: ['n'.repeat(10_000)],
      details: Array.from({ length: 50 }, (_, i) => `detail ${i} ${'d'.repeat(80)}`),
      footer: 'Job j',
    });
    expect(textDisplayLength(p)).toBeLessThanOrEqual(4000);
    const text = messageText(p);
    expect(text).toContain('### A very important title');
    expect(text).toContain('[link 0](https://a.example/0/');
    expect(text).toMatch(/… and \d+ more/);
    expect(text).toContain('-# Job j');
    // No link is cut in the middle: every one shown is whole.
    for (const m of text.matchAll(/\[link (\d+)\]\(([^)]*)\)/g))
      expect(m[2]).toBe(`https://a.example/${m[1]}/${'x'.repeat(40)}`);
  });

  it('images: at most 10 in the gallery, the rest as links, invalid ones dropped', () => {
    const media = Array.from({ length: 13 }, (_, i) => ({
      url: i === 3 ? 'javascript:alert(1)' : `https://a.example/${i}.png`,
      label: `Image ${i}`,
    }));
    const p = cardPayload({ ...base, media });
    const text = messageText(p);
    expect(text).toContain('[Image 11](https://a.example/11.png)');
    expect(text).toContain('[Image 12](https://a.example/12.png)');
    expect(text).not.toContain('javascript');
  });
});
