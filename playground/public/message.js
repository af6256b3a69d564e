// One message as the client draws it: avatar, name (with the APP tag for the bot) and time; above
// them "Ada used /extend-song" for an interaction reply, or the replied-to message for a reply;
// then content, attachments, embeds (and the link previews Discord would unfurl) and components;
// "Only you can see this · Dismiss message" under an ephemeral one. Components V2 messages show
// their components only.

import { mediaGallery, renderActionRows, renderV2, IS_COMPONENTS_V2 } from './components.js';
import { el, emojify, icon } from './dom.js';
import { renderEmbeds } from './embeds.js';
import { t, tNodes } from './i18n.js';
import { markdown, parse } from './markdown.js';
import { attachment, image, mediaKind, video } from './media.js';
import { fullDate, messageTime, shortTime } from './time.js';

const EPHEMERAL = 1 << 6;
const LOADING = 1 << 7;
const SUPPRESS_EMBEDS = 1 << 2;
const AVATAR_COLOURS = ['#5865f2', '#757e8a', '#3ba55c', '#faa61a', '#ed4245', '#eb459f'];

/** The default avatar: one of Discord's six colours, chosen by the id, with the name's initial. */
export function avatar(user, size = 'large') {
  const id = String(user?.id ?? '0');
  let colour = AVATAR_COLOURS[0];
  try {
    colour = AVATAR_COLOURS[Number((BigInt(id) >> 22n) % 6n)];
  } catch {
    /* not a snowflake */
  }
  const name = displayName(user);
  // The initial is drawn by CSS (attr()), so it is not part of the message's text.
  return el('span', {
    class: `avatar ${size}`,
    style: { background: colour },
    'aria-hidden': 'true',
    'data-initial': (name.match(/\p{L}|\p{N}/u)?.[0] ?? '?').toUpperCase(),
  });
}

export const displayName = (user) => user?.global_name ?? user?.username ?? 'Unknown';

/** Direct image and video links in a classic message's content, which Discord unfurls into previews. */
function unfurls(content) {
  const out = [];
  const walk = (nodes) => {
    for (const n of nodes) {
      if (n.type === 'url' && !n.suppressed) out.push(n.url);
      if (n.children) walk(n.children);
      if (n.items) n.items.forEach((i) => walk(i.children));
    }
  };
  walk(parse(content));
  return [...new Set(out)]
    .filter((u) => !/\/channels\//.test(u))
    .map((u) => ({ url: u, kind: mediaKind('', u) }))
    .filter((u) => u.kind === 'image' || u.kind === 'video')
    .slice(0, 5);
}

/** "Ada used /tasks" (a slash command), "Mo used Remove result" (a message command from Apps). */
function usedHeader(meta, command, commandType) {
  const name = command ?? meta.name ?? 'command';
  return el(
    'div',
    { class: 'msg-context used' },
    avatar(meta.user, 'tiny'),
    tNodes('used', {
      user: el('span', { class: 'context-name', text: displayName(meta.user) }),
      command: el('span', {
        class: 'used-command',
        text: (commandType ?? 1) === 1 ? `/${name}` : name,
      }),
    }),
  );
}

/** The first words of a message as a reply shows them: its text (a Components V2 one's too), on one line. */
function snippetSource(data) {
  if (data.content) return data.content;
  const texts = [];
  const walk = (cs) => {
    for (const c of cs ?? []) {
      if (c.type === 10 && c.content) texts.push(c.content);
      walk(c.components);
    }
  };
  walk(data.components);
  return texts.join(' ') || data.embeds?.[0]?.title || '';
}

/**
 * The replied-to message above a reply: its author and its text drawn as markdown (bold, mentions
 * with names), on one line, as the client shows it; "Click to see attachment" when it has no text.
 */
function replyHeader(ref, ctx) {
  const target = ctx.lookup(ref.message_id);
  const author = target?.data.author;
  const source = target ? snippetSource(target.data).replace(/\s*\n+\s*/g, ' ') : '';
  const snippet = source
    ? el('span', { class: 'reply-snippet' }, markdown(source, ctx.md, { inline: true }))
    : el('span', {
        class: 'reply-snippet muted',
        text: target ? t('seeAttachment') : t('replyDeleted'),
      });
  return el(
    'a',
    {
      class: 'msg-context reply',
      href: '#',
      dataset: { jumpChannel: ref.channel_id, jumpMessage: ref.message_id },
    },
    author ? avatar(author, 'tiny') : null,
    author
      ? el('span', {
          class: 'context-name',
          text: author.id === ctx.botId ? ctx.applicationName : displayName(author),
        })
      : null,
    snippet,
  );
}

function head(d, ctx, isBot) {
  return el(
    'h3',
    { class: 'msg-head' },
    el('span', { class: 'msg-author', text: isBot ? ctx.applicationName : displayName(d.author) }),
    isBot ? el('span', { class: 'app-tag', text: 'APP' }) : null,
    el('time', {
      class: 'msg-time',
      datetime: d.timestamp,
      title: fullDate(Date.parse(d.timestamp)),
      text: messageTime(d.timestamp),
    }),
  );
}

/**
 * @param item {id, ephemeral, data, edits, command} from /api/messages
 * @param ctx the drawing context (see app.js)
 * @param grouped whether it continues the previous message of the same author (no avatar or name)
 */
export function renderMessage(item, ctx, grouped) {
  const d = item.data;
  const flags = d.flags ?? 0;
  const isBot = d.author?.id === ctx.botId;
  const meta = d.interaction_metadata;
  const v2 = (flags & IS_COMPONENTS_V2) !== 0;
  const box = el('article', {
    class: `msg${grouped ? ' grouped' : ''}${item.ephemeral || flags & EPHEMERAL ? ' ephemeral' : ''}`,
    'data-id': item.id,
    'aria-label': `Message from ${isBot ? ctx.applicationName : displayName(d.author)}`,
  });
  if (meta && meta.type === 2) box.append(usedHeader(meta, item.command, item.commandType));
  else if (d.type === 19 && d.message_reference?.message_id)
    box.append(replyHeader(d.message_reference, ctx));
  if (grouped)
    box.append(el('time', { class: 'msg-gutter-time', datetime: d.timestamp, text: shortTime(d.timestamp) }));
  else box.append(avatar(d.author), head(d, ctx, isBot));

  const body = el('div', { class: 'msg-body' });
  box.append(body);
  if (flags & LOADING) {
    body.append(
      el(
        'div',
        { class: 'thinking' },
        t('thinking', { app: ctx.applicationName }),
        el('span', { class: 'dots', 'aria-hidden': 'true' }),
      ),
    );
  } else if (v2) {
    body.append(renderV2(d.components ?? [], ctx, item));
  } else {
    if (d.content) {
      const content = el('div', { class: 'msg-content' }, markdown(d.content, ctx.md));
      if (d.edited_timestamp)
        content.append(
          el('span', {
            class: 'edited',
            title: fullDate(Date.parse(d.edited_timestamp)),
            text: ` ${t('edited')}`,
          }),
        );
      body.append(content);
    }
    // Several images and videos share one mosaic, as the client lays them out; other files follow.
    const all = d.attachments ?? [];
    const visual = all.filter((a) =>
      ['image', 'video'].includes(mediaKind(a.content_type, a.filename ?? '')),
    );
    const mosaic = visual.length >= 2 ? visual.slice(0, 10) : [];
    const files = all.filter((a) => !mosaic.includes(a)).map(attachment);
    if (mosaic.length)
      body.append(
        el(
          'div',
          { class: 'attachments' },
          mediaGallery({
            items: mosaic.map((a) => ({
              media: a,
              description: a.description,
              spoiler: (a.filename ?? '').startsWith('SPOILER_'),
            })),
          }),
        ),
      );
    if (files.length) body.append(el('div', { class: 'attachments' }, files));
    if (d.embeds?.length) body.append(el('div', { class: 'embeds' }, renderEmbeds(d.embeds, ctx)));
    if (d.content && !(flags & SUPPRESS_EMBEDS)) {
      // Links Discord already embedded (a member's image links) are not previewed twice.
      const embedded = new Set((d.embeds ?? []).map((e) => e.url));
      const previews = unfurls(d.content)
        .filter((u) => !embedded.has(u.url))
        .map((u) => (u.kind === 'image' ? image({ url: u.url }, { alt: 'link preview' }) : video(u.url)));
      if (previews.length) body.append(el('div', { class: 'unfurls' }, previews));
    }
    const rows = renderActionRows(d.components ?? [], ctx, item);
    if (rows) body.append(rows);
  }
  if (ctx.failedComponents.has(item.id))
    body.append(el('div', { class: 'interaction-failed', text: t('interactionFailed') }));
  if (item.ephemeral || flags & EPHEMERAL)
    body.append(
      el(
        'div',
        { class: 'ephemeral-note' },
        icon('eye', 16),
        `${t('onlyYou')} · `,
        el('button', {
          type: 'button',
          class: 'link-button',
          onclick: () => ctx.onDismiss(item.id),
          text: t('dismiss'),
        }),
      ),
    );
  // The hover toolbar's More button: the message's menu (Apps among it), as a right-click opens it.
  if (!item.ephemeral && !(flags & EPHEMERAL))
    box.append(
      el(
        'div',
        { class: 'msg-toolbar' },
        el(
          'button',
          {
            type: 'button',
            class: 'icon-button more',
            'aria-label': t('more'),
            title: t('more'),
            onclick: (e) => {
              const r = e.currentTarget.getBoundingClientRect();
              ctx.onMenu(item, { x: r.left - 180, y: r.bottom + 4 });
            },
          },
          el('span', { 'aria-hidden': 'true', text: '⋯' }),
        ),
      ),
    );
  return emojify(box);
}

/**
 * A command Discord has no answer to yet: "Sending command…", then, once the 3 s are over, "The
 * application did not respond" in red (what the client shows the member who ran it).
 */
export function renderPending(p, ctx) {
  const me = ctx.me();
  return el(
    'article',
    {
      class: `msg pending${p.failed ? ' failed' : ''}`,
      'data-pending-id': p.id,
      'aria-label': `Command ${(p.commandType ?? 1) === 1 ? '/' : ''}${p.command}`,
    },
    usedHeader({ user: me }, p.command, p.commandType),
    avatar({ id: ctx.botId, username: ctx.applicationName }),
    el(
      'h3',
      { class: 'msg-head' },
      el('span', { class: 'msg-author', text: ctx.applicationName }),
      el('span', { class: 'app-tag', text: 'APP' }),
    ),
    el(
      'div',
      { class: 'msg-body' },
      p.failed
        ? el('div', { class: 'no-response', role: 'alert', text: t('noResponse') })
        : el('div', { class: 'sending', text: t('sending') }),
    ),
  );
}
