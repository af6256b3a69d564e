import type { Json, JsonObject } from './json.js';
import { isRecord, toJson } from './json.js';
import { err, fieldError } from './errors.js';
import { TemplateMatcher } from './templates.js';
import type { AuthKind, RequestRecord, UploadedFile } from './types.js';

/** One API request as a route handler sees it. */
export interface HandlerContext {
  method: string;
  path: string;
  template: string;
  params: Record<string, string>;
  query: URLSearchParams;
  auth: AuthKind;
  body: unknown;
  files: UploadedFile[];
  record: RequestRecord;
}

export interface HandlerResult {
  status: number;
  body?: Json;
  headers?: Record<string, string>;
}

export type Handler = (ctx: HandlerContext) => HandlerResult | Promise<HandlerResult>;

export interface RouteDef {
  method: string;
  template: string;
  /** `bot`: needs `Authorization: Bot <token>`; `none`: interaction routes (the token is in the path). */
  auth: 'bot' | 'none';
  handler: Handler;
}

/** The fake's REST routes (spec-style templates); each route family adds its own. */
export class Router {
  readonly routes: RouteDef[] = [];
  #matcher: TemplateMatcher | undefined;

  add(method: string, template: string, auth: 'bot' | 'none', handler: Handler): void {
    this.routes.push({ method, template, auth, handler });
    this.#matcher = undefined;
  }

  /** The route for a concrete path and method, with its path parameters. */
  match(
    path: string,
    method: string,
  ): { route: RouteDef | undefined; params: Record<string, string> } | undefined {
    this.#matcher ??= new TemplateMatcher(new Set(this.routes.map((r) => r.template)));
    const m = this.#matcher.match(path);
    if (!m) return undefined;
    return {
      route: this.routes.find((r) => r.template === m.template && r.method === method),
      params: m.params,
    };
  }
}

/** The request body as an object (Discord answers 50035 for anything else). */
export function bodyObject(ctx: HandlerContext): JsonObject {
  if (ctx.body === undefined) return {};
  if (!isRecord(ctx.body))
    throw err.invalidForm(
      fieldError([], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType'),
    );
  return toJson(ctx.body) as JsonObject;
}
