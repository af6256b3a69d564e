import { err, fieldError, recordSemanticViolation, type DiscordHttpError } from './errors.js';
import { isObj, type Json, type JsonObject } from './json.js';
import { embedLength, MessageFlag } from './messages.js';
import type { HandlerContext } from './router.js';
import type { FakeState } from './state.js';

/**
 * Rules Discord enforces on a message that the OpenAPI spec cannot express, checked on the
 * message as it would be after the request (create or edit). A refusal is a Discord error
 * (400 50035 with nested `errors`, or 50006) and is recorded as a semantic violation.
 */

export interface RuleOptions {
  /** The request's message body (for an edit: only what it changes). */
  body: JsonObject;
  /** The message before an edit. */
  before?: JsonObject;
  /** Where the message sits in the request body: `['data']` in an interaction callback. */
  prefix?: string[];
}

const CHILD_KEYS = ['components', 'component', 'accessory'] as const;

/** Every component of a tree with its path (`components.0.components.1`, `…accessory`). */
export function walkComponents(
  components: Json[],
  visit: (c: JsonObject, path: string[]) => void,
  base: string[] = ['components'],
): void {
  components.forEach((c, i) => {
    if (!isObj(c)) return;
    const path = [...base, String(i)];
    visit(c, path);
    for (const key of CHILD_KEYS) {
      const child = c[key];
      if (Array.isArray(child)) walkComponents(child, visit, [...path, key]);
      else if (isObj(child)) {
        visit(child, [...path, key]);
        const grand = child['components'];
        if (Array.isArray(grand)) walkComponents(grand, visit, [...path, key, 'components']);
      }
    }
  });
}

/** The path of the first component whose custom_id an earlier one already used. */
function duplicateCustomId(components: Json[]): string[] | undefined {
  const seen = new Set<string>();
  let dup: string[] | undefined;
  walkComponents(components, (c, path) => {
    const id = c['custom_id'];
    if (typeof id !== 'string' || dup) return;
    if (seen.has(id)) dup = [...path, 'custom_id'];
    seen.add(id);
  });
  return dup;
}

function firstViolation(msg: JsonObject, opts: RuleOptions): DiscordHttpError | null {
  const at = (path: string[], code: string, message: string): DiscordHttpError =>
    err.invalidForm(fieldError([...(opts.prefix ?? []), ...path], code, message));
  const content = typeof msg['content'] === 'string' ? msg['content'] : '';
  const embeds = Array.isArray(msg['embeds']) ? msg['embeds'].filter(isObj) : [];
  const components = Array.isArray(msg['components']) ? msg['components'] : [];
  const attachments = Array.isArray(msg['attachments']) ? msg['attachments'] : [];
  const flags = typeof msg['flags'] === 'number' ? msg['flags'] : 0;
  if (content.length > 2000)
    return at(['content'], 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.');
  if (embeds.reduce((n, e) => n + embedLength(e), 0) > 6000)
    return at(['embeds'], 'MAX_EMBED_SIZE_EXCEEDED', 'Embed size exceeds maximum size of 6000');
  if ((flags & MessageFlag.IsComponentsV2) !== 0 && (content !== '' || embeds.length > 0)) {
    const field = content !== '' ? 'content' : 'embeds';
    return at(
      [field],
      'MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2',
      `The '${field}' field cannot be used when using MessageFlags.IS_COMPONENTS_V2`,
    );
  }
  const dup = duplicateCustomId(components);
  if (dup) return at(dup, 'COMPONENT_CUSTOM_ID_DUPLICATED', 'Component custom id was already specified');
  if (
    content === '' &&
    embeds.length === 0 &&
    components.length === 0 &&
    attachments.length === 0 &&
    msg['poll'] === undefined &&
    (flags & MessageFlag.Loading) === 0
  ) {
    return err.emptyMessage();
  }
  return null;
}

/** Throws the Discord error for the first rule `msg` breaks (and records it when there is a request). */
export function checkMessageRules(
  s: FakeState,
  msg: JsonObject,
  ctx: HandlerContext | null,
  opts: RuleOptions,
): void {
  const error = firstViolation(msg, opts);
  if (!error) return;
  if (ctx) recordSemanticViolation(s, ctx, error);
  throw error;
}
