#!/usr/bin/env bash
# Builds the e2e control plane into e2e/bin/: kube-apiserver, kube-scheduler and
# kube-controller-manager from the k8s.io/kubernetes v1.37.2 module, and our etcd
# (e2e/controlplane/etcd). Go's module and build caches are the usual ones in $HOME,
# so only the first build is slow. Runs at nice 19: it must not disturb other work.
set -euo pipefail
cd "$(dirname "$0")/controlplane"
BIN=${E2E_BIN:-../bin}  # relative to e2e/controlplane
VERSION=v1.37.2
mkdir -p "$BIN"
echo "e2e: building kube-apiserver, kube-scheduler, kube-controller-manager $VERSION and etcd into e2e/bin/" \
     "(the first build takes minutes: 9 to 15 on 2 cores, ~5 GB of Go caches in \$HOME; later ones reuse them)"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
done
start=$(date +%s)
nice -n 19 go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    ./etcd ./pki
touch "$BIN/.built"
echo "e2e: built in $(( $(date +%s) - start )) s: $(cd "$BIN" && ls kube-* etcd pki | tr '\n' ' ')"
