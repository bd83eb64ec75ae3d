#!/usr/bin/env bash
# A single-node Kubernetes for the Kubernetes tests (test/setup/kube-cluster.ts), from what this
# kind of machine can reach (no image registry, no prebuilt Kubernetes download):
#   - Debian's etcd-server, containerd and runc, and containernetworking-plugins (/usr/lib/cni),
#     when missing;
#   - Kubernetes built from source with the Go module proxy into a versioned cache,
#       $CACHE/kubernetes-<version>/bin/{kube-apiserver,kubelet,kube-controller-manager,kube-scheduler}
#       $CACHE/kubernetes-<version>/bin/pause      the sandbox ("pause") container's program
#       $CACHE/kubernetes-<version>/pause.tar      an image of it (`docker save` format) for containerd
#     k8s.io/kubernetes replaces its staging modules (k8s.io/api, …) with ./staging paths, so it
#     cannot be `go install`ed; it is built from a small module of our own that requires it and
#     replaces each staging module with its published v0.<minor>.<patch> (lines generated from
#     k8s.io/kubernetes's own go.mod);
#   - Helm built with `go install`:  $CACHE/helm-<version>/helm
# Every build runs at the lowest priority (nice 19): CI may be using the CPU at the same time.
# Each piece is built in a temporary directory and renamed, so an interrupted build never looks
# complete; a second run builds nothing. Prints the Kubernetes directory on stdout.
set -euo pipefail
VERSION=${KUBERNETES_VERSION:-1.36.3}
HELM_VERSION=${HELM_VERSION:-3.22.0}
CACHE=${TELASTIC_CACHE_DIR:-$HOME/.cache/telastic}
KUBE_DIR="$CACHE/kubernetes-$VERSION"   # test/setup/kube-cluster.ts has the same names
HELM_DIR="$CACHE/helm-$HELM_VERSION"
say() { echo "setup: $*" >&2; }

# --- Debian's packages -------------------------------------------------------------------------
missing=()
command -v etcd >/dev/null || [ -x /usr/bin/etcd ] || missing+=(etcd-server)
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || missing+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    say "installing Debian's ${missing[*]}"
    # etcd-server's package starts a system etcd; the tests run their own, so it is stopped again.
    apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
    if [[ " ${missing[*]} " == *" etcd-server "* ]]; then
      { systemctl disable --now etcd || service etcd stop; } >/dev/null 2>&1 || true
    fi
  else
    say "missing ${missing[*]}: install them from Debian (as root)"; exit 1
  fi
fi

if [ -f "$KUBE_DIR/.complete" ] && [ -x "$HELM_DIR/helm" ]; then echo "$KUBE_DIR"; exit 0; fi

# Go where the machine keeps it when it is not on PATH (the official tarball's place).
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then PATH="/usr/local/go/bin:$PATH"; fi
command -v go >/dev/null || { say "building Kubernetes and Helm needs Go (any version that can fetch go1.27.3 from the Go module proxy)"; exit 1; }
export GOTOOLCHAIN=go1.27.3 GOFLAGS=-trimpath CGO_ENABLED=0
say "building Kubernetes v$VERSION (kube-apiserver, kubelet, kube-controller-manager, kube-scheduler) and Helm v$HELM_VERSION from source with Go into $CACHE (first time only: about 10 minutes at low priority, Kubernetes is a few million lines of Go)"
mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/.kubernetes-$VERSION.XXXXXX")
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
# Go's own lines (hundreds of "go: downloading …") go to a log, shown only when a build fails.
LOG="$TMP/build.log"
fail() { tail -20 "$LOG" >&2; say "$*"; exit 1; }

# --- Kubernetes --------------------------------------------------------------------------------
if [ ! -f "$KUBE_DIR/.complete" ]; then
  GOMOD=$(go mod download -json "k8s.io/kubernetes@v$VERSION" 2>>"$LOG" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [ -f "$GOMOD" ] || fail "could not download k8s.io/kubernetes@v$VERSION (needs the Go module proxy)"
  STAGING="v0.${VERSION#1.}"   # k8s.io/api etc. are published as v0.<minor>.<patch>
  mkdir -p "$TMP/mod/pause" "$TMP/out/bin"
  {
    echo "module telastic.test/kubernetes"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$GOMOD")"
    echo
    echo "require k8s.io/kubernetes v$VERSION"
    echo
    sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/k8s\.io/.*$#replace \1 => \1 '"$STAGING"'#p' "$GOMOD"
  } >"$TMP/mod/go.mod"
  [ "$(grep -c '^replace ' "$TMP/mod/go.mod")" -gt 20 ] || fail "k8s.io/kubernetes@v$VERSION's go.mod has no staging replace lines ($GOMOD)"
  cat >"$TMP/mod/tools.go" <<'GO'
//go:build tools

// The commands this module builds, so that `go mod tidy` keeps what they need.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
  # The sandbox container's program: holds the pod's namespaces, reaps orphans, ends on SIGTERM.
  cat >"$TMP/mod/pause/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
GO
  (cd "$TMP/mod" && go mod tidy) >>"$LOG" 2>&1 || fail "go mod tidy failed for k8s.io/kubernetes@v$VERSION"
  LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=v$VERSION -X k8s.io/component-base/version.gitMajor=${VERSION%%.*} -X k8s.io/component-base/version.gitMinor=$(echo "$VERSION" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
  for cmd in kube-apiserver kubelet kube-controller-manager kube-scheduler; do
    t0=$SECONDS
    (cd "$TMP/mod" && nice -n 19 go build -ldflags "$LDFLAGS" -o "$TMP/out/bin/$cmd" "k8s.io/kubernetes/cmd/$cmd") >>"$LOG" 2>&1 ||
      fail "could not build $cmd v$VERSION"
    say "  $cmd: $((SECONDS - t0)) s"
  done
  (cd "$TMP/mod" && nice -n 19 go build -ldflags "-s -w" -o "$TMP/out/bin/pause" ./pause) >>"$LOG" 2>&1 || fail "could not build the pause program"

  # The pause image, in `docker save` form (one layer holding /pause), which `ctr images import` reads.
  IMG="$TMP/image"
  mkdir -p "$IMG/rootfs"
  cp "$TMP/out/bin/pause" "$IMG/rootfs/pause"
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$IMG/rootfs" -cf "$IMG/layer.tar" pause
  LAYER=$(sha256sum "$IMG/layer.tar" | cut -d' ' -f1)
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"scripts/setup-kubernetes.sh"}]}' "$LAYER" >"$IMG/config.json"
  CONFIG=$(sha256sum "$IMG/config.json" | cut -d' ' -f1)
  mkdir -p "$IMG/tar/$LAYER"
  mv "$IMG/layer.tar" "$IMG/tar/$LAYER/layer.tar"
  mv "$IMG/config.json" "$IMG/tar/$CONFIG.json"
  printf '[{"Config":"%s.json","RepoTags":["telastic.test/pause:%s"],"Layers":["%s/layer.tar"]}]' "$CONFIG" "$VERSION" "$LAYER" >"$IMG/tar/manifest.json"
  tar --numeric-owner --owner=0 --group=0 -C "$IMG/tar" -cf "$TMP/out/pause.tar" .
  chmod 755 "$TMP/out" "$TMP/out/bin"
  touch "$TMP/out/.complete"
  rm -rf "$KUBE_DIR" && mv "$TMP/out" "$KUBE_DIR"
fi

# --- Helm --------------------------------------------------------------------------------------
if [ ! -x "$HELM_DIR/helm" ]; then
  mkdir -p "$TMP/helm"
  t0=$SECONDS
  GOBIN="$TMP/helm" nice -n 19 go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" >>"$LOG" 2>&1 ||
    fail "could not build Helm v$HELM_VERSION (go install; needs the Go module proxy)"
  say "  helm: $((SECONDS - t0)) s"
  chmod 755 "$TMP/helm"
  rm -rf "$HELM_DIR" && mv "$TMP/helm" "$HELM_DIR"
fi
chmod -R u+w "$TMP"; rm -rf "$TMP"; trap - EXIT
echo "$KUBE_DIR"
