'use strict';
/**
 * Jest runs modules in a vm context where a dynamic import() throws unless node runs with
 * --experimental-vm-modules, and PGlite's CommonJS build loads Node built-ins (fs, zlib, util,
 * module, stream) with `await import("…")`. For PGlite's files only, this turns each of those into
 * the same module through require() (PGlite uses their named exports only), so the suite runs
 * as before. Outside jest PGlite loads as published. The require is the file's own, taken by a
 * function appended at its end (hoisted), since PGlite declares a `require` of its own inside.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');

const self = fs.readFileSync(__filename);

module.exports = {
  /** Jest's cache would otherwise keep files this transform produced before it changed. */
  getCacheKey(source, filename) {
    return crypto.createHash('sha256').update(self).update(filename).update(source).digest('hex');
  },
  process(source) {
    const code = source.replace(/\bimport\((["'])([a-z/]+)\1\)/g, 'Promise.resolve().then(() => __pgliteRequire($1$2$1))');
    return { code: `${code}\nfunction __pgliteRequire(id) { return require(id); }\n` };
  },
};
