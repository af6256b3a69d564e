/**
 * /metrics protection (METRICS_TOKEN, METRICS_PORT) and the cheap health routes.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { operationModules } from '../src/services/operations/index.js';
import { createMetrics } from '../src/metrics.js';
import {
  buildMetricsServer,
  buildServer,
  isLoopbackHost,
  openMetricsWarning,
} from '../src/webhooks/server.js';
import { startHarness } from './helpers/harness.js';
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
    expect(() => parseConfig(operationModules, { ...base, METRICS_TOKEN: 'short' })).toThrow(
      /METRICS_TOKEN: must be at least 16/,
    );
    expect(() => parseConfig(operationModules, { ...base, PORT: '3000', METRICS_PORT: '3000' })).toThrow(
      /METRICS_PORT: must differ/,
    );
    const c = parseConfig(operationModules, { ...base, METRICS_PORT: '9100', METRICS_TOKEN: TOKEN });
    expect(c.metrics).toEqual({ port: 9100, token: TOKEN });
  });
});

describe('a start-up warning when /metrics is open on a public address', () => {
  it('loopback hosts are private; anything else (0.0.0.0, ::, a name, a LAN address) is not', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', 'localhost', '::ffff:127.0.0.1'])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'bot', 'example.com', ''])
      expect(isLoopbackHost(host), host).toBe(false);
  });

  it('warns without METRICS_TOKEN on a public host (either port), not with a token or on loopback', () => {
    expect(openMetricsWarning({ http: { host: '0.0.0.0' }, metrics: {} })).toMatch(
      /\/metrics is open .*0\.0\.0\.0 \(the main port\).*METRICS_TOKEN/,
    );
    expect(openMetricsWarning({ http: { host: '::' }, metrics: { port: 9100 } })).toContain('port 9100');
    expect(openMetricsWarning({ http: { host: '0.0.0.0' }, metrics: { token: TOKEN } })).toBeUndefined();
    expect(openMetricsWarning({ http: { host: '127.0.0.1' }, metrics: {} })).toBeUndefined();
  });

  it('the running bot logs it once at start on 0.0.0.0, and not once METRICS_TOKEN is set', async () => {
    const warnings = async (env: Record<string, string>) => {
      const lines: { level: string; msg: string }[] = [];
      const h = await startHarness({
        env: { HOST: '0.0.0.0', LOG_LEVEL: 'info', ...env },
        logs: {
          write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }),
        },
      });
      await h.close();
      return lines.filter((l) => l.level === 'warn' && l.msg.startsWith('/metrics is open'));
    };
    expect(await warnings({})).toHaveLength(1);
    expect(await warnings({ METRICS_TOKEN: TOKEN })).toHaveLength(0);
  });
});
