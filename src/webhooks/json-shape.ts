/**
 * A bound on what a JSON body may cost to parse, checked on the raw bytes before
 * `JSON.parse` allocates anything. Parse cost follows the number of values, not
 * the size: 1 MiB of one long string parses in under 1 ms, 1 MiB of small nested
 * arrays in about 90 ms (half a million arrays). A real webhook holds a few dozen
 * values a few levels deep.
 */
export interface JsonShapeLimit {
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
  /** Structural tokens (`[ { , :` outside strings): about one per value or key. */
  maxTokens: number;
}

/** Far above any webhook of the service (depth 3, about a hundred tokens), far below a costly parse (~3 ms). */
export const WEBHOOK_JSON_SHAPE: Readonly<JsonShapeLimit> = { maxDepth: 16, maxTokens: 10_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Why `body` is over `limit` ('depth' or 'tokens'), or undefined when it is within it.
 * One pass over the bytes, stopping at the first excess; it does not validate the JSON
 * (the parser does that next), so a malformed body is simply left to fail there.
 */
export function jsonShapeExcess(body: Uint8Array, limit: JsonShapeLimit): 'depth' | 'tokens' | undefined {
  let depth = 0;
  let tokens = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    switch (c) {
      case QUOTE:
        inString = true;
        break;
      case OPEN_ARRAY:
      case OPEN_OBJECT:
        if (++depth > limit.maxDepth) return 'depth';
        if (++tokens > limit.maxTokens) return 'tokens';
        break;
      case CLOSE_ARRAY:
      case CLOSE_OBJECT:
        depth--;
        break;
      case COMMA:
      case COLON:
        if (++tokens > limit.maxTokens) return 'tokens';
        break;
    }
  }
  return undefined;
}
