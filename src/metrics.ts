import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of the bot (prom-client), one registry per app so tests stay isolated. */
export function createMetrics(instance?: string) {
  const registry = new Registry();
  // Every series carries the instance (`instance_id`: Prometheus keeps `instance` for the scrape target), so one Prometheus scraping all replicas tells them apart.
  if (instance !== undefined) registry.setDefaultLabels({ instance_id: instance });
  collectDefaultMetrics({ register: registry });
  // Readings the cluster shares (one instance takes them): their owner fills the gauge before each scrape.
  const beforeScrape: { accountCredits?: () => Promise<void> } = {};
  const m = {
    registry,
    beforeScrape,
    jobs: new Counter({
      name: 'mediabot_jobs_total',
      help: 'Jobs that reached a state, by operation and state',
      labelNames: ['operation', 'state'] as const,
      registers: [registry],
    }),
    webhooks: new Counter({
      name: 'mediabot_webhooks_total',
      help: 'Webhook deliveries by HTTP response status',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    polls: new Counter({
      name: 'mediabot_polls_total',
      help: 'Fetch-endpoint polls by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    discordRequests: new Counter({
      name: 'mediabot_discord_requests_total',
      help: 'Discord REST responses by route and status (429s included)',
      labelNames: ['route', 'status'] as const,
      registers: [registry],
    }),
    editsSent: new Counter({
      name: 'mediabot_discord_edits_total',
      help: 'Message edits by route (interaction webhook or channel) and outcome',
      labelNames: ['route', 'outcome'] as const,
      registers: [registry],
    }),
    editQueueDepth: new Gauge({
      name: 'mediabot_edit_queue_depth',
      help: 'Message states waiting to be sent to Discord',
      registers: [registry],
    }),
    webhookToEdit: new Histogram({
      name: 'mediabot_webhook_to_edit_seconds',
      help: 'Time from an accepted webhook to the Discord edit showing it',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    }),
    gatewayLeader: new Gauge({
      name: 'mediabot_gateway_leader',
      help: '1 while this instance holds the Discord gateway lease (Redis gateway mode), else 0',
      registers: [registry],
    }),
    storeErrors: new Counter({
      name: 'mediabot_store_errors_total',
      help: 'Store operations that failed (backend down or timed out)',
      registers: [registry],
    }),
    httpInteractions: new Counter({
      name: 'mediabot_http_interactions_total',
      help: 'Interactions received on POST /interactions (http mode), by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    mediaSubmitConcurrency: new Gauge({
      name: 'media_submit_concurrency',
      help: 'Submissions to the media service allowed in flight now (halves on 429/503, grows back)',
      registers: [registry],
    }),
    // Labelled with the plan so that no sample exists (rather than a false 0) until the account was read.
    mediaAccountCredits: new Gauge({
      name: 'media_account_credits',
      help: 'Credits left on the media service account (GET /account), by plan',
      labelNames: ['plan'] as const,
      registers: [registry],
      collect: () => beforeScrape.accountCredits?.(),
    }),
    mediaAccountOutOfCredits: new Gauge({
      name: 'media_account_out_of_credits',
      help: '1 after the media service answered 402 (out of credits), until a submission succeeds',
      registers: [registry],
    }),
    // Counted by the instance that reserved (or refunded): sum over instances. Net spend = spent − refunded.
    operatorCreditsSpent: new Counter({
      name: 'mediabot_operator_credits_spent_total',
      help: "Credits reserved against the operator's day by admitted submissions (every server and member together)",
      registers: [registry],
    }),
    operatorCreditsRefunded: new Counter({
      name: 'mediabot_operator_credits_refunded_total',
      help: 'Credits given back to the operator’s day by submissions that failed before the service took them',
      registers: [registry],
    }),
    operatorDailyCredits: new Gauge({
      name: 'mediabot_operator_daily_credits',
      help: 'OPERATOR_DAILY_CREDITS: the credits everyone together may spend per UTC day (0 = no ceiling)',
      registers: [registry],
    }),
  };
  return m;
}
export type Metrics = ReturnType<typeof createMetrics>;
