// Embeds laid out as the Discord client lays them out: a colour bar; provider, author, title,
// description; fields in rows (consecutive `inline` fields share a row, up to 3, or 2 beside a
// thumbnail; a field with `inline: false` has its own row); the thumbnail at the right; the image
// below (embeds sharing a `url` become one gallery of up to 4 images); the footer with its time.

import { el } from './dom.js';
import { markdown } from './markdown.js';
import { image, video } from './media.js';
import { messageTime } from './time.js';

const hex = (n) => `#${n.toString(16).padStart(6, '0')}`;
const SAFE = /^https?:\/\//i;

/** Rows of fields: arrays of { field, column } where column is a CSS grid-column on a 12-column grid. */
export function fieldRows(fields, withThumbnail) {
  const perRow = withThumbnail ? 2 : 3;
  const rows = [];
  let row = [];
  const flush = () => {
    if (row.length) rows.push(row);
    row = [];
  };
  for (const f of fields) {
    if (!f.inline) {
      flush();
      rows.push([f]);
      continue;
    }
    if (row.length === perRow) flush();
    row.push(f);
  }
  flush();
  return rows.map((r) =>
    r.map((field, i) => {
      const span = 12 / r.length;
      return { field, column: `${1 + i * span} / ${1 + (i + 1) * span}` };
    }),
  );
}

function fieldsNode(fields, withThumbnail, ctx) {
  const box = el('div', { class: 'embed-fields' });
  for (const row of fieldRows(fields, withThumbnail))
    for (const { field, column } of row)
      box.append(
        el(
          'div',
          { class: `embed-field${field.inline ? ' inline' : ''}`, style: { gridColumn: column } },
          el('div', { class: 'embed-field-name' }, markdown(field.name, ctx.md, { inline: true })),
          el('div', { class: 'embed-field-value' }, markdown(field.value, ctx.md)),
        ),
      );
  return box;
}

function galleryNode(images) {
  if (images.length === 1)
    return el('div', { class: 'embed-image' }, image(images[0], { maxW: 400, maxH: 300 }));
  return el(
    'div',
    { class: `embed-gallery n${images.length}` },
    images.map((m) => image(m, { maxW: 400, maxH: 300, cls: 'gallery-cell' })),
  );
}

function embedNode(e, images, ctx) {
  const thumb = e.thumbnail?.url ? e.thumbnail : undefined;
  const box = el('article', {
    class: `embed${thumb ? ' has-thumbnail' : ''}`,
    style: typeof e.color === 'number' ? { borderLeftColor: hex(e.color) } : undefined,
  });
  if (e.provider?.name)
    box.append(
      el(
        'div',
        { class: 'embed-provider' },
        e.provider.url && SAFE.test(e.provider.url)
          ? el('a', {
              href: e.provider.url,
              target: '_blank',
              rel: 'noopener noreferrer',
              text: e.provider.name,
            })
          : e.provider.name,
      ),
    );
  if (e.author?.name)
    box.append(
      el(
        'div',
        { class: 'embed-author' },
        e.author.icon_url && SAFE.test(e.author.proxy_icon_url ?? e.author.icon_url)
          ? el('img', {
              class: 'embed-author-icon',
              src: e.author.proxy_icon_url ?? e.author.icon_url,
              alt: '',
            })
          : null,
        e.author.url && SAFE.test(e.author.url)
          ? el('a', { href: e.author.url, target: '_blank', rel: 'noopener noreferrer', text: e.author.name })
          : el('span', { text: e.author.name }),
      ),
    );
  if (e.title) {
    const title = markdown(e.title, ctx.md, { inline: true });
    box.append(
      el(
        'div',
        { class: 'embed-title' },
        e.url && SAFE.test(e.url)
          ? el('a', { href: e.url, target: '_blank', rel: 'noopener noreferrer' }, title)
          : title,
      ),
    );
  }
  if (e.description) box.append(el('div', { class: 'embed-description' }, markdown(e.description, ctx.md)));
  if (Array.isArray(e.fields) && e.fields.length) box.append(fieldsNode(e.fields, Boolean(thumb), ctx));
  if (images.length) box.append(galleryNode(images));
  else if (e.video?.url) box.append(video(e.video.url, { cls: 'embed-video' }));
  if (thumb) box.append(el('div', { class: 'embed-thumbnail' }, image(thumb, { maxW: 80, maxH: 80 })));
  if (e.footer?.text || e.timestamp) {
    const parts = [e.footer?.text, e.timestamp ? messageTime(e.timestamp) : undefined].filter(Boolean);
    box.append(
      el(
        'div',
        { class: 'embed-footer' },
        e.footer?.icon_url && SAFE.test(e.footer.proxy_icon_url ?? e.footer.icon_url)
          ? el('img', {
              class: 'embed-footer-icon',
              src: e.footer.proxy_icon_url ?? e.footer.icon_url,
              alt: '',
            })
          : null,
        el('span', { text: parts.join(' • ') }),
      ),
    );
  }
  return box;
}

/**
 * A message's embeds. Like the client, embeds with the same `url` merge into the first one's
 * image gallery (up to 4 images); the later ones show nothing else.
 */
export function renderEmbeds(embeds, ctx) {
  const groups = [];
  for (const e of embeds) {
    // A posted image link's embed is the picture alone, no embed box around it.
    if (e.type === 'image' && e.thumbnail?.url) {
      groups.push({ picture: e });
      continue;
    }
    const group = e.url ? groups.find((g) => g.embed?.url === e.url && g.images.length < 4) : undefined;
    if (group && e.image?.url) {
      group.images.push(e.image);
      continue;
    }
    groups.push({ embed: e, images: e.image?.url ? [e.image] : [] });
  }
  return groups.map((g) =>
    g.picture
      ? image({ ...g.picture.thumbnail, url: g.picture.url }, { maxW: 400, maxH: 300, alt: 'image' })
      : embedNode(g.embed, g.images, ctx),
  );
}
