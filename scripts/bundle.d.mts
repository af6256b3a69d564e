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
