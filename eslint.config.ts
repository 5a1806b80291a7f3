import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const serviceNames = ['gateway', 'console', 'sync-worker', 'audit-writer'];

/** The MCP SDK's classes (v1 and v2) whose prototypes must not be reached into. */
const MCP_SDK_CLASSES = [
  'Protocol',
  'Server',
  'McpServer',
  'Client',
  'StreamableHTTPServerTransport',
  'WebStandardStreamableHTTPServerTransport',
  'NodeStreamableHTTPServerTransport',
  'PerRequestHTTPServerTransport',
  'StreamableHTTPClientTransport',
];

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
  // The MCP SDK only through its public API (issue 38): reaching past an override through a class's prototype
  // or reading a private member holds only while the SDK stays pinned at one version.
  {
    files: ['**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error' as const,
        {
          selector: `MemberExpression[property.name='prototype'][object.name=/^(${MCP_SDK_CLASSES.join('|')})$/]`,
          message: "An MCP SDK class's prototype reaches past its public API (an override, a private method): use the SDK's public API.",
        },
        {
          selector: "CallExpression[callee.property.name=/^(getPrototypeOf|setPrototypeOf)$/]",
          message: 'Walking or replacing a prototype reaches past a class\'s own methods (how SDK overrides get bypassed): use the public API.',
        },
        {
          selector: 'MemberExpression[computed=false][property.name=/^_(?!meta$|zod$|writev?$)/]',
          message: "A `_`-prefixed member is a library's private state (the MCP SDK's are all named so): use its public API. (`_meta` is MCP's own field.)",
        },
        {
          selector: 'MemberExpression[computed=true][property.value=/^_(?!meta$)/]',
          message: "A `_`-prefixed member is a library's private state (the MCP SDK's are all named so): use its public API.",
        },
        {
          selector: "ImportDeclaration[source.value=/^@modelcontextprotocol\\//] > ImportSpecifier[imported.name='Protocol']",
          message: "The SDK's Protocol base class is how Server's overrides get bypassed: use Server's public API.",
        },
        {
          selector: 'ImportDeclaration[source.value=/^@modelcontextprotocol\\/(sdk\\/shared\\/protocol|[^/]+\\/dist\\/)/]',
          message: "Import the MCP SDK from its published entry points, not its Protocol module or its build's files.",
        },
      ],
    },
  },
  // Scripts and tests are command-line programs; printing is their job.
  { files: ['scripts/**/*.ts', '**/test/**/*.ts', 'test/**/*.ts'], rules: { 'no-console': 'off' } },
);
