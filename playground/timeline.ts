import type { Emulator } from '../test/emulator/server.js';
import type { FakeDiscord } from '../test/fake-discord/index.js';

/**
 * Each job's timeline for the operator panel, put together from what the three
 * parts saw: the bot's own log lines (submitted, finished, failed), the
 * emulator's webhook deliveries (and their answers), and the Discord edits the
 * fake received (route and status, 429s included). A message is tied to its job
 * by the "Job <id>" footer the bot renders.
 */

export interface TimelineEvent {
  at: number;
  kind: 'bot' | 'webhook' | 'edit' | 'note';
  detail: string;
}

export interface JobTimeline {
  jobId: string;
  operation?: string;
  taskId?: string;
  events: TimelineEvent[];
}

interface BotRecord {
  time?: string;
  msg?: string;
  jobId?: string;
  taskId?: string;
  operation?: string;
}

const EDIT_INTERACTION = /^\/webhooks\/\d+\/([^/]+)\/messages\/(?:@|%40)original$/;
const EDIT_CHANNEL = /^\/channels\/\d+\/messages\/(\d+)$/;
/** "Job <uuid>": an embed's footer, or a line of a Components V2 text display (e.g. "-# AI-generated · Job …"). */
const JOB_LINE = /(?:^|[\s·])Job ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/;

/** The texts of a message that may name its job: embed footers, then V2 text displays (type 10) at any depth. */
function jobTexts(data: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const e of Array.isArray(data['embeds']) ? data['embeds'] : []) {
    const text = (e as { footer?: { text?: unknown } } | null)?.footer?.text;
    if (typeof text === 'string') out.push(text);
  }
  const walk = (c: unknown): void => {
    if (typeof c !== 'object' || c === null) return;
    const o = c as Record<string, unknown>;
    if (o['type'] === 10 && typeof o['content'] === 'string') out.push(o['content']);
    for (const child of [o['components'], o['accessory']]) {
      if (Array.isArray(child)) child.forEach(walk);
      else walk(child);
    }
  };
  if (Array.isArray(data['components'])) data['components'].forEach(walk);
  return out;
}

export class Timeline {
  readonly #records: BotRecord[] = [];
  readonly #notes: TimelineEvent[] = [];

  constructor(
    private readonly fake: FakeDiscord,
    private readonly emulator: Emulator,
  ) {}

  /** One line of the bot's JSON log. */
  botLine(line: string): void {
    if (!line.startsWith('{')) return;
    try {
      const r = JSON.parse(line) as BotRecord;
      if (r.jobId !== undefined || r.taskId !== undefined) this.#records.push(r);
      if (this.#records.length > 5000) this.#records.splice(0, 1000);
    } catch {
      // not JSON: ignore
    }
  }

  note(detail: string): void {
    this.#notes.push({ at: Date.now(), kind: 'note', detail });
  }

  notes(): TimelineEvent[] {
    return this.#notes.slice(-50);
  }

  #jobOfMessage(messageId: string | undefined): string | undefined {
    if (messageId === undefined) return undefined;
    const data = this.fake.messages.get(messageId)?.data;
    if (!data) return undefined;
    for (const text of jobTexts(data)) {
      const m = JOB_LINE.exec(text);
      if (m?.[1]) return m[1];
    }
    return undefined;
  }

  jobs(): JobTimeline[] {
    const byJob = new Map<string, JobTimeline>();
    const job = (id: string) => {
      let t = byJob.get(id);
      if (!t) byJob.set(id, (t = { jobId: id, events: [] }));
      return t;
    };
    const jobOfTask = new Map<string, string>();
    for (const r of this.#records) {
      if (r.jobId === undefined) continue;
      const t = job(r.jobId);
      if (r.operation) t.operation = r.operation;
      if (r.taskId) {
        t.taskId = r.taskId;
        jobOfTask.set(r.taskId, r.jobId);
      }
      t.events.push({ at: r.time ? Date.parse(r.time) : Date.now(), kind: 'bot', detail: r.msg ?? '' });
    }
    for (const d of this.emulator.webhookDeliveries) {
      const id = jobOfTask.get(d.taskId);
      if (!id) continue;
      const pct = d.body['percentage'];
      const outcome = d.dropped
        ? 'dropped by the switch'
        : d.ok
          ? `${d.statusCode}`
          : `${d.statusCode ?? d.error ?? 'error'}`;
      job(id).events.push({
        at: d.at,
        kind: 'webhook',
        detail: `${d.kind}${pct !== undefined ? ` ${String(pct)}%` : ''}${d.copy === 2 ? ' (duplicate)' : ''} → ${outcome}`,
      });
    }
    const tokens = new Map<string, string | null>();
    for (const i of this.fake.interactions.values()) tokens.set(i.token, i.originalMessageId);
    for (const r of this.fake.requests) {
      if (r.method !== 'PATCH') continue;
      const viaInteraction = EDIT_INTERACTION.exec(r.path);
      const viaChannel = EDIT_CHANNEL.exec(r.path);
      const messageId = viaInteraction ? (tokens.get(viaInteraction[1] ?? '') ?? undefined) : viaChannel?.[1];
      const id = this.#jobOfMessage(messageId);
      if (!id) continue;
      job(id).events.push({
        at: r.at,
        kind: 'edit',
        detail: `edit via ${viaInteraction ? 'interaction webhook' : 'channel (bot token)'} → ${r.status}${r.status === 429 ? ' rate limited' : ''}`,
      });
    }
    const out = [...byJob.values()];
    for (const t of out) t.events.sort((a, b) => a.at - b.at);
    out.sort((a, b) => (b.events[0]?.at ?? 0) - (a.events[0]?.at ?? 0));
    return out.slice(0, 30);
  }
}
