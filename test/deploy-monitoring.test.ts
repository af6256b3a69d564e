/**
 * The operator's monitoring (`docker compose --profile monitoring up -d`): Prometheus
 * scraping every bot replica, Grafana provisioned with the dashboard. Grafana and
 * Prometheus are not run here (neither is installable on the test machine); what can go
 * wrong without them is checked: the dashboard's structure (ids, layout, panel types,
 * datasource), every metric and label it queries exists in the bot's registry (the
 * operator limits' two metrics by name), and the compose file, Prometheus config and
 * Grafana provisioning point at each other and at files that exist.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import { parseConfig } from '../src/config.js';
import { operationModules } from '../src/services/operations/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MONITORING = join(ROOT, 'deploy/monitoring');
const read = (path: string) => readFile(join(ROOT, path), 'utf8');

/** The operator limits' metrics (defined with them); the dashboard refers to them by name. */
const OPERATOR_METRICS = ['mediabot_operator_credits_spent_total', 'mediabot_operator_daily_credits'];
/** Labels every series has beside its own: the bot's default label, Prometheus's target labels, histogram buckets. */
const COMMON_LABELS = ['instance_id', 'instance', 'job', 'le'];

const datasourceRef = z.object({ type: z.literal('prometheus'), uid: z.string().min(1) });
const panelSchema = z.object({
  id: z.number().int().positive(),
  type: z.enum(['timeseries', 'stat', 'gauge', 'bargauge', 'table', 'text']),
  title: z.string().min(1),
  description: z.string().min(1),
  datasource: datasourceRef,
  gridPos: z.object({
    x: z.number().int().min(0).max(23),
    y: z.number().int().min(0),
    w: z.number().int().min(1).max(24),
    h: z.number().int().min(1),
  }),
  targets: z
    .array(
      z.object({
        refId: z.string().regex(/^[A-Z]$/),
        expr: z.string().min(1),
        legendFormat: z.string(),
        datasource: datasourceRef,
      }),
    )
    .min(1),
  fieldConfig: z.object({ defaults: z.record(z.string(), z.unknown()), overrides: z.array(z.unknown()) }),
  options: z.record(z.string(), z.unknown()),
});
const dashboardSchema = z.object({
  uid: z.string().regex(/^[a-z0-9-]{1,40}$/),
  title: z.string().min(1),
  schemaVersion: z.number().int().min(30),
  time: z.object({ from: z.string(), to: z.string() }),
  panels: z.array(panelSchema).min(1),
});
type Panel = z.infer<typeof panelSchema>;

async function dashboard() {
  const raw: unknown = JSON.parse(await read('deploy/monitoring/grafana/dashboards/mediabot.json'));
  return dashboardSchema.parse(raw);
}

/** The metric names a PromQL expression reads (ours: `mediabot_*`, `media_*`; and `up`). */
function metricsIn(expr: string): string[] {
  const names = [...expr.matchAll(/\b(?:mediabot|media)_[a-z0-9_]+\b/g)].map((m) => m[0]);
  if (/\bup\{/.test(expr)) names.push('up');
  return names;
}

/** The label names an expression groups by or selects on. */
function labelsIn(expr: string): string[] {
  const out: string[] = [];
  for (const m of expr.matchAll(/\bby \(([^)]*)\)/g))
    out.push(...(m[1] ?? '').split(',').map((s) => s.trim()));
  for (const m of expr.matchAll(/\{([^}]*)\}/g))
    for (const sel of (m[1] ?? '').matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)) out.push(sel[1] ?? '');
  return out.filter((l) => l !== '');
}

describe('the operator dashboard', () => {
  it('is a well-formed Grafana dashboard: unique ids, panels within 24 columns and not overlapping', async () => {
    const d = await dashboard();
    const ids = d.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Set<string>();
    for (const p of d.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x + w, p.title).toBeLessThanOrEqual(24);
      for (let i = x; i < x + w; i++)
        for (let j = y; j < y + h; j++) {
          expect(cells.has(`${i},${j}`), `${p.title} overlaps at ${i},${j}`).toBe(false);
          cells.add(`${i},${j}`);
        }
      const refs = p.targets.map((t) => t.refId);
      expect(new Set(refs).size, p.title).toBe(refs.length);
    }
  });

  it('queries only the provisioned datasource, and metrics and labels the bot exports', async () => {
    const d = await dashboard();
    const datasources = await read('deploy/monitoring/grafana/provisioning/datasources/prometheus.yml');
    const uid = /^\s+uid: (\S+)$/m.exec(datasources)?.[1];
    expect(uid).toBeDefined();
    const registry = createMetrics('test').registry;
    const labelsOf = (name: string): string[] | undefined => {
      if (OPERATOR_METRICS.includes(name) || name === 'up') return undefined;
      const base = name.replace(/_(bucket|sum|count)$/, '');
      const metric = registry.getSingleMetric(name) ?? registry.getSingleMetric(base);
      expect(metric, `${name} is not a metric of src/metrics.ts`).toBeDefined();
      const labels = (metric as unknown as { labelNames?: unknown }).labelNames;
      expect(Array.isArray(labels), `${name}: labelNames`).toBe(true);
      return labels as string[];
    };
    const used = new Set<string>();
    for (const p of d.panels) {
      expect(p.datasource.uid, p.title).toBe(uid);
      for (const t of p.targets) {
        expect(t.datasource.uid, p.title).toBe(uid);
        const names = metricsIn(t.expr);
        expect(names.length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
        for (const name of names) {
          used.add(name);
          const own = labelsOf(name);
          if (!own) continue;
          for (const label of labelsIn(t.expr))
            expect([...own, ...COMMON_LABELS], `${p.title}: ${label} on ${name}`).toContain(label);
        }
      }
    }
    // What the operator asked to see at a glance.
    for (const name of [
      ...OPERATOR_METRICS,
      'mediabot_jobs_total',
      'media_account_credits',
      'mediabot_webhook_to_edit_seconds_bucket',
      'mediabot_edit_queue_depth',
      'mediabot_discord_requests_total',
    ])
      expect(used, name).toContain(name);
    const exprs = d.panels.flatMap((p: Panel) => p.targets.map((t) => t.expr));
    expect(exprs.some((e) => e.includes('mediabot_discord_requests_total{status="429"}'))).toBe(true);
    expect(exprs.some((e) => /mediabot_jobs_total\{state=~"finished\|failed"\}/.test(e))).toBe(true);
  });

  it('the helpers themselves catch a metric or label the bot does not have', () => {
    expect(metricsIn('sum by (operaton) (rate(mediabot_jobs_totl[5m]))')).toEqual(['mediabot_jobs_totl']);
    expect(labelsIn('sum by (operaton, state) (x{status="429", route=~"a"})')).toEqual([
      'operaton',
      'state',
      'status',
      'route',
    ]);
    expect(createMetrics().registry.getSingleMetric('mediabot_jobs_totl')).toBeUndefined();
  });
});

describe('compose profile, Prometheus and Grafana provisioning agree', () => {
  it('Prometheus scrapes every replica of the `bot` service on its port, with the token compose writes', async () => {
    const prom = await read('deploy/monitoring/prometheus.yml');
    const compose = await read('docker-compose.yml');
    expect(prom).toMatch(/job_name: mediabot$/m);
    expect(prom).toMatch(/dns_sd_configs:\n\s+- names: \['bot'\]\n\s+type: A\n\s+port: (\d+)/);
    const port = /dns_sd_configs:[\s\S]*?port: (\d+)/.exec(prom)?.[1];
    // The bot's default PORT (the compose file sets none).
    const config = parseConfig(operationModules, {
      DISCORD_TOKEN: 't',
      DISCORD_APPLICATION_ID: '123456789012345678',
      MEDIA_API_KEY: 'k',
    });
    expect(Number(port)).toBe(config.http.port);
    expect(compose).toMatch(/^ {2}bot:$/m);
    const file = /credentials_file: (\S+)/.exec(prom)?.[1];
    expect(compose).toContain(`printf %s "$$METRICS_TOKEN" > ${file}`);
    expect(compose).toContain('METRICS_TOKEN: ${METRICS_TOKEN:-}');
  });

  it('only the monitoring services have the profile; every mounted file exists; Grafana loads the dashboard', async () => {
    const compose = await read('docker-compose.yml');
    const section = (name: string) => {
      const start = compose.indexOf(`\n  ${name}:\n`);
      expect(start, name).toBeGreaterThan(-1);
      const rest = compose.slice(start + 1);
      const end = rest.slice(1).search(/\n {2}[a-z-]+:\n|\n[a-z]/);
      return end === -1 ? rest : rest.slice(0, end + 1);
    };
    for (const name of ['prometheus', 'grafana']) expect(section(name)).toContain("profiles: ['monitoring']");
    for (const name of ['bot', 'lb', 'redis']) expect(section(name)).not.toContain('profiles:');
    const mounts = [...compose.matchAll(/- \.\/(deploy\/[^:]+):([^:\s]+)(?::ro)?$/gm)];
    expect(mounts.length).toBeGreaterThanOrEqual(5);
    for (const [, path] of mounts) expect(existsSync(join(ROOT, path ?? '')), path).toBe(true);
    const target = (path: string) => mounts.find((m) => m[1] === path)?.[2];
    const dashboardsDir = target('deploy/monitoring/grafana/dashboards');
    const provider = await read('deploy/monitoring/grafana/provisioning/dashboards/mediabot.yml');
    expect(provider).toContain(`path: ${dashboardsDir}`);
    expect(target('deploy/monitoring/grafana/provisioning')).toBe('/etc/grafana/provisioning');
    expect(target('deploy/monitoring/prometheus.yml')).toBe('/etc/prometheus/prometheus.yml');
    expect(compose).toContain(`--config.file=/etc/prometheus/prometheus.yml`);
    const home = /GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH: (\S+)/.exec(compose)?.[1] ?? '';
    expect(home.startsWith(`${dashboardsDir}/`)).toBe(true);
    expect(
      existsSync(join(MONITORING, 'grafana/dashboards', home.slice((dashboardsDir ?? '').length + 1))),
    ).toBe(true);
    // The datasource Grafana reaches is the compose service.
    const datasources = await read('deploy/monitoring/grafana/provisioning/datasources/prometheus.yml');
    expect(datasources).toContain('url: http://prometheus:9090');
    // Grafana is reachable from the host's loopback only.
    expect(section('grafana')).toMatch(/- '127\.0\.0\.1:\d+:3000'/);
  });
});
