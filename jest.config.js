/** Tests run against a real Temporal dev server started once for the whole run. */
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
  },
  transformIgnorePatterns: ['/node_modules/(?!@electric-sql/pglite/dist/)'],
};
