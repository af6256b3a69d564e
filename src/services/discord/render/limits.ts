/**
 * Discord message limits and the text/URL hygiene every rendered message goes
 * through. Pure functions, no I/O. Text that comes from outside (the media
 * service, user prompts) is untrusted: URLs must be http(s), markdown is escaped,
 * mentions are neutralised.
 */
import {
  ButtonStyle,
  ComponentType,
  MessageFlags,
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIContainerComponent,
  type APIEmbed,
  type APIEmbedField,
} from 'discord-api-types/v10';

/** A classic message (content, embeds, rows of buttons): always all four keys, so an edit replaces everything. */
export interface ClassicPayload {
  content: string;
  embeds: APIEmbed[];
  components: APIActionRowComponent<APIButtonComponent>[];
  allowed_mentions: { parse: [] };
}

/** Message flag IS_COMPONENTS_V2 (1 << 15): the message is made of layout components only. */
export const IS_COMPONENTS_V2: number = MessageFlags.IsComponentsV2;

/**
 * A Components V2 message (a result card): one Container, no content, no embeds.
 * A message that became one can never go back (Discord refuses the edit), so once
 * a job's message is a card, every later render of it is a card too.
 */
export interface CardPayload {
  flags: number;
  components: [APIContainerComponent];
  allowed_mentions: { parse: [] };
}

/** A card as an edit goes out (see editBody): the classic fields cleared. */
export type CardEdit = CardPayload & { content: null; embeds: null };

/** What the bot sends for a job's message (create or edit). */
export type MessagePayload = ClassicPayload | CardPayload;

/** Whether a message body (ours or any other) carries IS_COMPONENTS_V2. */
export function isCard(p: MessagePayload): p is CardPayload;
export function isCard(p: object): boolean;
export function isCard(p: object): boolean {
  const flags = 'flags' in p ? p.flags : undefined;
  return typeof flags === 'number' && (flags & IS_COMPONENTS_V2) !== 0;
}

/**
 * The body of an edit on the wire. Turning a classic message into a card needs its
 * classic fields cleared explicitly (`content`/`embeds` null: an absent key would keep
 * them, and Discord refuses a card with content). No `attachments` key: the message
 * keeps whatever files it has.
 */
export function editBody<T extends object>(body: T): T | (T & { content: null; embeds: null }) {
  return isCard(body) ? { ...body, content: null, embeds: null } : body;
}

export const LIMITS = {
  content: 2000,
  embeds: 10,
  embedTitle: 256,
  embedDescription: 4096,
  embedFields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footerText: 2048,
  authorName: 256,
  embedTotal: 6000,
  embedUrl: 2048,
  actionRows: 5,
  buttonsPerRow: 5,
  buttonLabel: 80,
  buttonUrl: 512,
  customId: 100,
  /** Components V2: components in all (nested ones count), characters of all Text Displays. */
  v2Components: 40,
  v2Text: 4000,
  galleryItems: 10,
  mediaDescription: 1024,
} as const;

const ELLIPSIS = '…';

// ---------------------------------------------------------------- text

/**
 * Cuts `s` to at most `max` UTF-16 units, ending with "…" when cut. Never splits a
 * surrogate pair (a lone surrogate is not valid UTF-8 on the wire).
 */
export function truncate(s: string, max: number): string {
  if (max <= 0) return '';
  if (s.length <= max) return s;
  if (max === 1) return ELLIPSIS;
  let end = max - ELLIPSIS.length;
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return s.slice(0, end).trimEnd() + ELLIPSIS;
}

/**
 * Makes untrusted text render literally in Discord markdown: inline markers,
 * masked-link brackets, `<…>` (mentions, timestamps, custom emoji) and line-start
 * block syntax (quotes, headings, lists) are backslash-escaped, and
 * `@everyone`/`@here` get a zero-width joiner so they can never become a mention.
 */
export function escapeMarkdown(s: string): string {
  return s
    .replace(/[\\*_~`|[\]<>]/g, '\\$&')
    .replace(/^(\s*)([#>+-])/gm, '$1\\$2')
    .replace(/^(\s*\d+)\./gm, '$1\\.')
    .replace(/@(everyone|here)/gi, '@\u200b$1');
}

/** Inline code span for an untrusted identifier (backticks removed, length capped). */
export function inlineCode(s: string, max = 100): string {
  const clean = truncate(s.replace(/[`\r\n]/g, ''), max);
  return clean === '' ? '`?`' : `\`${clean}\``;
}

/** A Discord user/channel/guild id. */
export function isSnowflake(s: unknown): s is string {
  return typeof s === 'string' && /^\d{1,25}$/.test(s);
}

// ---------------------------------------------------------------- URLs

const URI_CHAR = /[A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]/;
const URI_CLEAN = /^https?:\/\/[A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]+$/i;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;

function encodeUnsafe(part: string): string {
  let out = '';
  for (const ch of part) {
    if (URI_CHAR.test(ch)) out += ch;
    else
      out += encodeURIComponent(ch).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      );
  }
  return out.replace(/%(?![0-9A-Fa-f]{2})/g, '%25');
}

/**
 * The URL in a form safe to send to Discord, or `undefined` when it is not an
 * absolute http(s) URL with a host (so `javascript:`, `data:`, relative paths and
 * garbage are dropped). A clean URL is returned verbatim; anything else is
 * normalised, stripped of `user:password@` and percent-encoded so it stays a
 * valid RFC 3986 URI.
 */
export function safeHttpUrl(s: unknown): string | undefined {
  if (typeof s !== 'string' || s.length === 0 || s.length > 16_384) return undefined;
  // No scheme without a colon: most values (ids, names) are decided without the parser's throw.
  if (!s.includes(':')) return undefined;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return undefined;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') return undefined;
  const credentials = u.username !== '' || u.password !== '';
  if (!credentials && URI_CLEAN.test(s) && !BAD_PERCENT.test(s)) return s;
  // Credentials are dropped: they have no business in a public message (and
  // `https://trusted.example@evil.example/` is a classic phishing shape).
  return `${u.protocol}//${u.host}${encodeUnsafe(u.pathname)}${encodeUnsafe(u.search)}${encodeUnsafe(u.hash)}`;
}

export { isHttpUrl } from '../../shared/format.js';

/** `[label](url)` with the parentheses in the URL encoded so they cannot end the link early. */
export function maskedLink(label: string, url: string): string {
  return `[${label}](${url.replace(/\(/g, '%28').replace(/\)/g, '%29')})`;
}

// ---------------------------------------------------------------- limits

function embedTextPieces(e: APIEmbed): number {
  let n = (e.title?.length ?? 0) + (e.description?.length ?? 0);
  n += (e.footer?.text.length ?? 0) + (e.author?.name.length ?? 0);
  for (const f of e.fields ?? []) n += f.name.length + f.value.length;
  return n;
}

/** Characters Discord counts towards the 6000 limit across all embeds of a message. */
export function embedCharacters(embeds: readonly APIEmbed[]): number {
  return embeds.reduce((sum, e) => sum + embedTextPieces(e), 0);
}

function validEmbedUrl(url: string | undefined): string | undefined {
  const safe = safeHttpUrl(url);
  return safe !== undefined && safe.length <= LIMITS.embedUrl ? safe : undefined;
}

function nonEmpty(s: string): string {
  return s.trim() === '' ? '\u200b' : s;
}

function fitEmbed(input: APIEmbed): APIEmbed | undefined {
  const e: APIEmbed = { ...input };
  delete e.video;
  delete e.provider;
  if (e.type !== undefined) delete e.type;
  if (e.title !== undefined) {
    e.title = truncate(e.title, LIMITS.embedTitle);
    if (e.title === '') delete e.title;
  }
  if (e.description !== undefined) {
    e.description = truncate(e.description, LIMITS.embedDescription);
    if (e.description === '') delete e.description;
  }
  if (e.url !== undefined) {
    const url = validEmbedUrl(e.url);
    if (url === undefined) delete e.url;
    else e.url = url;
  }
  if (e.image !== undefined) {
    const url = validEmbedUrl(e.image.url);
    if (url === undefined) delete e.image;
    else e.image = { url };
  }
  if (e.thumbnail !== undefined) {
    const url = validEmbedUrl(e.thumbnail.url);
    if (url === undefined) delete e.thumbnail;
    else e.thumbnail = { url };
  }
  if (e.footer !== undefined) {
    const text = truncate(e.footer.text, LIMITS.footerText);
    const icon = validEmbedUrl(e.footer.icon_url);
    if (text === '') delete e.footer;
    else e.footer = icon === undefined ? { text } : { text, icon_url: icon };
  }
  if (e.author !== undefined) {
    const name = truncate(e.author.name, LIMITS.authorName);
    if (name === '') delete e.author;
    else {
      const author: NonNullable<APIEmbed['author']> = { name };
      const url = validEmbedUrl(e.author.url);
      const icon = validEmbedUrl(e.author.icon_url);
      if (url !== undefined) author.url = url;
      if (icon !== undefined) author.icon_url = icon;
      e.author = author;
    }
  }
  if (e.color !== undefined && !(Number.isInteger(e.color) && e.color >= 0 && e.color <= 0xffffff))
    delete e.color;
  if (e.timestamp !== undefined && Number.isNaN(Date.parse(e.timestamp))) delete e.timestamp;
  if (e.fields !== undefined) {
    const fields: APIEmbedField[] = e.fields.slice(0, LIMITS.embedFields).map((f) => {
      const field: APIEmbedField = {
        name: nonEmpty(truncate(f.name, LIMITS.fieldName)),
        value: nonEmpty(truncate(f.value, LIMITS.fieldValue)),
      };
      if (f.inline !== undefined) field.inline = f.inline;
      return field;
    });
    if (fields.length === 0) delete e.fields;
    else e.fields = fields;
  }
  const empty =
    e.title === undefined &&
    e.description === undefined &&
    e.fields === undefined &&
    e.image === undefined &&
    e.thumbnail === undefined &&
    e.footer === undefined &&
    e.author === undefined;
  return empty ? undefined : e;
}

/** A mutable handle on one text piece of an embed, for levelling the 6000 total. */
interface Piece {
  get: () => string;
  set: (s: string) => void;
}

function pieces(embeds: APIEmbed[]): Piece[] {
  const out: Piece[] = [];
  for (const e of embeds) {
    if (e.description !== undefined)
      out.push({ get: () => e.description ?? '', set: (s) => (e.description = s) });
    for (const f of e.fields ?? []) {
      out.push({ get: () => f.value, set: (s) => (f.value = s) });
      out.push({ get: () => f.name, set: (s) => (f.name = s) });
    }
    if (e.title !== undefined) out.push({ get: () => e.title ?? '', set: (s) => (e.title = s) });
    const footer = e.footer;
    if (footer !== undefined) out.push({ get: () => footer.text, set: (s) => (footer.text = s) });
    const author = e.author;
    if (author !== undefined) out.push({ get: () => author.name, set: (s) => (author.name = s) });
  }
  return out;
}

/**
 * Brings the embeds within the 6000-character total by capping every text piece at
 * the highest common length that fits ("water level"), so long lyrics give way
 * before short titles and labels do. Each piece keeps at least one character.
 */
function fitTotal(embeds: APIEmbed[]): void {
  const excess = embedCharacters(embeds) - LIMITS.embedTotal;
  if (excess <= 0) return;
  const all = pieces(embeds);
  const lengths = all.map((p) => p.get().length);
  const removedAt = (level: number): number =>
    lengths.reduce((sum, len) => sum + Math.max(0, len - level), 0);
  // Highest level that removes at least `excess` characters.
  let lo = 1;
  let hi = Math.max(1, ...lengths);
  if (removedAt(1) >= excess) {
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (removedAt(mid) >= excess) lo = mid;
      else hi = mid - 1;
    }
  }
  for (const p of all) if (p.get().length > lo) p.set(nonEmpty(truncate(p.get(), lo)));
  // Still over (only possible with absurd input): drop trailing embeds.
  while (embedCharacters(embeds) > LIMITS.embedTotal && embeds.length > 1) embeds.pop();
}

export function fitButton(b: APIButtonComponent): APIButtonComponent | undefined {
  if (b.style === ButtonStyle.Premium) return b;
  const label = b.label === undefined ? undefined : truncate(b.label, LIMITS.buttonLabel);
  if ((label === undefined || label.trim() === '') && b.emoji === undefined) return undefined;
  if (b.style === ButtonStyle.Link) {
    const url = safeHttpUrl(b.url);
    if (url === undefined || url.length > LIMITS.buttonUrl) return undefined;
    const out: APIButtonComponent = { type: ComponentType.Button, style: ButtonStyle.Link, url };
    if (label !== undefined) out.label = label;
    if (b.emoji !== undefined) out.emoji = b.emoji;
    if (b.disabled !== undefined) out.disabled = b.disabled;
    return out;
  }
  if (b.custom_id.length === 0 || b.custom_id.length > LIMITS.customId) return undefined;
  const out: APIButtonComponent = { type: ComponentType.Button, style: b.style, custom_id: b.custom_id };
  if (label !== undefined) out.label = label;
  if (b.emoji !== undefined) out.emoji = b.emoji;
  if (b.disabled !== undefined) out.disabled = b.disabled;
  return out;
}

/**
 * The final step of every render: returns a copy of `payload` that Discord will
 * accept: content ≤ 2000; ≤ 10 embeds with every per-field limit and the 6000
 * total; only http(s) embed/image/thumbnail URLs ≤ 2048; ≤ 5 rows of ≤ 5 buttons,
 * labels ≤ 80, link-button URLs http(s) ≤ 512 (others dropped), custom_id ≤ 100;
 * and no mention parsing at all.
 */
export function fitToDiscordLimits(payload: ClassicPayload): ClassicPayload {
  const embeds: APIEmbed[] = [];
  for (const e of payload.embeds) {
    if (embeds.length >= LIMITS.embeds) break;
    const fitted = fitEmbed(e);
    if (fitted !== undefined) embeds.push(fitted);
  }
  fitTotal(embeds);

  const components: APIActionRowComponent<APIButtonComponent>[] = [];
  for (const row of payload.components) {
    if (components.length >= LIMITS.actionRows) break;
    const buttons = row.components
      .map(fitButton)
      .filter((b): b is APIButtonComponent => b !== undefined)
      .slice(0, LIMITS.buttonsPerRow);
    if (buttons.length > 0) components.push({ type: ComponentType.ActionRow, components: buttons });
  }

  return {
    content: truncate(payload.content, LIMITS.content),
    embeds,
    components,
    allowed_mentions: { parse: [] },
  };
}
