#!/usr/bin/env bash
# Installs the helm CLI that the chart tests (deploy/) run, built from the Go
# module proxy into a folder named by version so a warm machine skips it.
# Idempotent: exits at once when the binary is already there.
#
#   scripts/helm.sh                    # into $HOME/.cache/ripcord/helm-v3.22.0
#   RIPCORD_HELM_BIN=/opt/helm scripts/helm.sh
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}
DEST=${RIPCORD_HELM_BIN:-$HOME/.cache/ripcord/helm-$HELM_VERSION}

if [ -x "$DEST/helm" ]; then
  echo "helm: $DEST/helm is there"
  exit 0
fi

# Same flag as the Makefile so the build cache is shared with the project;
# outside the repository so its go.mod is not consulted or changed.
export GOFLAGS=-trimpath
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
cd "${TMPDIR:-/tmp}"

# Ask the proxy first so a missing version fails with a clear message
# instead of a long build error.
if ! go list -m "helm.sh/helm/v3@$HELM_VERSION" >/dev/null; then
  echo "helm: the module proxy does not serve helm.sh/helm/v3@$HELM_VERSION; set HELM_VERSION (for example v3.19.5)" >&2
  exit 1
fi

echo "helm: building helm $HELM_VERSION into $DEST"
mkdir -p "$DEST"
CGO_ENABLED=0 GOBIN="$DEST" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$DEST/helm" version --short
