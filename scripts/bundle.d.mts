import type { Plugin } from 'esbuild';
/** Types of scripts/bundle.mjs, for the tests, benchmarks and playground that start the bundled bot. */
/** dist/bot/main.js: what `npm start` runs. */
export declare const BOT_BUNDLE: string;
/** The Lua scripts under src/ (absolute paths). */
export declare function luaFiles(): string[];
/** Builds dist/bot (only when stale with `ifStale`), one build at a time across processes. */
export declare function bundleBot(opts?: { ifStale?: boolean }): Promise<void>;
/** The esbuild plugin that builds node-redis's command classes on dictionary-mode prototypes. */
export declare const nodeRedisPrototypes: Plugin;
/** BullMQ's ES module build, its PostgreSQL and GLIDE backends left out. */
export declare const bullmqModules: Plugin;
/** Zod's locale namespaces with English only. */
export declare const zodEnglishOnly: Plugin;
/** The message catalogs read at start from dist/bot/i18n/ instead of bundled as source. */
export declare const catalogsReadAtStart: Plugin;
