#!/usr/bin/env bash
# Docker for the image and compose tests (test/e2e/image.test.ts, test/e2e/compose.test.ts):
#   - Debian's docker.io (dockerd, containerd, runc) and debootstrap, when dockerd is missing;
#   - the `docker compose` CLI plugin, built from source with Go (the module cannot be
#     `go install`ed: its go.mod has exclude directives; and its Docker Desktop credential lookup
#     needs a module the proxy does not serve, so this build leaves that lookup out):
#       $CACHE/docker-compose-<version>/docker-compose
#   - base images built from Debian packages, since no image registry answers here:
#       $CACHE/docker-bases-<key>/node.tar   Debian trixie: nodejs 20, npm, tini, ca-certificates
#       $CACHE/docker-bases-<key>/pg.tar     Debian bookworm: postgresql-15, netcat, ca-certificates
#     The tests `docker import` them into their own dockerd.
# Each piece is built in a temporary directory and renamed, so an interrupted build never looks
# complete; a second run builds nothing. Prints the cache directory on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
COMPOSE_VERSION=${COMPOSE_VERSION:-5.7.1}
NPM_VERSION=${NPM_VERSION:-11.19.1}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASES_KEY="trixie-bookworm-npm$NPM_VERSION-2"  # test/setup/docker.ts has the same key
CACHE=${TELASTIC_CACHE_DIR:-$HOME/.cache/telastic}
mkdir -p "$CACHE"
say() { echo "setup: $*" >&2; }

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    say "installing Debian's docker.io and debootstrap"
    apt-get install -y -q docker.io debootstrap >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q docker.io debootstrap >/dev/null; }
  else
    say "dockerd or debootstrap is missing: install Debian's docker.io and debootstrap (as root)"; exit 1
  fi
fi

# --- docker compose, from source -------------------------------------------------------------
COMPOSE_DIR="$CACHE/docker-compose-$COMPOSE_VERSION"
if [ ! -x "$COMPOSE_DIR/docker-compose" ]; then
  if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then PATH="/usr/local/go/bin:$PATH"; fi
  command -v go >/dev/null || { say "building docker compose needs Go (any version that can fetch go1.27.3 from the Go module proxy)"; exit 1; }
  export GOTOOLCHAIN=go1.27.3 GOFLAGS=-trimpath
  say "building docker compose $COMPOSE_VERSION from source with Go into $COMPOSE_DIR (first time only: a few minutes of CPU)"
  TMP=$(mktemp -d "$CACHE/.docker-compose.XXXXXX")
  trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
  LOG="$TMP/build.log"
  MOD=$(go mod download -json "github.com/docker/compose/v5@v$COMPOSE_VERSION" 2>>"$LOG" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$MOD/cmd" ] || { tail -5 "$LOG" >&2; say "could not download github.com/docker/compose/v5@v$COMPOSE_VERSION"; exit 1; }
  cp -R "$MOD" "$TMP/src" && chmod -R u+w "$TMP/src"
  rm -f "$TMP/src/internal/registry/desktop_test.go"
  cat >"$TMP/src/internal/registry/desktop.go" <<'GO'
package registry

// NewDesktopAuthProvider returns fallback: this build has no Docker Desktop session lookup.
func NewDesktopAuthProvider(fallback AuthProvider) AuthProvider { return fallback }
GO
  mkdir -p "$TMP/out"
  (cd "$TMP/src" && go build -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=v$COMPOSE_VERSION" -o "$TMP/out/docker-compose" ./cmd) >>"$LOG" 2>&1 ||
    { tail -20 "$LOG" >&2; say "could not build docker compose $COMPOSE_VERSION"; exit 1; }
  chmod 755 "$TMP/out"
  rm -rf "$COMPOSE_DIR" && mv "$TMP/out" "$COMPOSE_DIR"
  chmod -R u+w "$TMP"; rm -rf "$TMP"; trap - EXIT
fi

# --- base images, from Debian packages ---------------------------------------------------------
BASES="$CACHE/docker-bases-$BASES_KEY"
if [ ! -f "$BASES/.complete" ]; then
  [ "$(id -u)" = 0 ] || { say "building the base images with debootstrap needs root"; exit 1; }
  say "building base images with debootstrap into $BASES (first time only: Debian trixie with Node 20 and npm $NPM_VERSION, bookworm with PostgreSQL 15; a few minutes of downloads)"
  TMP=$(mktemp -d "$CACHE/.docker-bases.XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  slim() { rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*; }
  # The CAs this host added (a TLS-inspecting proxy in front of the registries, say): builds in
  # these images reach what the host reaches. Node reads the bundle through NODE_EXTRA_CA_CERTS,
  # which the tests set when they import the image.
  trust_host_cas() {
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
      cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/"
      chroot "$1" update-ca-certificates >/dev/null 2>&1
    fi
  }
  debootstrap --variant=minbase --include=nodejs,ca-certificates,tini trixie "$TMP/node" "$MIRROR" >"$TMP/node.log" 2>&1 ||
    { tail -5 "$TMP/node.log" >&2; say "debootstrap trixie failed (needs $MIRROR)"; exit 1; }
  # npm from the npm registry (Debian's npm package pulls in hundreds of node-* packages).
  (cd "$TMP" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$TMP/node/usr/lib/node_modules/npm"
  tar -xzf "$TMP/npm-$NPM_VERSION.tgz" -C "$TMP/node/usr/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$TMP/node/usr/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$TMP/node/usr/bin/npx"
  trust_host_cas "$TMP/node"
  slim "$TMP/node"
  tar --numeric-owner -C "$TMP/node" -cf "$TMP/node.tar" .
  rm -rf "$TMP/node"

  debootstrap --variant=minbase --include=postgresql-15,ca-certificates,netcat-openbsd bookworm "$TMP/pg" "$MIRROR" >"$TMP/pg.log" 2>&1 ||
    { tail -5 "$TMP/pg.log" >&2; say "debootstrap bookworm failed (needs $MIRROR)"; exit 1; }
  # The package's own cluster: images make theirs at first start, in their data directory.
  rm -rf "$TMP/pg/var/lib/postgresql/15/main" "$TMP/pg/etc/postgresql/15/main"
  trust_host_cas "$TMP/pg"
  slim "$TMP/pg"
  tar --numeric-owner -C "$TMP/pg" -cf "$TMP/pg.tar" .
  rm -rf "$TMP/pg" "$TMP"/*.log "$TMP"/*.tgz
  touch "$TMP/.complete"
  chmod 755 "$TMP"
  rm -rf "$BASES" && mv "$TMP" "$BASES"
  trap - EXIT
fi
echo "$CACHE"
