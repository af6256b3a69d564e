/**
 * Request validation: one `errors[].msg` per problem, each naming its field,
 * collected (not first-error-only) so a client sees everything at once. Types
 * are checked strictly (`null` for an optional field is an error) because the
 * emulator exists to catch client mistakes.
 */
import { isHttpUrl, readUploadImage } from './images.js';
import type { JsonValue, TaskRecord, UploadedImage } from './types.js';

export const ETHNICITIES = [
  'asian',
  'black',
  'latino',
  'middle eastern',
  'native american',
  'pacific islander',
  'white',
] as const;
export const GENDERS = ['female', 'male'] as const;
export const ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '21:9', '9:21'] as const;
export const MAGIC_PROMPT_OPTIONS = ['AUTO', 'ON', 'OFF'] as const;
export const MIN_IMAGES = 10;
export const MAX_IMAGES = 30;

export type Validation<T> = { ok: true; value: T } | { ok: false; errors: string[] };

export interface WebhookTarget {
  webhookUrl?: string;
  webhookSecret?: string;
}

type Body = Record<string, unknown>;

class Fields {
  readonly errors: string[] = [];
  constructor(private readonly body: Body) {}

  private read(name: string, required: boolean): { value: unknown } | undefined {
    if (!(name in this.body) || this.body[name] === undefined) {
      if (required) this.errors.push(`${name} is required`);
      return undefined;
    }
    return { value: this.body[name] };
  }

  string(name: string, required: boolean, nonEmpty = true): string | undefined {
    const field = this.read(name, required);
    if (!field) return undefined;
    if (typeof field.value !== 'string' || (nonEmpty && field.value.trim() === '')) {
      this.errors.push(`${name} must be a ${nonEmpty ? 'non-empty ' : ''}string`);
      return undefined;
    }
    return field.value;
  }

  url(name: string, required: boolean): string | undefined {
    const field = this.read(name, required);
    if (!field) return undefined;
    if (typeof field.value !== 'string' || !isHttpUrl(field.value)) {
      this.errors.push(`${name} must be an http(s) URL`);
      return undefined;
    }
    return field.value;
  }

  integer(name: string, required: boolean, min?: number, max?: number): number | undefined {
    const field = this.read(name, required);
    if (!field) return undefined;
    const { value } = field;
    const ok =
      typeof value === 'number' &&
      Number.isSafeInteger(value) &&
      (min === undefined || value >= min) &&
      (max === undefined || value <= max);
    if (!ok) {
      const range =
        min !== undefined && max !== undefined
          ? ` between ${min} and ${max}`
          : min !== undefined
            ? ` >= ${min}`
            : '';
      this.errors.push(`${name} must be an integer${range}`);
      return undefined;
    }
    return value;
  }

  number(name: string, required: boolean, min: number): number | undefined {
    const field = this.read(name, required);
    if (!field) return undefined;
    if (typeof field.value !== 'number' || !Number.isFinite(field.value) || field.value < min) {
      this.errors.push(`${name} must be a number >= ${min}`);
      return undefined;
    }
    return field.value;
  }

  boolean(name: string): boolean | undefined {
    const field = this.read(name, false);
    if (!field) return undefined;
    if (typeof field.value !== 'boolean') {
      this.errors.push(`${name} must be a boolean`);
      return undefined;
    }
    return field.value;
  }

  oneOf<T extends string>(name: string, values: readonly T[], required: boolean): T | undefined {
    const field = this.read(name, required);
    if (!field) return undefined;
    const match = values.find((v) => v === field.value);
    if (match === undefined) this.errors.push(`${name} must be one of ${values.join(', ')}`);
    return match;
  }

  webhook(): WebhookTarget {
    const webhookUrl = this.url('webhook_url', false);
    const webhookSecret = this.string('webhook_secret', false, false);
    return {
      ...(webhookUrl !== undefined ? { webhookUrl } : {}),
      ...(webhookSecret !== undefined ? { webhookSecret } : {}),
    };
  }

  result<T>(value: T): Validation<T> {
    return this.errors.length > 0 ? { ok: false, errors: this.errors } : { ok: true, value };
  }
}

function asObject(body: unknown): Body | undefined {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Body) : undefined;
}

const NOT_AN_OBJECT: Validation<never> = { ok: false, errors: ['request body must be a JSON object'] };

export function validateUpscale(raw: unknown): Validation<{ seed?: number }> {
  const body = asObject(raw);
  if (!body) return NOT_AN_OBJECT;
  const f = new Fields(body);
  f.url('image_url', true);
  f.string('prompt', true);
  f.integer('resemblance', true, 1, 100);
  f.integer('detail', false, 1, 100);
  const seed = f.integer('seed', false);
  f.oneOf('magic_prompt_option', MAGIC_PROMPT_OPTIONS, false);
  return f.result(seed !== undefined ? { seed } : {});
}

type FindTask = (taskId: string) => TaskRecord | undefined;

/** The parent must exist, be of the right operation, and be finished (its result is what gets extended). */
function checkParent(f: Fields, parentId: string | undefined, operation: 'song' | 'video', find: FindTask) {
  if (parentId === undefined) return undefined;
  const parent = find(parentId);
  if (!parent || parent.operation !== operation) {
    f.errors.push(`parent_task_id ${parentId} is not a known ${operation} task`);
    return undefined;
  }
  if (parent.state !== 'finished') {
    f.errors.push(`parent_task_id ${parentId} is not finished`);
    return undefined;
  }
  return parent;
}

export function validateSongExtend(raw: unknown, find: FindTask): Validation<WebhookTarget> {
  const body = asObject(raw);
  if (!body) return NOT_AN_OBJECT;
  const f = new Fields(body);
  const parentId = f.string('parent_task_id', true);
  const songId = f.string('song_id', true);
  f.number('continue_at', false, 0);
  const webhook = f.webhook();
  const parent = checkParent(f, parentId, 'song', find);
  if (parent?.songIds && songId !== undefined && !parent.songIds.includes(songId)) {
    f.errors.push(`song_id must be one of the parent task's songs: ${parent.songIds.join(', ')}`);
  }
  return f.result(webhook);
}

export function validateVideoExtend(raw: unknown, find: FindTask): Validation<WebhookTarget> {
  const body = asObject(raw);
  if (!body) return NOT_AN_OBJECT;
  const f = new Fields(body);
  const parentId = f.string('parent_task_id', true);
  f.string('prompt', true);
  f.url('image_url', false);
  f.url('end_image_url', false);
  f.boolean('enhance_prompt');
  f.oneOf('aspect_ratio', ASPECT_RATIOS, false);
  const webhook = f.webhook();
  checkParent(f, parentId, 'video', find);
  return f.result(webhook);
}

export interface UploadRequest extends WebhookTarget {
  images: UploadedImage[];
  /** The body without `images` (which can be hundreds of MB), for the task record. */
  params: Record<string, JsonValue>;
}

export function validateUpload(raw: unknown, keepBytes: boolean): Validation<UploadRequest> {
  const body = asObject(raw);
  if (!body) return NOT_AN_OBJECT;
  const f = new Fields(body);
  const images: UploadedImage[] = [];
  const list = body['images'];
  if (list === undefined) {
    f.errors.push('images is required');
  } else if (!Array.isArray(list)) {
    f.errors.push(`images must be an array of ${MIN_IMAGES} to ${MAX_IMAGES} images`);
  } else {
    if (list.length < MIN_IMAGES || list.length > MAX_IMAGES) {
      f.errors.push(`images must contain ${MIN_IMAGES} to ${MAX_IMAGES} images (got ${list.length})`);
    }
    list.forEach((value: unknown, index) => {
      const checked = readUploadImage(value, index, keepBytes);
      if ('error' in checked) f.errors.push(checked.error);
      else images.push(checked.image);
    });
  }
  f.oneOf('ethnicity', ETHNICITIES, true);
  f.oneOf('gender', GENDERS, true);
  f.integer('age', false, 0);
  const webhook = f.webhook();
  const { images: _images, ...rest } = body;
  const params = { ...(rest as Record<string, JsonValue>), images: Array.isArray(list) ? list.length : 0 };
  return f.result({ ...webhook, images, params });
}

export function validateFetch(raw: unknown): Validation<{ taskId: string }> {
  const body = asObject(raw);
  if (!body) return NOT_AN_OBJECT;
  const f = new Fields(body);
  const taskId = f.string('task_id', true);
  return f.result({ taskId: taskId ?? '' });
}

/** The provider reads 2 to 20 tasks per fetch-many request. */
export const FETCH_MANY_MIN = 2;
export const FETCH_MANY_MAX = 20;

export function validateFetchMany(raw: unknown): Validation<{ taskIds: string[] }> {
  const body = asObject(raw);
  if (!body) return NOT_AN_OBJECT;
  const list = body['task_ids'];
  if (list === undefined) return { ok: false, errors: ['task_ids is required'] };
  if (!Array.isArray(list)) return { ok: false, errors: ['task_ids must be an array of task ids'] };
  const errors: string[] = [];
  if (list.length < FETCH_MANY_MIN || list.length > FETCH_MANY_MAX) {
    errors.push(`task_ids must contain ${FETCH_MANY_MIN} to ${FETCH_MANY_MAX} task ids (got ${list.length})`);
  }
  list.forEach((id: unknown, index) => {
    if (typeof id !== 'string' || id.trim() === '')
      errors.push(`task_ids[${index}] must be a non-empty string`);
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: { taskIds: list as string[] } };
}
