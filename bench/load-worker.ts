/**
 * Load generator for the webhook benchmarks, run as a child process so that
 * generating the load does not compete with the server under test for its event
 * loop. Reads its job from argv[2] (JSON), prints one JSON line of results.
 *
 * Each request is a webhook delivery for one of `jobs` (round robin), carrying
 * that job's secret and a percentage that climbs with every delivery to it.
 */
import autocannon from 'autocannon';

interface LoadSpec {
  url: string;
  /** Path prefix; the job id is appended. */
  pathPrefix: string;
  jobs: { id: string; secret: string; taskId: string }[];
  connections: number;
  durationSec: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
const sent = new Map<string, number>();
let k = 0;

const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.durationSec,
  requests: [
    {
      method: 'POST',
      setupRequest: (req) => {
        const job = spec.jobs[k++ % spec.jobs.length];
        if (!job) return req;
        const n = (sent.get(job.id) ?? 0) + 1;
        sent.set(job.id, n);
        return {
          ...req,
          path: `${spec.pathPrefix}${job.id}`,
          headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
          body: JSON.stringify({
            task_id: job.taskId,
            task_type: 'song',
            status: 'processing',
            percentage: Math.min(99, Math.ceil(n / 10)),
          }),
        };
      },
    },
  ],
});

process.stdout.write(
  `${JSON.stringify({
    rps: result.requests.average,
    total: result.requests.total,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    p50: result.latency.p50,
    p99: result.latency.p99,
  })}\n`,
);
