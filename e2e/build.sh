#!/usr/bin/env bash
# Builds the e2e control plane: kube-apiserver, kube-scheduler and kube-controller-manager
# from the k8s.io/kubernetes module, and our etcd (e2e/controlplane/etcd) and pki.
#   e2e/build.sh              Kubernetes v1.37.2 (go.mod) into e2e/bin/ (the default, what `make e2e` runs)
#   e2e/build.sh 1.38         Kubernetes v1.38.0-beta.0 (go.138.mod) into e2e/bin-1.38/; opt-in, no CI
#                             target builds it. It needs Go 1.27: GOTOOLCHAIN is set to go.138.mod's
#                             toolchain line, which the go command fetches (as a module) when not cached.
# The version may also come from E2E_KUBE_VERSION. Go's module and build caches are the usual
# ones in $HOME, so only the first build of a version is slow. Runs at nice 19: it must not
# disturb other work.
set -euo pipefail
cd "$(dirname "$0")/controlplane"
KUBE=${1:-${E2E_KUBE_VERSION:-1.37}}
MODFLAG=()
case "$KUBE" in
    1.37)
        VERSION=v1.37.2
        BIN=${E2E_BIN:-../bin}  # relative to e2e/controlplane
        ;;
    1.38)
        VERSION=v1.38.0-beta.0
        BIN=${E2E_BIN:-../bin-1.38}
        MODFLAG=(-modfile=go.138.mod)
        GOTOOLCHAIN=$(awk '$1 == "toolchain" {print $2}' go.138.mod)
        export GOTOOLCHAIN
        ;;
    *)
        echo "e2e/build.sh: Kubernetes version '$KUBE': 1.37 (the default) or 1.38" >&2
        exit 2
        ;;
esac
MINOR=${VERSION#v1.}
MINOR=${MINOR%%.*}
mkdir -p "$BIN"
echo "e2e: building kube-apiserver, kube-scheduler, kube-controller-manager $VERSION and etcd into e2e/${BIN#../}/" \
     "(the first build takes minutes: 9 to 15 on 2 cores, ~5 GB of Go caches in \$HOME; later ones reuse them)"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR -X $pkg.gitTreeState=clean"
done
start=$(date +%s)
nice -n 19 go build "${MODFLAG[@]}" -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    ./etcd ./pki
touch "$BIN/.built"
echo "e2e: built in $(( $(date +%s) - start )) s: $(cd "$BIN" && ls kube-* etcd pki | tr '\n' ' ')"
