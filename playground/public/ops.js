// The operator panel beside the channel: switches (drop webhooks, Discord 429/500, stop the
// store, restart the bot), each job's timeline (submission, webhooks, edits, rate limits), notes
// and the bot's /metrics.

import { $, $$, el } from './dom.js';

const time = (ms) => new Date(ms).toLocaleTimeString();
const KIND = { bot: 'bot', webhook: 'hook', edit: 'edit', note: 'note' };

/** finished / failed / running, from the bot's own log lines of the job. */
function jobStatus(job) {
  const said = job.events
    .filter((e) => e.kind === 'bot')
    .map((e) => e.detail)
    .join(' ');
  if (/\bfailed\b/.test(said)) return 'failed';
  if (/\bfinished\b/.test(said)) return 'finished';
  return 'running';
}

export function createOps({ api }) {
  const open = new Set();
  const seen = new Set();

  async function loadTimeline() {
    const t = await api('/api/timeline');
    $('#count429').textContent = `Discord 429s: ${t.count429}`;
    const newest = t.jobs[0]?.jobId;
    if (newest && !seen.has(newest)) open.add(newest);
    for (const j of t.jobs) seen.add(j.jobId);
    $('#timeline').replaceChildren(
      ...(t.jobs.length
        ? []
        : [el('p', { class: 'muted', text: 'No jobs yet: run /extend-song or /upscale.' })]),
      ...t.jobs.map((j) => {
        const status = jobStatus(j);
        const box = el(
          'details',
          { class: 'job', open: open.has(j.jobId), 'data-job': j.jobId },
          el(
            'summary',
            {},
            el('span', { class: `job-status ${status}`, text: status }),
            el('b', { text: ` ${j.operation ?? 'job'}` }),
            el('code', { text: ` ${j.jobId.slice(0, 8)}` }),
            el('span', { class: 'muted', text: ` · ${j.events.length} events` }),
          ),
          j.taskId ? el('div', { class: 'muted', text: `task ${j.taskId}` }) : null,
          el(
            'ol',
            {},
            j.events.map((e) =>
              el(
                'li',
                {
                  class: `${e.kind}${/→ ([45]\d\d|[A-Z]{4,})|dropped/.test(e.detail) ? ' bad' : ''}`,
                  title: e.kind,
                },
                el('time', { text: time(e.at) }),
                el('span', { class: 'kind', text: ` ${KIND[e.kind] ?? e.kind} ` }),
                // "edit via interaction webhook → 200": the kind is already in the tag.
                e.detail.replace(/^edit /, ''),
              ),
            ),
          ),
        );
        box.addEventListener('toggle', () => (box.open ? open.add(j.jobId) : open.delete(j.jobId)));
        return box;
      }),
    );
    $('#notes').replaceChildren(
      ...t.notes.slice(-8).map((n) => el('li', {}, el('time', { text: time(n.at) }), ` ${n.detail}`)),
    );
  }

  async function loadMetrics() {
    try {
      const text = await api('/api/metrics');
      $('#metrics').textContent = text
        .split('\n')
        .filter((l) => l && !l.startsWith('#') && !/^(process|nodejs)_/.test(l))
        .join('\n');
    } catch (err) {
      $('#metrics').textContent = String(err.message ?? err);
    }
  }

  for (const box of $$('[data-switch]')) {
    box.addEventListener('change', async () => {
      const r = await api('/api/switch', { name: box.dataset.switch, on: box.checked });
      if (!r.ok) {
        box.checked = false;
        $('#ops-error').textContent = r.error;
      }
    });
  }
  $('#restart').addEventListener('click', () => void api('/api/switch', { name: 'restartBot' }));
  setInterval(() => void loadTimeline().catch(() => undefined), 2000);
  setInterval(() => void loadMetrics(), 5000);
  void loadTimeline().catch(() => undefined);
  void loadMetrics();

  return {
    /** The store and the switches' state, from /api/state. */
    show(s) {
      $('#store').textContent =
        `Store: ${s.store}. Song task to extend: ${s.hints.songTask}; video: ${s.hints.videoTask}.`;
      for (const box of $$('[data-switch]')) box.checked = s.switches[box.dataset.switch] ?? false;
    },
  };
}
