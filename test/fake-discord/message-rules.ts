import { checkAutoModMessage } from './automod.js';
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
  /** The message's guild when its channel does not exist yet (a forum post's starter message). */
  guildId?: string | null;
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

/** Components V2 limits: components in all (nested ones count), characters of all Text Displays. */
const MAX_V2_COMPONENTS = 40;
const MAX_V2_TEXT = 4000;

/** The path of a File component (type 13) in the request that does not name one of the message's files. */
function unattachedFile(body: JsonObject, msg: JsonObject): string[] | undefined {
  const components = body['components'];
  if (!Array.isArray(components)) return undefined;
  const names = new Set(
    (Array.isArray(msg['attachments']) ? msg['attachments'] : [])
      .filter(isObj)
      .map((a) => String(a['filename'])),
  );
  let missing: string[] | undefined;
  walkComponents(components, (c, path) => {
    if (missing || c['type'] !== 13) return;
    const file = c['file'];
    const url = isObj(file) && typeof file['url'] === 'string' ? file['url'] : '';
    if (!url.startsWith('attachment://') || !names.has(url.slice('attachment://'.length)))
      missing = [...path, 'file', 'url'];
  });
  return missing;
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
  const v2 = (flags & MessageFlag.IsComponentsV2) !== 0;
  const beforeFlags = typeof opts.before?.['flags'] === 'number' ? opts.before['flags'] : 0;
  if (!v2 && (beforeFlags & MessageFlag.IsComponentsV2) !== 0)
    return at(
      ['flags'],
      'MESSAGE_CANNOT_REMOVE_COMPONENTS_V2_FLAG',
      'A message cannot stop using IS_COMPONENTS_V2',
    );
  if (v2) {
    const legacy = [
      ['content', content !== ''],
      ['embeds', embeds.length > 0],
      ['poll', msg['poll'] !== undefined],
      ['sticker_ids', Array.isArray(msg['sticker_items']) && msg['sticker_items'].length > 0],
    ] as const;
    const field = legacy.find(([, used]) => used)?.[0];
    if (field)
      return at(
        [field],
        'MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2',
        `The '${field}' field cannot be used when using MessageFlags.IS_COMPONENTS_V2`,
      );
    let count = 0;
    let text = 0;
    walkComponents(components, (c) => {
      count += 1;
      if (c['type'] === 10 && typeof c['content'] === 'string') text += c['content'].length;
    });
    if (count > MAX_V2_COMPONENTS)
      return at(
        ['components'],
        'MESSAGE_COMPONENTS_TOO_MANY',
        `Must be ${MAX_V2_COMPONENTS} or fewer components in total.`,
      );
    if (text > MAX_V2_TEXT)
      return at(
        ['components'],
        'MESSAGE_TEXT_DISPLAY_TOO_LONG',
        `The text of all Text Display components must be ${MAX_V2_TEXT} or fewer in length.`,
      );
  } else {
    // Without the flag only action rows (at most 5) are allowed at the top, as before components v2.
    const bad = components.findIndex((c) => !isObj(c) || c['type'] !== 1);
    if (bad >= 0)
      return at(
        ['components', String(bad), 'type'],
        'UNION_TYPE_CHOICES',
        'Value of field "type" must be one of (1,).',
      );
    if (components.length > 5)
      return at(['components'], 'BASE_TYPE_MAX_LENGTH', 'Must be 5 or fewer in length.');
  }
  const missingFile = unattachedFile(opts.body, msg);
  if (missingFile)
    return at(
      missingFile,
      'COMPONENT_FILE_ATTACHMENT_NOT_FOUND',
      'A File component must reference a file attached to the message (attachment://name).',
    );
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
  if (error) {
    if (ctx) recordSemanticViolation(s, ctx, error);
    throw error;
  }
  // A valid message may still be blocked by the guild's AutoMod (not the bot's mistake: not a violation).
  checkAutoModMessage(s, msg, opts.guildId);
}
