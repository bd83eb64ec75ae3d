/**
 * Tests run against a real Temporal dev server started once for the whole run.
 *
 * puppeteer-core (the browser tests' driver) and the packages it loads are published as ES
 * modules only, which jest's CommonJS runtime cannot load (without node's
 * --experimental-vm-modules): ts-jest, allowing JavaScript, turns them into CommonJS, once
 * (jest caches the result).
 */
const esmOnly = ['puppeteer-core', '@puppeteer/browsers', 'chromium-bidi', 'modern-tar'];

module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  testTimeout: 120000,
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json', diagnostics: { warnOnly: false } }],
    '/node_modules/@electric-sql/pglite/dist/.+\\.cjs$': '<rootDir>/test/setup/pglite-transform.js',
    [`/node_modules/(${esmOnly.join('|')})/.+\\.js$`]: ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'ES2022', esModuleInterop: true } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!@electric-sql/pglite/dist/|${esmOnly.map((p) => `${p}/`).join('|')})`],
};
