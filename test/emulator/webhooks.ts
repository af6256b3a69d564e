import { setMaxListeners } from 'node:events';
import { Agent, request } from 'undici';
import type { ResultBody, TaskRecord, WebhookDelivery } from './types.js';

type Kind = WebhookDelivery['kind'];

/**
 * Posts webhook bodies and logs the outcome. One attempt per call: the real
 * service documents no retries, so a refused connection or non-2xx answer is
 * recorded and that update is lost, which is what clients must cope with.
 */
export class WebhookSender {
  // A private agent so close() can tear down keep-alive sockets (vitest must exit).
  private readonly agent = new Agent({ keepAliveTimeout: 1000 });
  private controller = sharedController();
  /** Bumped by abortAll(): outcomes of deliveries started before are not logged. */
  private generation = 0;

  constructor(
    private readonly timeoutMs: number,
    private readonly record: (delivery: WebhookDelivery) => void,
  ) {}

  logDropped(task: TaskRecord, kind: Kind, body: ResultBody): void {
    if (!task.webhookUrl) return;
    this.record({
      ...this.base(task, kind, body, 1),
      dropped: true,
      ok: false,
      at: Date.now(),
      durationMs: 0,
    });
  }

  async send(task: TaskRecord, kind: Kind, body: ResultBody, copy: 1 | 2): Promise<void> {
    const url = task.webhookUrl;
    if (!url) return;
    const generation = this.generation;
    const at = Date.now();
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (task.webhookSecret !== undefined) headers['x-webhook-secret'] = task.webhookSecret;
    let outcome: Pick<WebhookDelivery, 'ok' | 'statusCode' | 'error'>;
    try {
      const response = await request(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        dispatcher: this.agent,
        signal: this.controller.signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      await response.body.dump();
      const { statusCode } = response;
      outcome = { ok: statusCode >= 200 && statusCode < 300, statusCode };
    } catch (error) {
      outcome = { ok: false, error: describe(error) };
    }
    if (generation !== this.generation) return;
    this.record({
      ...this.base(task, kind, body, copy),
      dropped: false,
      ...outcome,
      at,
      durationMs: Date.now() - at,
    });
  }

  abortAll(): void {
    this.generation++;
    this.controller.abort();
    this.controller = sharedController();
  }

  async close(): Promise<void> {
    this.abortAll();
    await this.agent.destroy();
  }

  private base(task: TaskRecord, kind: Kind, body: ResultBody, copy: 1 | 2) {
    return { taskId: task.id, url: task.webhookUrl ?? '', kind, body, copy };
  }
}

/**
 * One controller for every delivery in flight, so abortAll() reaches them all. Each delivery
 * listens on its signal until it ends (undici removes the listener then): a storm has many
 * more than Node's default 10 at once, which is no leak, so the limit is lifted for it.
 */
function sharedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${typeof code === 'string' ? `${code} ` : ''}${error.message}${cause}`;
  }
  return String(error);
}
