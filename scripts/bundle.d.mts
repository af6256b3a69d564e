/** Types of scripts/bundle.mjs, for the tests, benchmarks and playground that start the bundled bot. */
export declare const EXTERNAL: readonly string[];
/** dist/bot/main.js: what `npm start` runs. */
export declare const BOT_BUNDLE: string;
export declare function bundleIsStale(): boolean;
/** Builds dist/bot (only when stale with `ifStale`), one build at a time across processes. */
export declare function bundleBot(opts?: { ifStale?: boolean }): Promise<void>;
