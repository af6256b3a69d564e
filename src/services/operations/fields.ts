/**
 * Field schemas the operations' parameter schemas are made of. Checked before
 * sending, so a member learns the precise reason without a paid call; every
 * message names the option to fix.
 */
import { z } from 'zod';
import { isHttpUrl } from '../shared/format.js';

export const httpUrl = (field: string) =>
  z
    .string({ error: `${field} must be a URL` })
    .refine((v) => isHttpUrl(v), `${field} must be an http(s) URL`);

export const boundedInt = (field: string, min: number, max: number) =>
  z
    .number({ error: `${field} must be a whole number between ${min} and ${max}` })
    .int(`${field} must be a whole number between ${min} and ${max}`)
    .min(min, `${field} must be a whole number between ${min} and ${max}`)
    .max(max, `${field} must be a whole number between ${min} and ${max}`);

export const nonEmpty = (field: string, max = 4000) =>
  z
    .string({ error: `${field} is required` })
    .trim()
    .min(1, `${field} must not be empty`)
    .max(max, `${field} must be at most ${max} characters`);

export const taskId = (field: string) =>
  z
    .string({ error: `${field} is required` })
    .trim()
    .min(1, `${field} must not be empty`)
    .max(200, `${field} is too long`)
    .regex(/^[\w\-.:]+$/, `${field} must be a task id (letters, digits, - _ . :)`);

/** A training set: 10 to 30 photos. */
export const MIN_PHOTOS = 10;
export const MAX_PHOTOS = 30;
