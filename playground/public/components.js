// Message components as the client draws them: action rows of buttons (primary blurple,
// secondary grey, success green, danger red, link grey with the external-link icon; disabled
// dimmed) and select menus; and the Components V2 layout (flag 1 << 15): Container (17), Section
// (9), Text Display (10), Thumbnail (11), Media Gallery (12), File (13), Separator (14).

import { el, icon } from './dom.js';
import { markdown } from './markdown.js';
import { audioCard, fileNameOf, fileRow, image, mediaKind, video } from './media.js';

export const IS_COMPONENTS_V2 = 1 << 15;
const STYLES = { 1: 'primary', 2: 'secondary', 3: 'success', 4: 'danger', 5: 'link', 6: 'premium' };
const SAFE = /^https?:\/\//i;
const hex = (n) => `#${n.toString(16).padStart(6, '0')}`;

function emoji(e) {
  if (!e) return null;
  return el('span', { class: 'btn-emoji', text: e.id ? `:${e.name}:` : e.name });
}

function button(b, ctx, msg) {
  const style = STYLES[b.style] ?? 'secondary';
  const label = b.label ? el('span', { class: 'btn-label', text: b.label }) : null;
  if (b.style === 5) {
    const usable = !b.disabled && SAFE.test(b.url ?? '');
    return el(
      'a',
      {
        class: `btn link${b.disabled ? ' disabled' : ''}`,
        role: 'button',
        href: usable ? b.url : undefined,
        target: '_blank',
        rel: 'noopener noreferrer',
        'aria-disabled': b.disabled ? 'true' : undefined,
        title: b.url,
      },
      emoji(b.emoji),
      label,
      icon('external', 16),
    );
  }
  return el(
    'button',
    {
      type: 'button',
      class: `btn ${style}`,
      disabled: b.disabled ?? false,
      onclick: () => ctx.onButton(msg, b),
    },
    emoji(b.emoji),
    label,
  );
}

function select(s, ctx, msg) {
  if (s.type !== 3)
    return el(
      'select',
      { class: 'select', disabled: true },
      el('option', { text: s.placeholder ?? 'Make a selection' }),
    );
  return el(
    'select',
    {
      class: 'select',
      disabled: s.disabled ?? false,
      'aria-label': s.placeholder ?? 'Make a selection',
      onchange: (e) => e.target.value && ctx.onSelect(msg, s, [e.target.value]),
    },
    el('option', { value: '', text: s.placeholder ?? 'Make a selection' }),
    (s.options ?? []).map((o) =>
      el(
        'option',
        { value: o.value, title: o.description },
        `${o.emoji?.name ? `${o.emoji.name} ` : ''}${o.label}`,
      ),
    ),
  );
}

function actionRow(row, ctx, msg) {
  return el(
    'div',
    { class: 'action-row' },
    (row.components ?? []).map((c) => (c.type === 2 ? button(c, ctx, msg) : select(c, ctx, msg))),
  );
}

/** Classic messages: action rows under the content and embeds. */
export function renderActionRows(components, ctx, msg) {
  const rows = components.filter((c) => c.type === 1);
  return rows.length
    ? el(
        'div',
        { class: 'components' },
        rows.map((r) => actionRow(r, ctx, msg)),
      )
    : null;
}

// ------------------------------------------------------------------ Components V2

/** Media hidden behind a spoiler until clicked. */
function spoilered(node, on) {
  if (!on) return node;
  const wrap = el(
    'div',
    { class: 'spoiler-media', role: 'button', tabindex: '0', 'aria-label': 'Spoiler' },
    node,
    el('span', { class: 'spoiler-tag', text: 'SPOILER' }),
  );
  const reveal = (e) => {
    if (wrap.classList.contains('revealed')) return;
    e.preventDefault();
    wrap.classList.add('revealed');
  };
  wrap.addEventListener('click', reveal);
  wrap.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && reveal(e));
  return wrap;
}

/** Discord's gallery mosaic: how many items each row holds, for 1 to 10 items (3 is one big and two stacked). */
export function mosaicRows(n) {
  return (
    {
      1: [1],
      2: [2],
      4: [2, 2],
      5: [2, 3],
      6: [3, 3],
      7: [1, 3, 3],
      8: [2, 3, 3],
      9: [3, 3, 3],
      10: [1, 3, 3, 3],
    }[n] ?? []
  );
}

function galleryItem(item, cls) {
  const m = item.media ?? {};
  const kind = mediaKind(m.content_type, m.url);
  const node =
    kind === 'video'
      ? el('video', {
          src: SAFE.test(m.url ?? '') ? m.url : undefined,
          controls: true,
          preload: 'metadata',
          'aria-label': item.description ?? 'video',
        })
      : image(
          { ...m, description: item.description ?? undefined },
          { maxW: 1000, maxH: 1000, cls: 'gallery-link' },
        );
  return el('div', { class: `mosaic-item ${cls}` }, spoilered(node, item.spoiler));
}

/** A MediaGallery component; also how the client lays out a message's several images and videos. */
export function mediaGallery(c) {
  const items = (c.items ?? []).slice(0, 10);
  const box = el('div', { class: `mosaic n${items.length}` });
  if (items.length === 3) {
    box.append(...items.map((item, i) => galleryItem(item, i === 0 ? 'tall' : 'half')));
    return box;
  }
  let i = 0;
  for (const size of mosaicRows(items.length))
    for (let k = 0; k < size; k++, i++) {
      const cell = galleryItem(items[i], `row-of-${size}${items.length === 1 ? ' single' : ''}`);
      cell.style.gridColumn = `span ${6 / size}`;
      box.append(cell);
    }
  return box;
}

function fileComponent(c) {
  const f = c.file ?? {};
  const name = c.name ?? f.filename ?? fileNameOf(f.url);
  const size = c.size ?? f.size;
  const url = f.proxy_url ?? f.url;
  let node;
  switch (mediaKind(f.content_type, name)) {
    case 'audio':
      node = audioCard(url, name, size);
      break;
    case 'video':
      node = el('div', { class: 'file-video' }, fileRow(url, name, size), video(url));
      break;
    default:
      node = fileRow(url, name, size);
  }
  return spoilered(node, c.spoiler);
}

function thumbnail(c) {
  const m = c.media ?? {};
  return el(
    'div',
    { class: 'v2-thumbnail' },
    spoilered(image({ ...m, description: c.description ?? undefined }, { maxW: 85, maxH: 85 }), c.spoiler),
  );
}

function v2Node(c, ctx, msg) {
  switch (c.type) {
    case 1:
      return actionRow(c, ctx, msg);
    case 2:
      return button(c, ctx, msg);
    case 3:
    case 5:
    case 6:
    case 7:
    case 8:
      return select(c, ctx, msg);
    case 9:
      return el(
        'div',
        { class: 'v2-section' },
        el(
          'div',
          { class: 'v2-section-texts' },
          (c.components ?? []).map((t) => v2Node(t, ctx, msg)),
        ),
        c.accessory ? el('div', { class: 'v2-accessory' }, v2Node(c.accessory, ctx, msg)) : null,
      );
    case 10:
      return el('div', { class: 'v2-text' }, markdown(c.content, ctx.md));
    case 11:
      return thumbnail(c);
    case 12:
      return mediaGallery(c);
    case 13:
      return fileComponent(c);
    case 14:
      return el('div', {
        class: `v2-separator spacing-${c.spacing === 2 ? 'large' : 'small'}${c.divider === false ? '' : ' divider'}`,
        role: 'separator',
      });
    case 17: {
      const box = el(
        'div',
        {
          class: `v2-container${typeof c.accent_color === 'number' ? ' accent' : ''}`,
          style: typeof c.accent_color === 'number' ? { borderLeftColor: hex(c.accent_color) } : undefined,
        },
        (c.components ?? []).map((child) => v2Node(child, ctx, msg)),
      );
      return spoilered(box, c.spoiler);
    }
    default:
      return el('div', { class: 'v2-unknown', text: `(component type ${c.type})` });
  }
}

/** A Components V2 message: its components top to bottom, nothing else. */
export function renderV2(components, ctx, msg) {
  return el(
    'div',
    { class: 'v2' },
    components.map((c) => v2Node(c, ctx, msg)),
  );
}
