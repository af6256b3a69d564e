/**
 * /metrics protection (METRICS_TOKEN, METRICS_PORT) and the cheap health routes.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { createMetrics } from '../src/metrics.js';
import { buildMetricsServer, buildServer } from '../src/webhooks/server.js';
import { mediaOperations } from '../src/services/operations/index.js';

const silent = pino({ level: 'silent' });
const TOKEN = 'metrics-token-0123456789';

async function mainServer(metrics: { token?: string } | false) {
  const m = createMetrics();
  return buildServer({
    logger: silent,
    webhook: {
      operations: mediaOperations,
      store: { get: async () => undefined },
      applyResult: async () => ({}),
      metrics: m,
    },
    health: { discordReady: () => true, pingStore: async () => undefined, registry: m.registry },
    metrics,
  });
}

describe('/metrics', () => {
  it('open on the main port when no token is set', async () => {
    const app = await mainServer({});
    const r = await app.inject({ method: 'GET', url: '/metrics' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toContain('text/plain');
    expect(r.body).toContain('# HELP');
  });

  it('with METRICS_TOKEN: 401 without or with a wrong bearer token, 200 with the right one', async () => {
    const app = await mainServer({ token: TOKEN });
    const none = await app.inject({ method: 'GET', url: '/metrics' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toContain('Bearer');
    expect(none.json()).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    const wrong = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TOKEN}x` },
    });
    expect(wrong.statusCode).toBe(401);
    const bare = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: TOKEN } });
    expect(bare.statusCode).toBe(401);
    const ok = await app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('# HELP');
    // Health routes stay open and cheap for load balancers.
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('with METRICS_PORT: not on the main server, served by its own (token still applies)', async () => {
    const app = await mainServer(false);
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    const m = createMetrics();
    const side = await buildMetricsServer({ logger: silent, registry: m.registry, token: TOKEN });
    expect((await side.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const ok = await side.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.statusCode).toBe(200);
    expect((await side.inject({ method: 'GET', url: '/webhooks/media/x' })).statusCode).toBe(404);
  });

  it('config: METRICS_TOKEN too short and METRICS_PORT equal to PORT are refused with one line each', () => {
    const base = { DISCORD_TOKEN: 't', DISCORD_APPLICATION_ID: '123456789012345678', MEDIA_API_KEY: 'k' };
    expect(() => parseConfig({ ...base, METRICS_TOKEN: 'short' })).toThrow(
      /METRICS_TOKEN: must be at least 16/,
    );
    expect(() => parseConfig({ ...base, PORT: '3000', METRICS_PORT: '3000' })).toThrow(
      /METRICS_PORT: must differ/,
    );
    const c = parseConfig({ ...base, METRICS_PORT: '9100', METRICS_TOKEN: TOKEN });
    expect(c.metrics).toEqual({ port: 9100, token: TOKEN });
  });
});
