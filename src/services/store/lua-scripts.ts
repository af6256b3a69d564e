import { readFileSync } from 'node:fs';
import { defineScript, type CommandParser } from '@redis/client';

/**
 * The bot's own Lua, each script a reviewed `.lua` file beside this module (./lua/),
 * read once and registered with node-redis (`defineScript`), which runs it by EVALSHA
 * and sends the script itself only when Redis does not have it yet. Every script
 * takes its keys and its arguments as two string lists; `keys` undefined: as many keys
 * as the caller gives.
 */

function script(file: string, keys?: number) {
  return defineScript({
    ...(keys === undefined ? {} : { NUMBER_OF_KEYS: keys }),
    SCRIPT: readFileSync(new URL(`./lua/${file}.lua`, import.meta.url), 'utf8'),
    parseCommand(parser: CommandParser, keyList: readonly string[], args: readonly string[]) {
      if (keys === undefined) parser.push(String(keyList.length));
      for (const k of keyList) parser.pushKey(k);
      for (const a of args) parser.push(a);
    },
    transformReply: (reply: unknown) => reply,
  });
}

export const SCRIPTS = {
  casSet: script('cas-set', 1),
  casSetMany: script('cas-set-many'),
  claim: script('claim', 1),
  lockRelease: script('lock-release', 1),
  lockRenew: script('lock-renew', 1),
  gatewayAcquire: script('gateway-acquire', 2),
  channelBudgetAcquire: script('channel-budget-acquire', 4),
  channelBudgetSettle: script('channel-budget-settle', 2),
  channelBudgetBlock: script('channel-budget-block', 1),
} as const;

export type ScriptName = keyof typeof SCRIPTS;
