/** Shared pieces of the benchmarks. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Keyv } from 'keyv';
import KeyvRedis from '@keyv/redis';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from '../test/emulator/server.js';
import { REDIS_URL, eventually, type Harness } from '../test/helpers/harness.js';
import type { JobRecord } from '../src/services/store/types.js';

export const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
export const r1 = (n: number) => Math.round(n * 10) / 10;
export const mib = (bytes: number) => r1(bytes / 1048576);

export async function redisAnswers(): Promise<boolean> {
  const kv = new Keyv({
    store: new KeyvRedis(REDIS_URL, { throwOnConnectError: true }),
    throwOnErrors: true,
  });
  try {
    await Promise.race([
      kv.get('ping'),
      new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 1500)),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    await kv.disconnect().catch(() => undefined);
  }
}

/**
 * Runs `count` /extend-song commands through the fake Discord (spread over
 * `channels`), holds the emulator's tasks, and resolves once every job is
 * submitted and has its message. Also returns each interaction's ack time
 * (INTERACTION_CREATE sent → callback received), in ms.
 */
export async function startJobs(
  h: Harness,
  channels: string[],
  count: number,
): Promise<{ jobs: JobRecord[]; ackMs: number[] }> {
  h.emulator.setScenario({ hold: true, dropWebhooks: 'all' });
  const sent: { at: number; handle: ReturnType<Harness['fake']['sendCommand']> }[] = [];
  for (let i = 0; i < count; i++) {
    const at = Date.now();
    const handle = h.fake.sendCommand({
      name: 'extend-song',
      channelId: channels[i % channels.length] ?? h.fake.defaultChannelId,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    sent.push({ at, handle });
  }
  const jobs = await eventually(
    async () => {
      const all = await h.app.context.store.listUnfinished();
      const ready = all.filter((j) => j.taskId && j.message.messageId && j.state === 'queued');
      return ready.length >= count ? ready : undefined;
    },
    120_000,
    'jobs submitted',
  );
  const ackMs = sent.map((s) => (s.handle.callback?.at ?? NaN) - s.at);
  return { jobs, ackMs };
}

export function finishedBody(taskId: string) {
  const f = (n: number) => `https://files.example/${taskId}-${n}`;
  return {
    task_id: taskId,
    task_type: 'song',
    status: 'finished',
    video_url: f(0),
    songs: [1, 2].map((n) => ({
      song_id: `${taskId}-s${n}`,
      lyrics: 'la la la',
      audio_url: `${f(n)}.mp3`,
      image_url: `${f(n)}.png`,
      video_url: `${f(n)}.mp4`,
    })),
  };
}

export interface LoadResult {
  rps: number;
  total: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  p50: number;
  p99: number;
}

/** Runs autocannon (bench/load-worker.ts) in a child process against `url`. */
export function loadFromChild(spec: {
  url: string;
  pathPrefix: string;
  jobs: { id: string; secret: string; taskId: string }[];
  connections: number;
  durationSec: number;
}): Promise<LoadResult> {
  const worker = fileURLToPath(new URL('./load-worker.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', worker, JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`load worker exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as LoadResult);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}
