import { z } from 'zod';

/**
 * Discord CDN attachment links are signed and expire (~24 h): query params
 * `ex` (expiry, hex unix seconds), `is` (issued) and `hm` (signature). Before a
 * session is submitted its expiring links are renewed with
 * `POST /attachments/refresh-urls {attachment_urls:[…]}` →
 * `{refreshed_urls:[{original, refreshed}]}`.
 */

/** Calls Discord's refresh endpoint with the bot's REST; returns the raw JSON answer. */
export type RefreshUrls = (urls: string[]) => Promise<unknown>;

/** Discord accepts at most 50 links per call. */
const BATCH = 50;

const refreshResponseSchema = z.object({
  refreshed_urls: z.array(z.looseObject({ original: z.string(), refreshed: z.string() })),
});

/** A RefreshUrls on a discord.js / @discordjs/rest REST instance (`client.rest`). */
export function restRefreshUrls(rest: {
  post(route: `/${string}`, options: { body: unknown }): Promise<unknown>;
}): RefreshUrls {
  return (urls) => rest.post('/attachments/refresh-urls', { body: { attachment_urls: urls } });
}

/**
 * A Discord attachment link without its signature (`ex`, `is`, `hm`): on its own it opens
 * nothing, only the bot's `refresh-urls` signs it again. What a session keeps of a photo it
 * has not sent yet (the original, with its EXIF and GPS). Other links are returned as given.
 */
export function unsignedLink(url: string): { url: string; stripped: boolean } {
  if (discordUrlExpiry(url) === undefined) return { url, stripped: false };
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  return { url: u.toString(), stripped: true };
}

/** Epoch ms at which a signed Discord CDN link stops working, or undefined for other links. */
export function discordUrlExpiry(url: string): number | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const ex = u.searchParams.get('ex');
  if (!ex || !/^[0-9a-f]{1,12}$/i.test(ex)) return undefined;
  return Number.parseInt(ex, 16) * 1000;
}

export function needsRefresh(url: string, now: number, marginMs: number): boolean {
  const expiry = discordUrlExpiry(url);
  return expiry !== undefined && expiry - marginMs <= now;
}

const pathKey = (url: string): string | undefined => {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname}`;
  } catch {
    return undefined;
  }
};

/**
 * The renewed link of each given link that expires within `marginMs` (keys are
 * the given links). Links Discord did not renew are absent. Throws what
 * `refresh` throws, or an Error when the answer has an unexpected shape.
 */
export async function refreshExpiring(
  urls: readonly string[],
  refresh: RefreshUrls,
  now: number,
  marginMs: number,
): Promise<Map<string, string>> {
  return refreshLinks(
    urls.filter((u) => needsRefresh(u, now, marginMs)),
    refresh,
  );
}

/**
 * A signed link for each given Discord attachment link (keys are the given links), expired
 * or stripped of its signature alike; links Discord did not renew are absent.
 */
export async function refreshLinks(
  urls: readonly string[],
  refresh: RefreshUrls,
): Promise<Map<string, string>> {
  const due = [...new Set(urls)];
  const out = new Map<string, string>();
  for (let i = 0; i < due.length; i += BATCH) {
    const batch = due.slice(i, i + BATCH);
    const parsed = refreshResponseSchema.safeParse(await refresh(batch));
    if (!parsed.success) throw new Error('Discord answered the link refresh with an unexpected shape');
    const byPath = new Map<string, string>();
    for (const r of parsed.data.refreshed_urls) {
      const k = pathKey(r.original);
      if (k !== undefined) byPath.set(k, r.refreshed);
    }
    for (const original of batch) {
      const exact = parsed.data.refreshed_urls.find((r) => r.original === original)?.refreshed;
      const k = pathKey(original);
      const renewed = exact ?? (k !== undefined ? byPath.get(k) : undefined);
      if (renewed !== undefined) out.set(original, renewed);
    }
  }
  return out;
}
