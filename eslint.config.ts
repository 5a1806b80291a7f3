import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const serviceNames = ['gateway', 'console', 'sync-worker', 'audit-writer'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  // Imports run one way: services import shared, shared imports no service, no service imports another.
  // The test kit (helpers and source doubles) is development only: no runtime source may import it.
  {
    files: ['shared/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error' as const, { patterns: ['@pcg/*', '!@pcg/shared', '**/services/**', '**/testkit/**'] }],
    },
  },
  {
    files: ['shared/src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error' as const, { patterns: ['@pcg/*', '!@pcg/shared', '!@pcg/testkit', '**/services/**', '**/testkit/src/**'] }],
    },
  },
  {
    files: ['testkit/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error' as const, { patterns: ['@pcg/*', '!@pcg/shared', '!@pcg/testkit', '**/services/**', '**/shared/src/**'] }],
    },
  },
  ...serviceNames.flatMap((name) => {
    const patterns = [...serviceNames.filter((other) => other !== name).map((other) => `@pcg/${other}`), '../../*/src/**', '**/shared/src/**'];
    return [
      { files: [`services/${name}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] as ['error', { patterns: string[] }] } },
      {
        files: [`services/${name}/src/**/*.ts`],
        rules: { 'no-restricted-imports': ['error', { patterns: [...patterns, '@pcg/testkit', '@pcg/testkit/*', '**/testkit/**'] }] as ['error', { patterns: string[] }] },
      },
    ];
  }),
  // The Console page renders values from agents and sources: as text, never parsed as markup (design 7.2).
  {
    files: ['services/console/web/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error' as const,
        ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'write', 'writeln', 'createContextualFragment'].map((property) => ({
          property,
          message: 'Render text with dom.ts (text nodes and properties); markup from a value is how script gets in.',
        })),
      ],
    },
  },
  // Scripts and tests are command-line programs; printing is their job.
  { files: ['scripts/**/*.ts', '**/test/**/*.ts', 'test/**/*.ts'], rules: { 'no-console': 'off' } },
);
