/**
 * Result cards: a job's final message as a Components V2 message (one Container
 * with Text Displays, a Media Gallery and rows of buttons). `CardSpec` says what a
 * card shows; `cardPayload` lays it out within Discord's V2 limits (40 components,
 * nested ones counted; 4000 characters across all Text Displays; 10 gallery items),
 * trimming lists with "…and N more" rather than ever sending a body Discord refuses.
 * Pure functions, no I/O.
 */
import {
  ComponentType,
  SeparatorSpacingSize,
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIComponentInContainer,
  type APIFileComponent,
  type APIMediaGalleryItem,
} from 'discord-api-types/v10';
import {
  IS_COMPONENTS_V2,
  LIMITS,
  fitButton,
  maskedLink,
  safeHttpUrl,
  truncate,
  type CardPayload,
} from './limits.js';

/** An image of the card's gallery; one that cannot be shown there becomes a link named `label`. */
export interface CardMedia {
  url: string;
  label: string;
  description?: string;
}

/** A file uploaded with the card's message (multipart): shown only where a component names it. */
export interface CardFile {
  filename: string;
}

/** What a card shows, before it is fitted. Every text is already escaped and localized. */
export interface CardSpec {
  /** Container accent colour. */
  accent: number;
  /** The heading and who/what lines: always kept (capped). */
  head: string[];
  /** Main parameters, one line each: trimmed from the end ("…and N more"). */
  params: string[];
  /** The gallery: images and covers (the first 10 valid ones; the rest become links). */
  media: CardMedia[];
  /**
   * Files uploaded with the message (a gallery post): images and videos join the gallery
   * first, every other file (or one past its 10 items) is a File component. With
   * Components V2 an attachment no component names is not shown at all.
   */
  files?: CardFile[];
  /** Result links (audio, video…), one line each: kept before anything else but the head. */
  links: string[];
  /** Free text (lyrics, the service's message, an error): cut to the room left. */
  notes: string[];
  /** More lines under the notes (the job centre's timeline): trimmed from the end. */
  details: string[];
  /** Small print at the bottom (job and task ids). */
  footer?: string;
  /** Rows of buttons (next steps, Retry, the job centre's). */
  rows: APIButtonComponent[][];
  /** "…and {count} more", in the card's language. */
  more: (count: number) => string;
}

const HEAD_MAX = 1000;
const FOOTER_MAX = 200;

/** Characters of a list of lines joined by newlines. */
const joined = (lines: readonly string[]): number =>
  lines.reduce((n, l) => n + l.length, 0) + Math.max(0, lines.length - 1);

/**
 * As many lines as fit in `budget` characters, in order, then "…and N more" for the
 * rest. A line is never cut (a cut link is a broken link): one too long is left out
 * and counted. Returns [] when not even the "more" line fits.
 */
export function fitLines(lines: readonly string[], budget: number, more: (n: number) => string): string[] {
  if (joined(lines) <= budget) return [...lines];
  const out: string[] = [];
  let used = 0;
  let left = lines.length;
  for (const line of lines) {
    const reserve = more(left).length + 1;
    const cost = line.length + (out.length > 0 ? 1 : 0);
    if (used + cost + reserve > budget) continue;
    out.push(line);
    used += cost;
    left -= 1;
  }
  if (left === 0) return out;
  const tail = more(left);
  return used + tail.length + (out.length > 0 ? 1 : 0) <= budget ? [...out, tail] : out;
}

/** Components in a container with these children, nested ones counted, as Discord counts them. */
function countComponents(components: readonly APIComponentInContainer[]): number {
  let n = 1; // the container
  for (const c of components) n += 1 + (c.type === ComponentType.ActionRow ? c.components.length : 0);
  return n;
}

/** Files a Media Gallery shows (images, videos); others (audio…) are File components. */
const GALLERY_FILE = /\.(png|jpe?g|gif|webp|avif|mp4|webm|mov)$/i;

/**
 * Gallery items (attached images and videos, then valid http(s) URLs within the media
 * limit, ≤ 10), the images left to link to, and the attached files shown as File components.
 */
function splitMedia(
  media: readonly CardMedia[],
  files: readonly CardFile[],
): { items: APIMediaGalleryItem[]; rest: string[]; fileParts: APIFileComponent[] } {
  const items: APIMediaGalleryItem[] = [];
  const rest: string[] = [];
  const fileParts: APIFileComponent[] = [];
  for (const f of files) {
    const url = `attachment://${f.filename}`;
    if (GALLERY_FILE.test(f.filename) && items.length < LIMITS.galleryItems) items.push({ media: { url } });
    else fileParts.push({ type: ComponentType.File, file: { url } });
  }
  for (const m of media) {
    const url = safeHttpUrl(m.url);
    if (url === undefined) continue;
    if (items.length < LIMITS.galleryItems && url.length <= LIMITS.embedUrl) {
      const description = m.description?.trim();
      items.push({
        media: { url },
        ...(description ? { description: truncate(description, LIMITS.mediaDescription) } : {}),
      });
    } else rest.push(`🖼️ ${maskedLink(m.label, url)}`);
  }
  return { items, rest, fileParts };
}

/** Rows of valid buttons: ≤ 5 a row, every custom_id once in the whole message. */
function fitRows(rows: readonly APIButtonComponent[][]): APIActionRowComponent<APIButtonComponent>[] {
  const seen = new Set<string>();
  const out: APIActionRowComponent<APIButtonComponent>[] = [];
  for (const row of rows) {
    const buttons: APIButtonComponent[] = [];
    for (const b of row) {
      const fitted = fitButton(b);
      if (fitted === undefined || buttons.length >= LIMITS.buttonsPerRow) continue;
      if ('custom_id' in fitted) {
        if (seen.has(fitted.custom_id)) continue;
        seen.add(fitted.custom_id);
      }
      buttons.push(fitted);
    }
    if (buttons.length > 0) out.push({ type: ComponentType.ActionRow, components: buttons });
  }
  return out;
}

/**
 * The card as sent: flag IS_COMPONENTS_V2, one Container (heading, parameters,
 * gallery, links, notes, details, small print, buttons), no pings. Within every V2
 * limit whatever the spec holds.
 */
export function cardPayload(spec: CardSpec): CardPayload {
  const { items, rest, fileParts } = splitMedia(spec.media, spec.files ?? []);
  // A card always opens with some text (an empty Text Display is refused).
  const head = truncate(spec.head.filter((l) => l !== '').join('\n'), HEAD_MAX) || '\u200b';
  const footer = spec.footer ? truncate(`-# ${spec.footer}`, FOOTER_MAX) : '';
  // Text Displays are separated, so their characters simply add up; links come first
  // (every result URL should reach the member), then parameters, notes and details share the rest.
  let room = LIMITS.v2Text - head.length - footer.length;
  const links = fitLines([...spec.links, ...rest], room, spec.more);
  room -= joined(links);
  const notesText = spec.notes.filter((n) => n.trim() !== '').join('\n\n');
  const paramsWant = joined(spec.params);
  const detailsWant = joined(spec.details);
  // Parameters and details get at least a third each of what is left when all do not fit; notes the rest.
  const third = Math.floor(room / 3);
  const paramsBudget =
    paramsWant + notesText.length + detailsWant <= room
      ? paramsWant
      : Math.min(paramsWant, Math.max(third, room - notesText.length - Math.min(detailsWant, third)));
  const params = fitLines(spec.params, paramsBudget, spec.more);
  room -= joined(params);
  const detailsBudget = Math.min(detailsWant, Math.max(third, room - notesText.length));
  const details = fitLines(spec.details, detailsBudget, spec.more);
  room -= joined(details);
  const notes = truncate(notesText, Math.max(0, room));

  const text = (content: string): APIComponentInContainer[] =>
    content.trim() === '' ? [] : [{ type: ComponentType.TextDisplay, content }];
  const body: APIComponentInContainer[] = [
    ...text(head),
    ...text(params.join('\n')),
    ...(items.length > 0 ? [{ type: ComponentType.MediaGallery as const, items }] : []),
    ...fileParts,
    ...text(links.join('\n')),
    ...text(notes),
    ...text(details.join('\n')),
  ];
  if (footer !== '' || spec.rows.length > 0)
    body.push({ type: ComponentType.Separator, divider: true, spacing: SeparatorSpacingSize.Small });
  body.push(...text(footer));
  for (const row of fitRows(spec.rows)) {
    // Rows go last; one that would pass Discord's 40 components is left out.
    if (countComponents([...body, row]) > LIMITS.v2Components) break;
    body.push(row);
  }
  const last = body[body.length - 1];
  if (last?.type === ComponentType.Separator) body.pop();
  return {
    flags: IS_COMPONENTS_V2,
    components: [{ type: ComponentType.Container, accent_color: spec.accent, components: body }],
    allowed_mentions: { parse: [] },
  };
}

/** What an operation's finished result adds to its card (the rest is the same for every job). */
export interface ResultParts {
  /** The card's heading, e.g. "Upscaled images (4)". */
  title: string;
  /** Lines shown first among the parameters (e.g. the seed the service used). */
  facts: string[];
  media: CardMedia[];
  links: string[];
  notes: string[];
  /** Next-step buttons. */
  actions: APIButtonComponent[];
}
