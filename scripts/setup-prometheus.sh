#!/usr/bin/env bash
# Debian's Prometheus (2.42) for the metrics test (test/e2e/metrics-prometheus.test.ts), unpacked
# into a versioned cache: ${TELASTIC_CACHE_DIR:-$HOME/.cache/telastic}/prometheus-<version>/bin.
# The .deb is fetched with `apt-get download` and unpacked with `dpkg -x` rather than installed:
# installing it starts a system service listening on :9090 (and node-exporter with it), which
# would collide with other runs on a shared machine; the test starts its own on a free port.
# Does nothing when the cache holds it. Prints its directory's bin path on stdout.
set -euo pipefail
CACHE=${TELASTIC_CACHE_DIR:-$HOME/.cache/telastic}
VERSION=${PROMETHEUS_DEB_VERSION:-2.42.0+ds-5+deb12u1}
DIR="$CACHE/prometheus-${VERSION%%+*}"
if [ -x "$DIR/bin/prometheus" ]; then echo "$DIR/bin"; exit 0; fi
echo "setup: unpacking Debian's prometheus $VERSION into $DIR (first time only: a 30 MB download)" >&2
command -v apt-get >/dev/null || { echo "setup: prometheus needs apt-get (Debian) to fetch prometheus $VERSION" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The pinned version first; a mirror that has moved on to another bookworm update serves its own.
fetch() { apt-get download -q "prometheus=$VERSION" >/dev/null 2>&1 || apt-get download -q prometheus >/dev/null 2>&1; }
( cd "$TMP" && { fetch || { apt-get update -q >/dev/null 2>&1 && fetch; }; } ) || { echo "setup: could not download Debian's prometheus package (apt-get download prometheus)" >&2; exit 1; }
dpkg -x "$TMP"/prometheus_*.deb "$TMP/x"
mkdir -p "$DIR.tmp/bin"
cp "$TMP/x/usr/bin/prometheus" "$TMP/x/usr/bin/promtool" "$DIR.tmp/bin/"
rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
"$DIR/bin/prometheus" --version 2>&1 | head -1 >&2
echo "$DIR/bin"
