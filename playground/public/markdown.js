// Discord's markdown, parsed into a small tree and drawn with DOM text nodes (nothing is ever
// inserted as HTML, so a message cannot inject markup). The rules follow the client's
// simple-markdown grammar: backslash escapes, code blocks and spans, block quotes (`> `, `>>> `),
// headers (`#`, `##`, `###`), subtext (`-# `), lists, bold, italic, underline, strikethrough,
// spoilers, masked links, bare and `<…>` links, user/role/channel/command mentions, custom emoji
// and `<t:unix:style>` timestamps.

import { el, icon } from './dom.js';
import { formatTimestamp, fullDate } from './time.js';

// ------------------------------------------------------------------ parsing

const text = (t) => ({ type: 'text', text: t });

/** Inline rules, tried in order at each position; the first match wins. */
const INLINE = [
  // `\*` shows `*`: a backslash before any ASCII punctuation (or other non-word, non-space character).
  { type: 'escape', re: /^\\([^0-9A-Za-z\s])/, node: (m) => text(m[1]) },
  {
    type: 'codeBlock',
    re: /^```(?:([a-z0-9_+\-.#]+?)\n)?\n*([^]+?)\n*```/i,
    node: (m) => ({ type: 'codeBlock', lang: m[1] ?? '', text: m[2] }),
  },
  { type: 'code', re: /^(`+)([^]*?[^`])\1(?!`)/, node: (m) => ({ type: 'code', text: m[2].trim() || m[2] }) },
  {
    type: 'link',
    re: /^\[((?:\\[^]|[^[\]\\])+)\]\(\s*<?(https?:\/\/[^\s<>()]+(?:\([^\s<>()]*\)[^\s<>()]*)*)>?\s*\)/,
    node: (m, parse) => ({ type: 'link', url: m[2], children: parse(m[1], { noLinks: true }) }),
    skip: (state) => state.noLinks,
  },
  {
    type: 'autolink',
    re: /^<(https?:\/\/[^\s>]+)>/,
    node: (m) => ({ type: 'url', url: m[1], suppressed: true }),
  },
  {
    type: 'url',
    re: /^https?:\/\/[^\s<]+[^<.,:;"')\]\s]/,
    node: (m) => ({ type: 'url', url: m[0], suppressed: false }),
    skip: (state) => state.noLinks,
  },
  { type: 'user', re: /^<@!?(\d{1,20})>/, node: (m) => ({ type: 'userMention', id: m[1] }) },
  { type: 'role', re: /^<@&(\d{1,20})>/, node: (m) => ({ type: 'roleMention', id: m[1] }) },
  { type: 'channel', re: /^<#(\d{1,20})>/, node: (m) => ({ type: 'channelMention', id: m[1] }) },
  {
    type: 'command',
    re: /^<\/([-_\p{L}\p{N}]+(?: [-_\p{L}\p{N}]+){0,2}):(\d{1,20})>/u,
    node: (m) => ({ type: 'commandMention', name: m[1], id: m[2] }),
  },
  {
    type: 'emoji',
    re: /^<(a?):(\w{2,32}):(\d{1,20})>/,
    node: (m) => ({ type: 'emoji', name: m[2], id: m[3], animated: m[1] === 'a' }),
  },
  {
    type: 'timestamp',
    re: /^<t:(-?\d{1,13})(?::([tTdDfFR]))?>/,
    node: (m) => ({ type: 'timestamp', unix: Number(m[1]), style: m[2] ?? 'f' }),
  },
  { type: 'everyone', re: /^@(everyone|here)\b/, node: (m) => ({ type: 'everyone', text: m[0] }) },
  {
    type: 'strong',
    re: /^\*\*([^]+?)\*\*(?!\*)/,
    node: (m, parse) => ({ type: 'strong', children: parse(m[1]) }),
  },
  { type: 'underline', re: /^__([^]+?)__(?!_)/, node: (m, parse) => ({ type: 'u', children: parse(m[1]) }) },
  {
    type: 'em',
    re: /^\*(?=\S)((?:\*\*|\\[^]|\s+(?:\\[^]|[^\s*\\]|\*\*)|[^\s*\\])+?)\*(?!\*)/,
    node: (m, parse) => ({ type: 'em', children: parse(m[1]) }),
  },
  {
    // `_x_` only between non-word characters: snake_case_words stay as they are.
    type: 'emUnderscore',
    re: /^_((?:__|\\[^]|[^\\_])+?)_(?![0-9A-Za-z])/,
    node: (m, parse) => ({ type: 'em', children: parse(m[1]) }),
    skip: (state, prev) => /[0-9A-Za-z]/.test(prev),
  },
  { type: 'strike', re: /^~~([^]+?)~~/, node: (m, parse) => ({ type: 's', children: parse(m[1]) }) },
  {
    type: 'spoiler',
    re: /^\|\|([^]+?)\|\|/,
    node: (m, parse) => ({ type: 'spoiler', children: parse(m[1]) }),
  },
  // Plain text up to the next character that may start a rule (simple-markdown's text rule).
  { type: 'text', re: /^[^]+?(?=[^0-9A-Za-z\s\u00c0-\uffff]|\n|\w+:\S|$)/, node: (m) => text(m[0]) },
];

/** Block rules: only at the start of a line, and not in single-line contexts (titles, names). */
const BLOCK = [
  {
    type: 'quoteRest',
    re: /^>>> ([^]*)$/,
    node: (m, parse) => ({ type: 'quote', children: parse(m[1], { inQuote: true }) }),
    skip: (state) => state.inQuote,
  },
  {
    type: 'quote',
    re: /^> [^\n]*(?:\n> [^\n]*)*\n?/,
    node: (m, parse) => ({
      type: 'quote',
      children: parse(m[0].replace(/\n$/, '').replace(/^> /gm, ''), { inQuote: true }),
    }),
    skip: (state) => state.inQuote,
  },
  {
    type: 'heading',
    re: /^(#{1,3}) +([^\n]+?)(?:\n|$)/,
    node: (m, parse) => ({ type: 'heading', level: m[1].length, children: parse(m[2], { inline: true }) }),
  },
  {
    type: 'subtext',
    re: /^-# +([^\n]+?)(?:\n|$)/,
    node: (m, parse) => ({ type: 'subtext', children: parse(m[1], { inline: true }) }),
  },
  {
    type: 'listItem',
    re: /^( *)([*-]|\d{1,9}\.) +([^\n]*)(?:\n|$)/,
    node: (m, parse) => ({
      type: 'listItem',
      depth: Math.min(Math.floor(m[1].length / 2), 3),
      ordered: m[2].endsWith('.'),
      start: m[2].endsWith('.') ? Number(m[2].slice(0, -1)) : 1,
      children: parse(m[3], { inline: true }),
    }),
  },
];

function pushNode(out, node) {
  const last = out[out.length - 1];
  if (node.type === 'text' && last?.type === 'text') last.text += node.text;
  else out.push(node);
}

/** Consecutive list items become one list (ordered or not, as its first item). */
function groupLists(nodes) {
  const out = [];
  for (const n of nodes) {
    const last = out[out.length - 1];
    if (n.type === 'listItem') {
      if (last?.type === 'list' && last.ordered === n.ordered) last.items.push(n);
      else out.push({ type: 'list', ordered: n.ordered, start: n.start, items: [n] });
    } else out.push(n);
  }
  return out;
}

/**
 * Markdown source → tree. `inline: true` for single-line places (embed titles, field names):
 * no quotes, headers, subtext or lists.
 */
export function parse(src, state = {}) {
  const nodes = [];
  const sub = (s, extra = {}) => parse(s, { ...state, ...extra });
  let i = 0;
  while (i < src.length) {
    const rest = src.slice(i);
    const prev = src[i - 1] ?? '';
    const lineStart = i === 0 || prev === '\n';
    let matched = false;
    if (lineStart && !state.inline) {
      for (const rule of BLOCK) {
        if (rule.skip?.(state, prev)) continue;
        const m = rule.re.exec(rest);
        if (!m) continue;
        nodes.push(rule.node(m, sub));
        i += m[0].length;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    for (const rule of INLINE) {
      if (rule.skip?.(state, prev)) continue;
      const m = rule.re.exec(rest);
      if (!m || m[0].length === 0) continue;
      const node = rule.node(m, sub);
      pushNode(nodes, node);
      i += m[0].length;
      // A code block is a block: the line break right after it is part of it.
      if (node.type === 'codeBlock' && src[i] === '\n') i++;
      matched = true;
      break;
    }
    if (!matched) {
      pushNode(nodes, text(src[i]));
      i++;
    }
  }
  return groupLists(nodes);
}

// ------------------------------------------------------------------ drawing

/**
 * The context a drawing needs: names for ids and how links inside the page work.
 * @typedef {{ userName(id: string): string, channelName(id: string): string | undefined,
 *   jumpTarget(url: string): { channelId: string, messageId?: string } | null }} MarkdownContext
 */

const SAFE_URL = /^https?:\/\//i;

function link(url, children, ctx, cls) {
  const jump = ctx.jumpTarget?.(url);
  const a = el('a', {
    href: SAFE_URL.test(url) ? url : '#',
    class: cls,
    target: jump ? undefined : '_blank',
    rel: 'noopener noreferrer',
    title: url,
    dataset: jump
      ? { jumpChannel: jump.channelId, ...(jump.messageId ? { jumpMessage: jump.messageId } : {}) }
      : {},
  });
  a.append(...children);
  return a;
}

function drawNode(n, ctx) {
  const kids = (children) => draw(children, ctx);
  switch (n.type) {
    case 'text':
      return document.createTextNode(n.text);
    case 'strong':
      return el('strong', {}, kids(n.children));
    case 'em':
      return el('em', {}, kids(n.children));
    case 'u':
      return el('u', {}, kids(n.children));
    case 's':
      return el('s', {}, kids(n.children));
    case 'spoiler': {
      const s = el('span', { class: 'spoiler', role: 'button', tabindex: '0', 'aria-label': 'Spoiler' });
      s.append(kids(n.children));
      const reveal = () => s.classList.add('revealed');
      s.addEventListener('click', reveal);
      s.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && reveal());
      return s;
    }
    case 'code':
      return el('code', { class: 'inline-code', text: n.text });
    case 'codeBlock':
      return el(
        'pre',
        { class: 'code-block' },
        el('code', { 'data-lang': n.lang || undefined, text: n.text }),
      );
    case 'link':
      return link(n.url, [kids(n.children)], ctx, 'md-link');
    case 'url': {
      const jump = ctx.jumpTarget?.(n.url);
      // A message link shows as a pill naming its channel, as the client draws it.
      if (jump && !n.suppressed) {
        const name = ctx.channelName(jump.channelId);
        if (name !== undefined)
          return link(
            n.url,
            [
              icon('hash', 14),
              name,
              ...(jump.messageId ? [el('span', { class: 'chevron', text: '›' }), icon('chat', 14)] : []),
            ],
            ctx,
            'mention channel-link',
          );
      }
      return link(n.url, [n.url], ctx, 'md-link');
    }
    case 'userMention':
      return el('span', { class: 'mention', 'data-user-id': n.id, text: `@${ctx.userName(n.id)}` });
    case 'roleMention':
      return el('span', { class: 'mention', text: '@unknown-role' });
    case 'channelMention': {
      const name = ctx.channelName(n.id);
      return el(
        'a',
        { href: '#', class: 'mention', dataset: { jumpChannel: n.id } },
        icon('hash', 14),
        name ?? 'unknown',
      );
    }
    case 'commandMention':
      return el('span', { class: 'mention command', text: `/${n.name}` });
    case 'emoji':
      return el('span', { class: 'emoji', title: `:${n.name}:`, text: `:${n.name}:` });
    case 'timestamp':
      return el('time', {
        class: 'timestamp',
        datetime: new Date(n.unix * 1000).toISOString(),
        title: fullDate(n.unix * 1000),
        dataset: { unix: String(n.unix), style: n.style },
        text: formatTimestamp(n.unix, n.style),
      });
    case 'everyone':
      return el('span', { class: 'mention', text: n.text });
    case 'heading':
      return el(`h${n.level}`, { class: `md-h${n.level}` }, kids(n.children));
    case 'subtext':
      return el('small', { class: 'subtext' }, kids(n.children));
    case 'quote':
      return el('div', { class: 'quote' }, el('blockquote', {}, kids(n.children)));
    case 'list':
      return el(
        n.ordered ? 'ol' : 'ul',
        { class: 'md-list', start: n.ordered && n.start !== 1 ? String(n.start) : undefined },
        n.items.map((item) =>
          el(
            'li',
            { style: item.depth ? { marginLeft: `${item.depth * 16}px` } : undefined },
            kids(item.children),
          ),
        ),
      );
    default:
      return document.createTextNode('');
  }
}

export function draw(nodes, ctx) {
  const frag = document.createDocumentFragment();
  for (const n of nodes) frag.append(drawNode(n, ctx));
  return frag;
}

/** Markdown source → a fragment of safe DOM. */
export function markdown(src, ctx, opts = {}) {
  return draw(parse(String(src ?? ''), { inline: opts.inline ?? false }), ctx);
}

/** Re-renders relative timestamps (`<t:…:R>`) in place. */
export function refreshRelativeTimes(root) {
  for (const t of root.querySelectorAll('time.timestamp[data-style="R"]'))
    t.textContent = formatTimestamp(Number(t.dataset.unix), 'R');
}
