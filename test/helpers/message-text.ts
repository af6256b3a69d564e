/**
 * Reading a message the way a member sees it, whether it is classic (content,
 * embeds, rows of buttons) or a Components V2 card (Text Displays, a Media Gallery,
 * buttons inside a Container): for tests that assert on what a message says.
 * Works on the fake's FakeMessage (its `data`), a rendered payload, or any wire body.
 */

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Every component of a tree, depth first (children, a section's accessory). */
export function walkComponents(components: unknown): Obj[] {
  const out: Obj[] = [];
  const visit = (c: unknown): void => {
    if (!isObj(c)) return;
    out.push(c);
    for (const child of arr(c['components'])) visit(child);
    if (isObj(c['accessory'])) visit(c['accessory']);
  };
  for (const c of arr(components)) visit(c);
  return out;
}

/** The body to read: a FakeMessage-like `{ data }`, or the body itself. */
function bodyOf(m: unknown): Obj {
  if (isObj(m) && isObj(m['data'])) return m['data'];
  return isObj(m) ? m : {};
}

function embedText(e: Obj): string[] {
  const out: string[] = [];
  const author = isObj(e['author']) ? str(e['author']['name']) : undefined;
  for (const s of [author, str(e['title']), str(e['url']), str(e['description'])]) if (s) out.push(s);
  for (const f of arr(e['fields'])) {
    if (!isObj(f)) continue;
    out.push(`${str(f['name']) ?? ''}: ${str(f['value']) ?? ''}`);
  }
  for (const key of ['image', 'thumbnail']) {
    const media = e[key];
    if (isObj(media) && str(media['url'])) out.push(String(media['url']));
  }
  const footer = isObj(e['footer']) ? str(e['footer']['text']) : undefined;
  if (footer) out.push(footer);
  return out;
}

function componentText(c: Obj): string[] {
  switch (c['type']) {
    case 10:
      return [str(c['content']) ?? ''];
    case 2:
      return [str(c['label']), str(c['url'])].filter((s): s is string => s !== undefined);
    case 11: {
      const media = isObj(c['media']) ? str(c['media']['url']) : undefined;
      return media ? [media] : [];
    }
    case 12:
      return arr(c['items']).flatMap((item) => {
        if (!isObj(item)) return [];
        const media = isObj(item['media']) ? str(item['media']['url']) : undefined;
        return [str(item['description']), media].filter((s): s is string => s !== undefined);
      });
    case 13: {
      const file = isObj(c['file']) ? str(c['file']['url']) : undefined;
      return file ? [file] : [];
    }
    default:
      return [];
  }
}

/**
 * Everything a message says, one piece a line: its content, its embeds (title,
 * description, fields, image URLs, footer), and its components' text (Text Displays,
 * button labels and links, gallery items and their URLs, files).
 */
export function messageText(m: unknown): string {
  const body = bodyOf(m);
  const parts: string[] = [];
  const content = str(body['content']);
  if (content) parts.push(content);
  for (const e of arr(body['embeds'])) if (isObj(e)) parts.push(...embedText(e));
  for (const c of walkComponents(body['components'])) parts.push(...componentText(c));
  return parts.join('\n');
}

/** The custom_ids of a message's buttons and menus, in order (nested ones too). */
export function customIds(m: unknown): string[] {
  return walkComponents(bodyOf(m)['components']).flatMap((c) => {
    const id = str(c['custom_id']);
    return id ? [id] : [];
  });
}

/** The labels of a message's buttons, in order. */
export function buttonLabels(m: unknown): string[] {
  return walkComponents(bodyOf(m)['components']).flatMap((c) => {
    const label = c['type'] === 2 ? str(c['label']) : undefined;
    return label ? [label] : [];
  });
}

/** IS_COMPONENTS_V2 (1 << 15): the message is a card. */
export function isCardMessage(m: unknown): boolean {
  const flags = bodyOf(m)['flags'];
  return typeof flags === 'number' && (flags & (1 << 15)) !== 0;
}

/** Components in all, nested ones counted, as Discord counts them for its 40. */
export function componentCount(m: unknown): number {
  return walkComponents(bodyOf(m)['components']).length;
}

/** Characters of all Text Displays, as Discord counts them for its 4000. */
export function textDisplayLength(m: unknown): number {
  return walkComponents(bodyOf(m)['components'])
    .filter((c) => c['type'] === 10)
    .reduce((n, c) => n + (str(c['content'])?.length ?? 0), 0);
}

/**
 * A message's buttons and menus, in order, wherever they sit (top-level rows of a
 * classic message, rows inside a card's Container, a section's accessory).
 */
export function controls<T = Record<string, unknown>>(m: unknown): T[] {
  return walkComponents(bodyOf(m)['components']).filter((c) => {
    const type = c['type'];
    return typeof type === 'number' && type >= 2 && type <= 8;
  }) as T[];
}
