export interface TemplateMatch {
  template: string;
  params: Record<string, string>;
}

/**
 * Matches concrete paths against OpenAPI-style templates (`/channels/{channel_id}/messages`).
 * Literal segments beat `{params}`, so `/messages/@original` wins over `/messages/{message_id}`.
 */
export class TemplateMatcher {
  readonly #entries: Array<{ template: string; segments: string[] }>;

  constructor(templates: Iterable<string>) {
    this.#entries = [...templates].map((template) => ({ template, segments: template.split('/').slice(1) }));
  }

  match(path: string): TemplateMatch | undefined {
    const parts = (path.split('?')[0] ?? '').split('/').slice(1);
    let best: { template: string; score: number; params: Record<string, string> } | undefined;
    for (const { template, segments } of this.#entries) {
      if (segments.length !== parts.length) continue;
      let score = 0;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < segments.length; i++) {
        const seg = segments[i] ?? '';
        let part = parts[i] ?? '';
        try {
          part = decodeURIComponent(part);
        } catch {
          // keep the raw segment
        }
        if (seg.startsWith('{') && seg.endsWith('}')) {
          if (part === '') {
            ok = false;
            break;
          }
          params[seg.slice(1, -1)] = part;
        } else if (seg === part) {
          score += 1;
        } else {
          ok = false;
          break;
        }
      }
      if (ok && (!best || score > best.score)) best = { template, score, params };
    }
    return best ? { template: best.template, params: best.params } : undefined;
  }
}
