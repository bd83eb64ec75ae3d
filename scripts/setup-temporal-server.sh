#!/usr/bin/env bash
# The real Temporal server (not the CLI's dev server) for the cluster tests
# (test/setup/temporal-cluster.ts, test/e2e/cluster.test.ts) and the server image: built from
# source with the Go module proxy into a versioned cache,
#   ${TELASTIC_CACHE_DIR:-$HOME/.cache/telastic}/temporal-server-<version>/
#     bin/temporal-server      go.temporal.io/server/cmd/server
#     bin/temporal-sql-tool    go.temporal.io/server/cmd/tools/sql (creates and updates schemas)
#     schema/postgresql/v12/   the module's PostgreSQL schemas (temporal, visibility)
#     config/                  the module's sample configurations and dynamic config
#     .complete                written last: the directory is whole
# It is built in a temporary directory and renamed, so an interrupted build never looks complete;
# a second run builds nothing. Prints the directory on stdout.
set -euo pipefail
VERSION=${TEMPORAL_SERVER_VERSION:-1.32.2}
CACHE=${TELASTIC_CACHE_DIR:-$HOME/.cache/telastic}
DIR="$CACHE/temporal-server-$VERSION"
if [ -f "$DIR/.complete" ]; then echo "$DIR"; exit 0; fi

# Go where the machine keeps it when it is not on PATH (the official tarball's place).
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then PATH="/usr/local/go/bin:$PATH"; fi
command -v go >/dev/null || { echo "setup: building the Temporal server needs Go (any version that can fetch go1.27.3 from the Go module proxy)" >&2; exit 1; }
export GOTOOLCHAIN=go1.27.3 GOFLAGS=-trimpath
echo "setup: building the Temporal server $VERSION and its schema tool from source with Go into $DIR (first time only: several minutes of CPU)" >&2

mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/.temporal-server-$VERSION.XXXXXX")
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/bin"
# Go's own lines (a few hundred "go: downloading …") go to a log, shown only when the build fails.
LOG="$TMP/build.log"
GOBIN="$TMP/bin" go install "go.temporal.io/server/cmd/server@v$VERSION" "go.temporal.io/server/cmd/tools/sql@v$VERSION" >"$LOG" 2>&1 ||
  { tail -20 "$LOG" >&2; echo "setup: could not build the Temporal server $VERSION (go install; needs the Go module proxy)" >&2; exit 1; }
mv "$TMP/bin/server" "$TMP/bin/temporal-server"
mv "$TMP/bin/sql" "$TMP/bin/temporal-sql-tool"

# The schemas and sample configurations come from the module's source in Go's module cache.
MOD=$(go mod download -json "go.temporal.io/server@v$VERSION" 2>>"$LOG" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$MOD/schema/postgresql/v12" ] || { echo "setup: go.temporal.io/server@v$VERSION has no schema/postgresql/v12 (module at '$MOD')" >&2; exit 1; }
mkdir -p "$TMP/schema/postgresql"
cp -R "$MOD/schema/postgresql/v12" "$TMP/schema/postgresql/v12"
cp -R "$MOD/config" "$TMP/config"
chmod -R u+w "$TMP"   # the module cache's files are read-only
chmod 755 "$TMP"      # mktemp made it 700; others (an image build) read it
rm -f "$LOG"
touch "$TMP/.complete"

rm -rf "$DIR"
mv "$TMP" "$DIR"
trap - EXIT
echo "$DIR"
