import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const discordJsErrors = {
  name: 'discord.js',
  message:
    'Import from @discordjs/builders, @discordjs/rest or discord-api-types/v10: discord.js loads all of itself (~6 MiB of heap, a third undici; docs/performance.md, "Where the memory goes"), and its CommonJS error classes fail instanceof against the ESM REST the bot uses.',
};

export default tseslint.config(
  { ignores: ['node_modules', 'dist', 'data', 'coverage'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read config, not process.env (src/config.ts only).' },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: [discordJsErrors],
        },
      ],
    },
  },
  {
    // The media client and job rendering are below the operations registry: it is passed in
    // (media/ports.ts, RenderOperations in discord/render/job-render.ts), never imported (no import cycle).
    files: [
      'src/services/media/**/*.ts',
      'src/services/discord/render*.ts',
      'src/services/discord/render/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [discordJsErrors],
          patterns: [
            {
              group: ['**/operations', '**/operations/*'],
              message:
                'The operations registry is passed in (MediaOperations, RenderOperations): do not import it here.',
            },
          ],
        },
      ],
    },
  },
  {
    // The playground page: plain browser ES modules, no build step.
    files: ['playground/public/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
  {
    // Plain Node scripts (no TypeScript program behind them).
    files: ['**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['src/config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
