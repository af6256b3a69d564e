/**
 * Field schemas the operations' parameter schemas are made of. Checked before
 * sending, so a member learns the precise reason without a paid call; every
 * message names the option to fix.
 */
import { z } from 'zod';
import {
  DEFAULT_LOCALE,
  isMessageKey,
  translator,
  type MessageKey,
  type Translator,
  type ValuesOf,
} from '../../i18n/index.js';
import { isHttpUrl } from '../shared/format.js';
import type { MemberText } from './input.js';

/**
 * zod messages are strings made once, when a schema is built; a member reads them
 * in their own language. So a schema's message names a catalog text (`problem`),
 * and `problemText` turns an issue's message back into that text, formatted in
 * the reader's language when shown.
 */
const PREFIX = 'i18n:';

export function problem<K extends MessageKey>(key: K, ...[values]: ValuesOf<K>): string {
  return PREFIX + JSON.stringify({ key, values });
}

/** The text of a zod issue's message made by `problem` (any other message is shown as it is). */
export function problemText(message: string): MemberText {
  if (!message.startsWith(PREFIX)) return () => message;
  const parsed = JSON.parse(message.slice(PREFIX.length)) as {
    key: string;
    values?: Record<string, unknown>;
  };
  const key = parsed.key;
  if (!isMessageKey(key)) return () => message;
  // `problem` checked key and values against each other at compile time.
  return (tr: Translator) =>
    (tr.t as (k: MessageKey, v?: Record<string, unknown>) => string)(key, parsed.values);
}

/** English, for logs and errors kept on records. */
export const inEnglish = (text: MemberText): string => text(translator(DEFAULT_LOCALE));

export const httpUrl = (field: string) =>
  z
    .string({ error: problem('input.must_be_url', { field }) })
    .refine((v) => isHttpUrl(v), problem('input.must_be_http_url', { field }));

export const boundedInt = (field: string, min: number, max: number) => {
  const message = problem('input.whole_number_between', { field, min, max });
  return z.number({ error: message }).int(message).min(min, message).max(max, message);
};

export const nonEmpty = (field: string, max = 4000) =>
  z
    .string({ error: problem('input.required', { field }) })
    .trim()
    .min(1, problem('input.not_empty', { field }))
    .max(max, problem('input.max_length', { field, max }));

export const taskId = (field: string) =>
  z
    .string({ error: problem('input.required', { field }) })
    .trim()
    .min(1, problem('input.not_empty', { field }))
    .max(200, problem('input.too_long', { field }))
    .regex(/^[\w\-.:]+$/, problem('input.task_id_format', { field }));

/** A training set: 10 to 30 photos. */
export const MIN_PHOTOS = 10;
export const MAX_PHOTOS = 30;
