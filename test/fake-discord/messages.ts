import { isObj, isRecord, type Json, type JsonObject } from './json.js';
import type { MessageEdit, UploadedFile } from './types.js';

export const MessageFlag = {
  SuppressEmbeds: 1 << 2,
  Ephemeral: 1 << 6,
  Loading: 1 << 7,
  SuppressNotifications: 1 << 12,
  IsComponentsV2: 1 << 15,
} as const;

/** Flags a client may set when creating a message (ephemeral only through interactions). */
export const CREATE_SETTABLE_FLAGS =
  MessageFlag.SuppressEmbeds |
  MessageFlag.Ephemeral |
  MessageFlag.SuppressNotifications |
  MessageFlag.IsComponentsV2;
/** Flags a client may change by editing. */
export const EDIT_SETTABLE_FLAGS = MessageFlag.SuppressEmbeds | MessageFlag.IsComponentsV2;

/** A message as the fake stores it: the current wire object plus its history. */
export class FakeMessage {
  readonly id: string;
  readonly channelId: string;
  /** Current wire representation (what GET returns). */
  data: JsonObject;
  readonly ephemeral: boolean;
  deleted = false;
  deletedAt: number | null = null;
  /** Fake-clock creation time. */
  readonly createdAt: number;
  /** Interaction this message answers (original response or follow-up), if any. */
  readonly interactionId: string | null;
  readonly source: 'channel' | 'interaction-response' | 'interaction-followup' | 'user';
  /** Edits in order, with the route that made each one. */
  readonly edits: MessageEdit[] = [];

  constructor(init: {
    id: string;
    channelId: string;
    data: JsonObject;
    ephemeral: boolean;
    createdAt: number;
    interactionId: string | null;
    source: FakeMessage['source'];
  }) {
    this.id = init.id;
    this.channelId = init.channelId;
    this.data = init.data;
    this.ephemeral = init.ephemeral;
    this.createdAt = init.createdAt;
    this.interactionId = init.interactionId;
    this.source = init.source;
  }

  get content(): string {
    const c = this.data['content'];
    return typeof c === 'string' ? c : '';
  }

  get embeds(): JsonObject[] {
    const e = this.data['embeds'];
    return Array.isArray(e) ? e.filter(isObj) : [];
  }

  get components(): JsonObject[] {
    const c = this.data['components'];
    return Array.isArray(c) ? c.filter(isObj) : [];
  }

  get attachments(): JsonObject[] {
    const a = this.data['attachments'];
    return Array.isArray(a) ? a.filter(isObj) : [];
  }

  get flags(): number {
    const f = this.data['flags'];
    return typeof f === 'number' ? f : 0;
  }

  /** True while a deferred ("thinking…") response has not been edited yet. */
  get loading(): boolean {
    return (this.flags & MessageFlag.Loading) !== 0;
  }

  get authorId(): string | undefined {
    const author = this.data['author'];
    return isRecord(author) && typeof author['id'] === 'string' ? author['id'] : undefined;
  }
}

/** Removes null/undefined members recursively (Discord omits most null fields in what it echoes back). */
export function stripNulls(value: Json): Json {
  if (Array.isArray(value)) return value.map((v) => stripNulls(v));
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = stripNulls(v);
    return out;
  }
  return value;
}

/** Resolves a media url (`attachment://x.png` or external) to Discord's unfurled media object. */
export type MediaResolver = (url: string) => JsonObject;

export function normalizeEmbed(embed: JsonObject, resolveMedia?: MediaResolver): JsonObject {
  const out = stripNulls(embed) as JsonObject;
  out['type'] ??= 'rich';
  for (const key of ['image', 'thumbnail', 'video']) {
    const media = out[key];
    if (isObj(media) && typeof media['url'] === 'string') {
      if (resolveMedia && media['url'].startsWith('attachment://')) {
        const r = resolveMedia(media['url']);
        out[key] = { ...media, url: r['url'] ?? media['url'], proxy_url: r['proxy_url'] ?? media['url'] };
        for (const dim of ['width', 'height', 'content_type']) {
          const v = r[dim];
          if (v !== undefined && v !== null) (out[key] as JsonObject)[dim] = v;
        }
      } else if (media['proxy_url'] === undefined) {
        media['proxy_url'] = media['url'];
      }
    }
  }
  if (Array.isArray(out['fields'])) {
    out['fields'] = out['fields'].map((f) => (isObj(f) ? { inline: false, ...f } : f));
  }
  return out;
}

/**
 * Echoes components the way Discord does: numeric `id`s on every component (components v2),
 * defaults filled in (select min/max_values, separator spacing/divider, spoiler flags…) and
 * media (`attachment://…` or external urls) unfurled.
 */
export function normalizeComponents(components: Json[], resolveMedia: MediaResolver): JsonObject[] {
  const used = new Set<number>();
  const collect = (c: Json | undefined): void => {
    if (!isObj(c)) return;
    if (typeof c['id'] === 'number') used.add(c['id']);
    for (const child of [c['components'], c['component'], c['accessory']]) {
      if (Array.isArray(child)) child.forEach(collect);
      else collect(child);
    }
  };
  components.forEach(collect);
  let next = 1;
  const media = (m: Json | undefined): Json => {
    if (!isObj(m) || typeof m['url'] !== 'string') return m ?? null;
    return { ...resolveMedia(m['url']) };
  };
  const assign = (c: Json): Json => {
    if (!isObj(c)) return c;
    const out = stripNulls(c) as JsonObject;
    if (typeof out['id'] !== 'number') {
      while (used.has(next)) next++;
      out['id'] = next;
      used.add(next);
    }
    switch (out['type']) {
      case 3:
      case 5:
      case 6:
      case 7:
      case 8:
        out['min_values'] ??= 1;
        out['max_values'] ??= 1;
        break;
      case 11:
        out['media'] = media(out['media']);
        out['description'] ??= null;
        out['spoiler'] ??= false;
        break;
      case 12:
        if (Array.isArray(out['items'])) {
          out['items'] = out['items'].map((item) =>
            isObj(item) ? { description: null, spoiler: false, ...item, media: media(item['media']) } : item,
          );
        }
        break;
      case 13: {
        const file = media(out['file']);
        out['file'] = file;
        if (isObj(file)) {
          out['name'] ??= typeof file['filename'] === 'string' ? file['filename'] : null;
          out['size'] ??= typeof file['size'] === 'number' ? file['size'] : null;
          delete file['filename'];
          delete file['size'];
        }
        out['spoiler'] ??= false;
        break;
      }
      case 14:
        out['spacing'] ??= 1;
        out['divider'] ??= true;
        break;
      case 17:
        out['accent_color'] ??= null;
        out['spoiler'] ??= false;
        break;
      default:
        break;
    }
    for (const key of ['components', 'component', 'accessory']) {
      const child = out[key];
      if (Array.isArray(child)) out[key] = child.map(assign);
      else if (child !== undefined) out[key] = assign(child);
    }
    return out;
  };
  return components.filter(isObj).map((c) => assign(c) as JsonObject);
}

export function embedLength(embed: JsonObject): number {
  let n = 0;
  const add = (v: Json | undefined): void => {
    if (typeof v === 'string') n += v.length;
  };
  add(embed['title']);
  add(embed['description']);
  const footer = embed['footer'];
  if (isRecord(footer)) add(footer['text']);
  const author = embed['author'];
  if (isRecord(author)) add(author['name']);
  const fields = embed['fields'];
  if (Array.isArray(fields)) {
    for (const f of fields) {
      if (isRecord(f)) {
        add(f['name']);
        add(f['value']);
      }
    }
  }
  return n;
}

export function pngSize(bytes: Buffer): { width: number; height: number } | null {
  if (
    bytes.length >= 24 &&
    bytes.readUInt32BE(0) === 0x89504e47 &&
    bytes.toString('ascii', 12, 16) === 'IHDR'
  ) {
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  return null;
}

export function fileSummary(files: UploadedFile[]): Array<Omit<UploadedFile, 'bytes'> & { size: number }> {
  return files.map((f) => ({
    field: f.field,
    filename: f.filename,
    contentType: f.contentType,
    size: f.bytes.length,
  }));
}
