import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
// ajv-formats is CommonJS: under NodeNext the default import is `module.exports`, whose `.default` is the plugin.
import ajvFormats from 'ajv-formats';
import { isRecord, type Json, type JsonObject } from './json.js';
import { TemplateMatcher, type TemplateMatch } from './templates.js';

/** Default location of the vendored Discord OpenAPI 3.1 spec (MIT, see discord-openapi.LICENSE). */
export const DEFAULT_SPEC_PATH = fileURLToPath(new URL('../fixtures/discord-openapi.json', import.meta.url));

const SPEC_SCHEMA_ID = 'https://fake-discord.local/discord-openapi.json';

/** Path template as written in the spec (e.g. `/channels/{channel_id}/messages/{message_id}`) + its params. */
export type SpecPathMatch = TemplateMatch;

/** One schema error, trimmed to what helps a human reading a test failure. */
export interface SpecError {
  /** JSON pointer into the body, e.g. `/embeds/0/title`. */
  path: string;
  keyword: string;
  message: string;
  params: Record<string, unknown>;
}

export type BodyValidation =
  | { ok: true; quirks: AppliedQuirk[] }
  | { ok: false; errors: SpecError[]; rawErrors: SpecError[]; discordErrors: JsonObject }
  | { ok: 'no-schema' };

/**
 * A documented place where the published spec is stricter than what Discord
 * really accepts AND what discord.js really sends. A body that fails only
 * because of a quirk is NOT a violation, but it is recorded (see
 * `FakeDiscord.specQuirks`) so nothing is silently ignored.
 */
export interface SpecQuirk {
  id: string;
  description: string;
  /** Mutates a deep copy of `components.schemas`. */
  patch(schemas: Record<string, unknown>): void;
  /** Whether this quirk explains (some of) the errors of the unpatched validation. */
  explains(errors: SpecError[]): boolean;
}

export interface AppliedQuirk {
  id: string;
  description: string;
  errors: SpecError[];
}

function setPropertySchema(
  schemas: Record<string, unknown>,
  schemaName: string,
  property: string,
  schema: Record<string, unknown>,
): void {
  const target = schemas[schemaName];
  if (!isRecord(target)) return;
  const props = target['properties'];
  if (!isRecord(props) || !(property in props)) return;
  props[property] = schema;
}

export const SPEC_QUIRKS: readonly SpecQuirk[] = [
  {
    id: 'default_member_permissions-string',
    description:
      'The spec types application command `default_member_permissions` as integer|null, but Discord documents it as a ' +
      'stringified bitfield, returns it as a string, and discord.js (ApplicationCommandManager.transformCommand / ' +
      'SlashCommandBuilder) always sends a string such as "8". Discord accepts both.',
    patch(schemas) {
      const permissive = {
        oneOf: [
          { type: 'null' },
          { type: 'integer', minimum: 0 },
          { type: 'string', pattern: '^[0-9]{1,20}$' },
        ],
      };
      for (const name of Object.keys(schemas)) {
        if (/^ApplicationCommand(Create|Update|Patch)Request/.test(name)) {
          setPropertySchema(schemas, name, 'default_member_permissions', permissive);
        }
      }
    },
    explains: (errors) => errors.some((e) => e.path.endsWith('/default_member_permissions')),
  },
  {
    id: 'channel-type-guild-media',
    description:
      'The spec\'s ChannelTypes enum stops at GUILD_FORUM (15), but Discord documents GUILD_MEDIA (16), "a channel ' +
      'that can only contain threads, similar to GUILD_FORUM channels", and accepts it in a channel option\'s ' +
      '`channel_types` (the gallery may be a media channel).',
    patch(schemas) {
      const types = schemas['ChannelTypes'];
      if (!isRecord(types) || !Array.isArray(types['oneOf'])) return;
      types['oneOf'] = [
        ...types['oneOf'],
        {
          title: 'GUILD_MEDIA',
          description: 'A channel that can only contain threads, like GUILD_FORUM',
          const: 16,
        },
      ];
    },
    explains: (errors) => errors.some((e) => /\/channel_types\/\d+$/.test(e.path)),
  },
];

/** Rewrites local `#/components/...` refs so they resolve against the registered spec document. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item));
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] =
        key === '$ref' && typeof item === 'string' && item.startsWith('#/')
          ? SPEC_SCHEMA_ID + item
          : rewriteRefs(item);
    }
    return out;
  }
  return value;
}

function createAjv(components: unknown): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false, // the spec uses x-discord-* vendor keywords and OpenAPI-only keywords
    allErrors: true,
    validateSchema: false, // meta-validating 1.2 MB of schema costs more than it is worth
    addUsedSchema: false,
    // Compile time over validation speed (a fake validates a few requests per test): referenced schemas
    // are compiled once as functions of their own and shared by the routes, and the code is not
    // optimised; together a third of the usual routes' compile time.
    inlineRefs: false,
    code: { optimize: false },
  });
  ajvFormats.default(ajv);
  ajv.addFormat('snowflake', /^(0|[1-9][0-9]*)$/);
  ajv.addFormat('nonce', true);
  ajv.addSchema({ $id: SPEC_SCHEMA_ID, components } as Record<string, unknown>);
  return ajv;
}

function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function toSpecError(error: ErrorObject): SpecError {
  let path = error.instancePath;
  if (error.keyword === 'required' && typeof error.params['missingProperty'] === 'string') {
    path = `${path}/${error.params['missingProperty']}`;
  }
  return {
    path,
    keyword: error.keyword,
    message: error.message ?? error.keyword,
    params: { ...error.params },
  };
}

/**
 * ajv reports every failing branch of every oneOf/anyOf. The deepest errors are
 * (almost always) the ones a human wants to read: "/embeds/0/title must NOT have
 * more than 256 characters" rather than "/data must be null".
 */
export function summarizeErrors(errors: SpecError[]): SpecError[] {
  const meaningful = errors.filter(
    (e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'if',
  );
  const pool = meaningful.length > 0 ? meaningful : errors;
  let depth = -1;
  for (const e of pool) depth = Math.max(depth, pointerSegments(e.path).length);
  const deepest = pool.filter((e) => pointerSegments(e.path).length === depth);
  const seen = new Set<string>();
  return deepest.filter((e) => {
    const key = `${e.path}|${e.keyword}|${e.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function discordErrorFor(error: SpecError, value: unknown): { code: string; message: string } {
  const limit = error.params['limit'];
  switch (error.keyword) {
    case 'maxLength':
    case 'maxItems':
      return { code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${String(limit)} or fewer in length.` };
    case 'minLength':
    case 'minItems':
      return { code: 'BASE_TYPE_MIN_LENGTH', message: `Must be ${String(limit)} or more in length.` };
    case 'required':
      return { code: 'BASE_TYPE_REQUIRED', message: 'This field is required' };
    case 'maximum':
      return {
        code: 'NUMBER_TYPE_MAX',
        message: `int value should be less than or equal to ${String(limit)}.`,
      };
    case 'minimum':
      return {
        code: 'NUMBER_TYPE_MIN',
        message: `int value should be greater than or equal to ${String(limit)}.`,
      };
    case 'enum':
    case 'const': {
      const allowed = error.params['allowedValues'] ?? error.params['allowedValue'];
      return {
        code: 'BASE_TYPE_CHOICES',
        message: `Value must be one of ${JSON.stringify(allowed)}.`,
      };
    }
    case 'format':
      if (error.params['format'] === 'uri')
        return { code: 'URL_TYPE_INVALID_URL', message: 'Not a well formed URL.' };
      if (error.params['format'] === 'date-time')
        return {
          code: 'DATE_TYPE_PARSE',
          message: `Could not parse ${JSON.stringify(value)}. Should be ISO8601.`,
        };
      return { code: 'BASE_TYPE_INVALID', message: error.message };
    case 'type': {
      const type = error.params['type'];
      const wanted = Array.isArray(type) ? type.join('|') : String(type);
      if (wanted.startsWith('integer'))
        return { code: 'NUMBER_TYPE_COERCE', message: `Value "${String(value)}" is not int.` };
      if (wanted.startsWith('boolean'))
        return { code: 'BOOLEAN_TYPE_COERCE', message: `Value "${String(value)}" is not bool.` };
      if (wanted.startsWith('string')) return { code: 'BASE_TYPE_STRING', message: 'Must be a string.' };
      if (wanted.startsWith('array'))
        return { code: 'LIST_TYPE_CONVERT', message: 'Only iterables may be used in a ListType' };
      if (wanted.startsWith('object'))
        return { code: 'MODEL_TYPE_CONVERT', message: 'Only dictionaries may be used in a ModelType' };
      return { code: 'BASE_TYPE_INVALID', message: error.message };
    }
    case 'pattern':
      return { code: 'NUMBER_TYPE_COERCE', message: `Value "${String(value)}" is not snowflake.` };
    default:
      return { code: 'BASE_TYPE_INVALID', message: error.message };
  }
}

function valueAt(body: unknown, path: string): unknown {
  let current: unknown = body;
  for (const seg of pointerSegments(path)) {
    if (Array.isArray(current)) current = current[Number(seg)];
    else if (isRecord(current)) current = current[seg];
    else return undefined;
  }
  return current;
}

/** Builds Discord's nested `errors` object: `{embeds:{0:{title:{_errors:[{code,message}]}}}}`. */
export function toDiscordErrors(errors: SpecError[], body: unknown): JsonObject {
  const root: JsonObject = {};
  for (const error of errors) {
    const segments = pointerSegments(error.path);
    let node: JsonObject = root;
    for (const seg of segments) {
      const next = node[seg];
      if (next !== undefined && next !== null && typeof next === 'object' && !Array.isArray(next)) {
        node = next;
      } else {
        const created: JsonObject = {};
        node[seg] = created;
        node = created;
      }
    }
    const list = node['_errors'];
    const entry: Json = discordErrorFor(error, valueAt(body, error.path));
    if (Array.isArray(list)) list.push(entry);
    else node['_errors'] = [entry];
  }
  return root;
}

interface CompiledOperation {
  validate: ValidateFunction | null;
}

const LOADED = Symbol.for('fake-discord.openapi-specs');

export class OpenApiSpec {
  readonly templates: string[];
  readonly #paths: Record<string, unknown>;
  readonly #components: Record<string, unknown>;
  #ajv: Ajv2020 | null = null;
  #quirkAjv: Ajv2020 | null = null;
  readonly #compiled = new Map<string, CompiledOperation>();
  readonly #quirkCompiled = new Map<string, CompiledOperation>();
  readonly #matcher: TemplateMatcher;

  constructor(spec: unknown) {
    if (!isRecord(spec) || !isRecord(spec['paths']) || !isRecord(spec['components'])) {
      throw new Error('fake-discord: not an OpenAPI document');
    }
    this.#paths = spec['paths'];
    this.#components = spec['components'];
    this.templates = Object.keys(this.#paths);
    this.#matcher = new TemplateMatcher(this.templates);
  }

  /**
   * The document at `path`, parsed once per process: every fake shares it and the validators it has
   * compiled (compiling the usual routes costs a few hundred ms of CPU, and a test file may start a fake
   * per test). Kept on `globalThis` so that it outlives the module graph a test runner renews per file.
   * The spec is read-only; its validators are synchronous, so sharing them is safe.
   */
  static load(path: string = DEFAULT_SPEC_PATH): OpenApiSpec {
    const loaded = ((globalThis as { [LOADED]?: Map<string, OpenApiSpec> })[LOADED] ??= new Map());
    let spec = loaded.get(path);
    if (!spec) {
      spec = new OpenApiSpec(JSON.parse(readFileSync(path, 'utf8')));
      loaded.set(path, spec);
    }
    return spec;
  }

  /** Matches a concrete API path (without `/api/v10`) to a spec template; literal segments win over `{params}`. */
  matchPath(path: string): SpecPathMatch | undefined {
    return this.#matcher.match(path);
  }

  #operation(template: string, method: string): Record<string, unknown> | undefined {
    const item = this.#paths[template];
    if (!isRecord(item)) return undefined;
    const op = item[method.toLowerCase()];
    return isRecord(op) ? op : undefined;
  }

  hasOperation(template: string, method: string): boolean {
    return this.#operation(template, method) !== undefined;
  }

  operationId(template: string, method: string): string | undefined {
    const id = this.#operation(template, method)?.['operationId'];
    return typeof id === 'string' ? id : undefined;
  }

  #requestSchema(template: string, method: string): unknown {
    const body = this.#operation(template, method)?.['requestBody'];
    if (!isRecord(body) || !isRecord(body['content'])) return undefined;
    const json = body['content']['application/json'];
    return isRecord(json) ? json['schema'] : undefined;
  }

  #responseSchema(template: string, method: string, status: number): unknown {
    const responses = this.#operation(template, method)?.['responses'];
    if (!isRecord(responses)) return undefined;
    const response = responses[String(status)];
    if (!isRecord(response) || !isRecord(response['content'])) return undefined;
    const json = response['content']['application/json'];
    return isRecord(json) ? json['schema'] : undefined;
  }

  #compile(
    cache: Map<string, CompiledOperation>,
    ajv: () => Ajv2020,
    key: string,
    schema: unknown,
  ): CompiledOperation {
    let compiled = cache.get(key);
    if (!compiled) {
      compiled = {
        validate: schema === undefined ? null : ajv().compile(rewriteRefs(schema) as Record<string, unknown>),
      };
      cache.set(key, compiled);
    }
    return compiled;
  }

  #mainAjv(): Ajv2020 {
    this.#ajv ??= createAjv(this.#components);
    return this.#ajv;
  }

  #patchedAjv(): Ajv2020 {
    if (!this.#quirkAjv) {
      const components = structuredClone(this.#components);
      const schemas = components['schemas'];
      if (isRecord(schemas)) for (const quirk of SPEC_QUIRKS) quirk.patch(schemas);
      this.#quirkAjv = createAjv(components);
    }
    return this.#quirkAjv;
  }

  /** Compiles the request-body validators of the given operations now (otherwise it happens on first use). */
  warmUp(operations: Array<{ template: string; method: string }>): void {
    for (const { template, method } of operations) {
      const key = `${method.toUpperCase()} ${template}`;
      this.#compile(this.#compiled, () => this.#mainAjv(), key, this.#requestSchema(template, method));
    }
  }

  validateRequestBody(template: string, method: string, body: unknown): BodyValidation {
    const key = `${method.toUpperCase()} ${template}`;
    const schema = this.#requestSchema(template, method);
    const main = this.#compile(this.#compiled, () => this.#mainAjv(), key, schema);
    if (!main.validate) return { ok: 'no-schema' };
    if (main.validate(body)) return { ok: true, quirks: [] };
    const rawErrors = (main.validate.errors ?? []).map(toSpecError);
    const errors = summarizeErrors(rawErrors);
    // Does the body pass once the documented quirks are applied?
    const patched = this.#compile(this.#quirkCompiled, () => this.#patchedAjv(), key, schema);
    if (patched.validate?.(body)) {
      return {
        ok: true,
        quirks: SPEC_QUIRKS.filter((q) => q.explains(rawErrors)).map((q) => ({
          id: q.id,
          description: q.description,
          errors,
        })),
      };
    }
    return { ok: false, errors, rawErrors, discordErrors: toDiscordErrors(errors, body) };
  }

  /** Self-check of the fake: does a response body we produce match the spec's response schema? */
  validateResponseBody(template: string, method: string, status: number, body: unknown): SpecError[] | null {
    const key = `${method.toUpperCase()} ${template} -> ${status}`;
    const compiled = this.#compile(
      this.#compiled,
      () => this.#mainAjv(),
      key,
      this.#responseSchema(template, method, status),
    );
    if (!compiled.validate) return null;
    if (compiled.validate(body)) return [];
    return summarizeErrors((compiled.validate.errors ?? []).map(toSpecError));
  }
}
