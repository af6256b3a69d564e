// A forum or media channel as Discord shows it: no message box, a list of posts (each a thread:
// its tags, title, the first message's author and opening words, a picture from it, how many
// messages), tag filters on top. Opening a post shows its messages like any thread.

import { el, emojify, icon } from './dom.js';
import { markdown } from './markdown.js';
import { relativeTime } from './time.js';

/** The texts of a message as a reader skims them: content, else its Components V2 text displays. */
function texts(data) {
  if (data.content) return [data.content];
  const out = [];
  const walk = (cs) => {
    for (const c of cs ?? []) {
      if (c.type === 10 && c.content) out.push(c.content);
      walk(c.components);
    }
  };
  walk(data.components);
  for (const e of data.embeds ?? []) out.push(e.title ?? '', e.description ?? '');
  return out.filter(Boolean);
}

/** The first picture of a message: a gallery item, a thumbnail, an image attachment or embed image. */
function picture(data) {
  let found;
  const walk = (cs) => {
    for (const c of cs ?? []) {
      if (found) return;
      if (c.type === 12) found = c.items?.find((i) => !i.spoiler)?.media?.url;
      else if (c.type === 11 && !c.spoiler) found = c.media?.url;
      walk(c.components);
      if (c.accessory) walk([c.accessory]);
    }
  };
  walk(data.components);
  found ??= (data.attachments ?? []).find((a) => (a.content_type ?? '').startsWith('image/'))?.url;
  found ??= (data.embeds ?? []).find((e) => e.image?.url)?.image.url;
  return found;
}

/**
 * The first message's opening lines, markdown drawn then read as text (no `**`, no backslashes),
 * its line breaks kept as the client keeps them in a post's preview (which it cuts after a few lines).
 */
function previewText(data, md) {
  return texts(data)
    .join('\n')
    .split('\n')
    .map((line) => {
      const div = el('div');
      div.append(markdown(line, md));
      return (div.textContent ?? '').replace(/\s+/g, ' ').trim();
    })
    .filter(Boolean)
    .join('\n');
}

const tagChip = (name) => el('span', { class: 'forum-tag', 'data-tag': name, text: name });

/**
 * @param view { channel, tags, posts, filter: Set<tag id>, now }
 * @param hooks { open(postId), toggleTag(tagId), md, author(data) }
 */
export function renderForum(view, hooks) {
  const tagName = new Map(view.tags.map((t) => [t.id, t.name]));
  const shown = view.posts.filter(
    (p) => view.filter.size === 0 || p.appliedTags.some((t) => view.filter.has(t)),
  );
  const filters = el(
    'div',
    { class: 'forum-filters', role: 'group', 'aria-label': 'Filter posts by tag' },
    ...view.tags.map((t) =>
      el('button', {
        type: 'button',
        class: 'forum-tag filter',
        'data-tag': t.name,
        'aria-pressed': String(view.filter.has(t.id)),
        text: t.name,
        onclick: () => hooks.toggleTag(t.id),
      }),
    ),
  );
  const post = (p) => {
    const first = p.first ?? {};
    const pic = picture(first);
    const author = first.author ? hooks.author(first) : '';
    return el(
      'article',
      {
        class: 'forum-post',
        'data-post': p.id,
        tabindex: '0',
        role: 'link',
        'aria-label': p.name,
        onclick: () => hooks.open(p.id),
        onkeydown: (e) => e.key === 'Enter' && hooks.open(p.id),
      },
      el(
        'div',
        { class: 'forum-post-main' },
        p.appliedTags.length
          ? el('div', { class: 'forum-tags' }, ...p.appliedTags.map((id) => tagChip(tagName.get(id) ?? id)))
          : null,
        el('h3', { class: 'forum-post-title', text: p.name }),
        el(
          'p',
          { class: 'forum-post-preview' },
          author ? el('span', { class: 'forum-author', text: `${author}: ` }) : null,
          el('span', { text: previewText(first, hooks.md) }),
        ),
        el(
          'div',
          { class: 'forum-post-footer' },
          icon('chat', 16),
          el('span', { class: 'forum-count', text: String(p.messageCount) }),
          first.timestamp
            ? el('span', { class: 'muted', text: `· ${relativeTime(Date.parse(first.timestamp), view.now)}` })
            : null,
          p.locked ? el('span', { class: 'muted', text: '· locked' }) : null,
        ),
      ),
      pic ? el('img', { class: 'forum-thumb', src: pic, alt: '', loading: 'lazy' }) : null,
    );
  };
  const root = el(
    'div',
    { class: `forum${view.channel?.type === 16 ? ' media' : ''}` },
    el(
      'div',
      { class: 'forum-head' },
      el('div', { class: 'forum-search', text: 'Posts are made by the bot: one for each finished job.' }),
      view.tags.length ? filters : null,
    ),
    shown.length
      ? el('div', { class: 'forum-posts' }, ...shown.map(post))
      : el(
          'div',
          { class: 'forum-empty' },
          el('div', { class: 'welcome-icon' }, icon('forum', 40)),
          el('h2', { text: view.posts.length ? 'No posts with these tags' : 'No posts yet' }),
          el('p', {
            text: 'Finish a job (/upscale, /extend-song, /extend-video): its result is posted here, tagged with its operation.',
          }),
        ),
  );
  emojify(root);
  return root;
}

export { tagChip };
