#!/usr/bin/env bash
# Builds the Kubernetes control plane that the cluster agent's end-to-end
# tests start on 127.0.0.1 (internal/k8stest): kube-apiserver,
# kube-controller-manager, kube-scheduler, etcd and kwok, all from the Go
# module proxy, into a folder named by version so a warm machine skips the
# build. Idempotent: exits at once when every binary is already there.
#
# The build happens in a scratch module outside the repository (the proxy's
# copy of k8s.io/kubernetes has no staging/src, so its staging modules are
# pinned to their published versions with replace lines). It takes about 11
# minutes and 3 GB of build cache on a 2-core machine with an empty cache.
#
#   scripts/k8s-binaries.sh            # build into $HOME/.cache/ripcord/k8s-v1.34.2
#   RIPCORD_K8S_BIN=/opt/k8s scripts/k8s-binaries.sh
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.2}
STAGING_VERSION=v0.${K8S_VERSION#v1.}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
DEST=${RIPCORD_K8S_BIN:-$HOME/.cache/ripcord/k8s-$K8S_VERSION}
BINS=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)

complete() {
  for b in "${BINS[@]}"; do [ -x "$DEST/$b" ] || return 1; done
  [ -d "$DEST/kwok-stage" ] || return 1
}
if complete; then
  echo "k8s-binaries: $DEST is complete"
  exit 0
fi

# One build at a time into DEST: a test harness and a CI run, or two
# worktrees, may start this at once, and two builds writing the same
# files fail each other. The one that waited finds DEST complete.
mkdir -p "$DEST"
exec 9>"$DEST/.lock"
if ! flock -n 9; then
  echo "k8s-binaries: another build into $DEST is running; waiting for it to finish"
  flock 9
fi
if complete; then
  echo "k8s-binaries: $DEST is complete"
  exit 0
fi

# Same flag as the Makefile so the build cache is shared with the project.
export GOFLAGS=-trimpath
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
mkdir -p "$DEST"
SCRATCH=$(mktemp -d /tmp/ripcord-k8s-build.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"

echo "k8s-binaries: building Kubernetes $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION into $DEST"
go mod init ripcord.invalid/k8s-binaries >/dev/null 2>&1

# Every "k8s.io/x => ./staging/src/k8s.io/x" line of k8s.io/kubernetes'
# own go.mod becomes "k8s.io/x => k8s.io/x <staging version>".
KMOD=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
[ -f "$KMOD" ] || { echo "k8s-binaries: no go.mod for k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
{
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$KMOD" |
    awk -v v="$STAGING_VERSION" '{ printf "\t%s => %s %s\n", $1, $1, v }'
  echo ")"
} >>go.mod
n=$(grep -c '=> k8s.io/' go.mod)
echo "k8s-binaries: $n staging modules pinned to $STAGING_VERSION"

go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-scheduler@$K8S_VERSION" \
  "go.etcd.io/etcd/server/v3@$ETCD_VERSION"

for b in kube-apiserver kube-controller-manager kube-scheduler; do
  if [ ! -x "$DEST/$b" ]; then
    go build -o "$DEST/$b.tmp" "k8s.io/kubernetes/cmd/$b"
    mv "$DEST/$b.tmp" "$DEST/$b"
  fi
done
if [ ! -x "$DEST/etcd" ]; then
  go build -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3 && mv "$DEST/etcd.tmp" "$DEST/etcd"
fi

# kwok is built in its own module (its go.mod decides its dependencies).
if [ ! -x "$DEST/kwok" ]; then
  GOBIN="$SCRATCH/bin" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$SCRATCH/bin/kwok" "$DEST/kwok"
fi
KWOKDIR=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
rm -rf "$DEST/kwok-stage"
cp -r "$KWOKDIR/kustomize/stage" "$DEST/kwok-stage"
chmod -R u+w "$DEST/kwok-stage"

if ! complete; then
  echo "k8s-binaries: build finished but $DEST is incomplete:" >&2
  ls -l "$DEST" >&2
  exit 1
fi
echo "k8s-binaries: done"
ls -l "$DEST"
