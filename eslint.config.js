// Lint: floating promises are errors everywhere; workflow code may not import Node built-ins or
// I/O modules (it must stay deterministic and replayable).
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

const nodeBuiltins = ['fs', 'child_process', 'net', 'os', 'crypto', 'http', 'https', 'path', 'process', 'pg', 'timers', 'worker_threads', 'dgram', 'dns', 'cluster'];

module.exports = tseslint.config(
  { ignores: ['lib/**', 'node_modules/**', '.venv/**', '**/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: ['workflows/**/*.ts', 'src/job/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [...nodeBuiltins, ...nodeBuiltins.map((m) => `node:${m}`)].map((name) => ({ name, message: 'workflow code must be deterministic: do I/O in activities' })) }],
    },
  },
);
