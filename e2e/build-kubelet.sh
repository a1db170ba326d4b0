#!/usr/bin/env bash
# Builds a real node for the e2e control plane (#33) into e2e/bin-kubelet/ (git-ignored):
#   kubelet, dra-test-driver   from k8s.io/kubernetes v1.37.2, as e2e/build.sh builds the control plane;
#                              the test driver is k8s.io/kubernetes/test/e2e/dra/test-driver, a DRA
#                              kubelet plugin that publishes ResourceSlices and writes CDI specs.
#   containerd, containerd-shim-runc-v2, ctr
#                              containerd v2.4.2 from its Go module (CDI is always on in 2.x; Debian's
#                              containerd 1.6 has no CDI, so a claim's devices never reach the container).
#   pause                      the sandbox image's binary: k8s.io/kubernetes's build/pause/linux/pause.c
#                              compiled with gcc -static (no image registry is reachable here).
# runc and the CNI plugins come from Debian (apt-get install runc containernetworking-plugins);
# e2e/kubelet.py runs them all. The kubelet needs modules e2e/controlplane/go.mod does not list:
# its go.mod is copied to e2e/bin-kubelet/go.kubelet.mod and completed there with `go get`, so the
# control plane's module file is left alone and both stay on the same versions.
set -euo pipefail
cd "$(dirname "$0")/controlplane"
VERSION=v1.37.2
CONTAINERD=v2.4.2
BIN=../bin-kubelet  # relative to e2e/controlplane
mkdir -p "$BIN"
MOD=$BIN/go.kubelet.mod
if [ ! -f "$MOD" ] || [ go.mod -nt "$MOD" ]; then
    cp go.mod "$MOD"
    cp go.sum "${MOD%.mod}.sum"
    go get -modfile="$MOD" k8s.io/kubernetes/pkg/kubelet@$VERSION k8s.io/kubernetes/pkg/kubelet/server@$VERSION \
        k8s.io/kubernetes/test/e2e/dra/test-driver/app@$VERSION
fi
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
done
start=$(date +%s)
nice -n 19 go build -modfile="$MOD" -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$BIN/" k8s.io/kubernetes/cmd/kubelet
nice -n 19 go build -modfile="$MOD" -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$BIN/dra-test-driver" \
    k8s.io/kubernetes/test/e2e/dra/test-driver
echo "e2e: kubelet and dra-test-driver $VERSION built in $(( $(date +%s) - start )) s"

# `go install pkg@version` builds with containerd's own go.mod (it has no replace directives).
# No cgo: the btrfs, devmapper and zfs snapshotters are left out (overlayfs is what we use).
start=$(date +%s)
GOBIN=$(cd "$BIN" && pwd) CGO_ENABLED=0 nice -n 19 go install -tags "no_btrfs no_devmapper no_zfs" -trimpath \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD" \
    github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD \
    github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD
echo "e2e: containerd $CONTAINERD built in $(( $(date +%s) - start )) s"

PAUSE_C=$(go list -modfile="$MOD" -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
gcc -Os -static -DVERSION=$VERSION -o "$BIN/pause" "$PAUSE_C"
touch "$BIN/.built"
echo "e2e: e2e/bin-kubelet/: $(cd "$BIN" && ls -I '*.mod' -I '*.sum' | tr '\n' ' ')"
