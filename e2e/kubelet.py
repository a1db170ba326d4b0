"""A real node beside the e2e control plane (#33): containerd, a kubelet and a DRA driver on this machine.

    python e2e/kubelet.py smoke              start everything, run two pods on the node, check them, stop
    python e2e/kubelet.py run -- CMD...      start everything, run CMD with KUBECONFIG set, stop
    python e2e/kubelet.py up                 start everything, serve until Ctrl-C

It starts the control plane of e2e/controlplane.py (1.37), then, from e2e/bin-kubelet/
(`e2e/build-kubelet.sh` builds it): containerd 2.4 (CRI, CDI on, cgroupfs, Debian's runc and CNI
plugins: `apt-get install runc containernetworking-plugins`), a kubelet v1.37.2 that registers the
Node `--node-name` (default e2e-node) with a client cert of the cluster CA (O=system:nodes), and
k8s.io/kubernetes's DRA test driver (test-driver.cdi.k8s.io) as its kubelet plugin: it publishes a
ResourceSlice of 4 devices for the node and, when the kubelet prepares a claim, writes a CDI spec
that gives the container `claim_<claim>_<request>=true` and the claim's opaque parameters as
`user_<key>=<value>` environment variables.

No image registry is reachable: two images are made here as OCI tarballs and imported with ctr,
dralloc.local/busybox:1 (Debian's busybox-static, sh and the applets under /bin) and
dralloc.local/pause:1 (e2e/bin-kubelet/pause, k8s.io/kubernetes's pause.c), containerd's sandbox
image. Pods use them with imagePullPolicy: Never.

Everything a run writes is in one temp folder (kubelet root dir, pod logs, containerd's root and
state, CDI specs, CNI's IP leases), removed at the end with what is mounted under it; the bridge
`dralloc0` and the kubelet's empty cgroups go too. Needs root. What this machine lacks, and so is
turned off here: CAP_SYS_RESOURCE (an oom_score_adj below 0 is refused: containerd's
restrict_oom_score_adj, or runc fails every sandbox with "can't get final child's PID from pipe:
EOF"), cgroup v2 (the kubelet's failCgroupV1: false), a resolvable node name (the API server reaches
the kubelet by InternalIP).

`smoke` is the check of #33's first step: a pod `echo hello` bound to the node Succeeds and its log,
read through the API server, says hello; a pod with a ResourceClaim (DeviceClass of the test
driver, scheduler `--scheduler`: kube-scheduler by default, or `dralloc` with `dralloc run
--standalone` started here) runs `env` and sees the claim's variables: allocated by the scheduler,
prepared by the kubelet through the driver, given to the container by containerd from the CDI spec.
One node per machine (the kubelet's port 10250 and the bridge's name are fixed).

`real_node()` is the same start and stop as a context manager, for tests/kubelet (`make e2e-kubelet`).
The driver runs with --enable-device-metadata: for each prepared request it also writes a metadata
file naming the allocated devices (driver, pool, device) and a CDI spec (in /var/run/cdi, where the
driver's library puts it; containerd reads that folder too) that mounts it into the container under
/var/run/kubernetes.io/dra-device-attributes/.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import hashlib
import io
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import controlplane  # e2e/controlplane.py: this file's folder is on sys.path
import devcluster

HERE = pathlib.Path(__file__).resolve().parent
BIN = HERE / "bin-kubelet"
REPO = HERE.parent
DRIVER = "test-driver.cdi.k8s.io"
BUSYBOX, PAUSE = "dralloc.local/busybox:1", "dralloc.local/pause:1"
BRIDGE = "dralloc0"
CNI_DIRS = [pathlib.Path("/usr/lib/cni"), pathlib.Path("/opt/cni/bin")]  # Debian's, upstream's
TMP_PREFIX = "dralloc-kubelet-"
# The device-metadata CDI specs: the driver's library writes them to its default folder.
METADATA_CDI = pathlib.Path("/var/run/cdi")


class Unavailable(RuntimeError):
    """This machine cannot run the node: what is missing, and how to get it."""


# ---- images: OCI image layouts in a tar, for `ctr images import` ------------------------------------

def _tar_add(tar: tarfile.TarFile, name: str, data: bytes = b"", *, mode: int = 0o644,
             kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.mode, info.type, info.linkname = mode, kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def _layer(files: dict[str, bytes], symlinks: dict[str, str]) -> bytes:
    """An uncompressed layer: the usual top-level folders, `files` (executables) and `symlinks`."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in ("bin", "dev", "etc", "proc", "sys", "tmp"):
            _tar_add(tar, folder, mode=0o1777 if folder == "tmp" else 0o755, kind=tarfile.DIRTYPE)
        for name, data in files.items():
            _tar_add(tar, name, data, mode=0o755)
        for name, target in symlinks.items():
            _tar_add(tar, name, kind=tarfile.SYMTYPE, link=target)
    return out.getvalue()


def write_image(path: pathlib.Path, ref: str, layer: bytes, cmd: list[str]) -> None:
    """An OCI image layout (one manifest, one layer) as a tar; ctr names it after io.containerd.image.name."""
    config = {"architecture": "amd64", "os": "linux", "config": {"Cmd": cmd, "Env": ["PATH=/bin"]},
              "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer).hexdigest()}"]}}
    with tarfile.open(path, "w") as tar:
        def blob(data: bytes, media_type: str) -> dict[str, Any]:
            digest = hashlib.sha256(data).hexdigest()
            _tar_add(tar, f"blobs/sha256/{digest}", data)
            return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}

        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": blob(json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json"),
                    "layers": [blob(layer, "application/vnd.oci.image.layer.v1.tar")]}
        descriptor = blob(json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json")
        descriptor["annotations"] = {"io.containerd.image.name": ref,
                                     "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1]}
        _tar_add(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        _tar_add(tar, "index.json", json.dumps({"schemaVersion": 2, "manifests": [descriptor]}).encode())


def busybox_layer() -> bytes:
    busybox = pathlib.Path("/bin/busybox")
    applets = subprocess.run([str(busybox), "--list"], check=True, capture_output=True, text=True).stdout.split()
    return _layer({"bin/busybox": busybox.read_bytes()},
                  {f"bin/{applet}": "busybox" for applet in applets if applet != "busybox"})


# ---- the node ---------------------------------------------------------------------------------------

def _toml(value: str | list[str]) -> str:
    """A TOML string or list of strings: JSON's are TOML's."""
    return json.dumps(value)


def node_ip() -> str:
    """This machine's first global IPv4 address: the kubelet refuses a loopback node IP."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        return line.split()[3].split("/")[0]
    raise SystemExit("e2e: no global IPv4 address for the kubelet (it refuses a loopback node IP)")


class Node:
    def __init__(self, plane: controlplane.ControlPlane, *, name: str, dra_driver: bool, dralloc: bool) -> None:
        self.plane = plane
        self.name = name
        self.ip = node_ip()
        self.dra_driver = dra_driver
        self.dralloc = dralloc
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
        self.logs = plane.logs  # beside the control plane's
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.socket = self.tmp / "containerd.sock"
        self.kubelet_root = self.tmp / "kubelet"
        self.cdi = self.tmp / "cdi"
        self._stopped = False
        # The API server reaches the kubelet (logs, exec) at the Node's InternalIP, with a client cert
        # of the cluster CA (the front proxy's: the kubelet only checks that the CA signed it).
        plane.extra_args.setdefault("kube-apiserver", []).extend([
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={plane.pki / 'front-proxy-client.crt'}",
            f"--kubelet-client-key={plane.pki / 'front-proxy-client.key'}"])

    @staticmethod
    def check_prerequisites() -> None:
        missing = [str(BIN / b) for b in ("kubelet", "dra-test-driver", "containerd", "containerd-shim-runc-v2",
                                           "ctr", "pause") if not (BIN / b).exists()]
        if missing:
            raise Unavailable(f"e2e: missing {', '.join(missing)}: run e2e/build-kubelet.sh")
        if shutil.which("runc") is None or not any((d / "bridge").exists() for d in CNI_DIRS):
            raise Unavailable("e2e: runc or the CNI plugins are missing: apt-get install runc containernetworking-plugins")
        if not pathlib.Path("/bin/busybox").exists():
            raise Unavailable("e2e: /bin/busybox is missing: apt-get install busybox-static")
        if os.geteuid() != 0:
            raise Unavailable("e2e: the kubelet and containerd need root")
        with socket.socket() as s:  # the kubelet's port: one node per machine (the bridge's name is fixed too)
            if s.connect_ex((node_ip(), 10250)) == 0:
                raise Unavailable("e2e: port 10250 is taken: another kubelet (e2e/kubelet.py?) runs on this machine")

    def start(self) -> Node:
        self._start_containerd()
        self._import_images()
        self._start_kubelet()
        self.plane._wait(f"Node {self.name} Ready", self._node_ready, 120)
        if self.dra_driver:
            (self.kubelet_root / "plugins" / DRIVER).mkdir(parents=True, exist_ok=True)  # it binds its socket there
            self._spawn("dra-test-driver", [str(BIN / "dra-test-driver"), f"--kubeconfig={self.plane.kubeconfig}",
                                            "--v=3", "kubelet-plugin", f"--node-name={self.name}",
                                            f"--plugin-registration-path={self.kubelet_root / 'plugins_registry'}",
                                            f"--datadir={self.kubelet_root / 'plugins'}",  # the driver adds its name
                                            f"--cdi-dir={self.cdi}", "--enable-device-metadata"])
            self.plane._wait(f"ResourceSlice of {DRIVER} for {self.name}", self._slice_published, 60)
        if self.dralloc:
            self._spawn("dralloc", [str(REPO / ".venv" / "bin" / "dralloc"), "run",
                                    f"--kubeconfig={self.plane.kubeconfig}", "--standalone",
                                    "--metrics-port=0", "--health-port=0"])
        return self

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, start_new_session=True,
                                preexec_fn=controlplane._die_with_parent)
        log.close()
        self.procs.append((name, proc))

    def _start_containerd(self) -> None:
        cni_bin = [str(d) for d in CNI_DIRS if d.exists()]
        (self.tmp / "cni" / "net.d").mkdir(parents=True)
        (self.tmp / "cni" / "net.d" / "10-dralloc.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "dralloc-e2e", "plugins": [
                {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
                 "ipam": {"type": "host-local", "dataDir": str(self.tmp / "cni" / "ipam"),
                          "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "loopback"}]}))
        self.cdi.mkdir()
        METADATA_CDI.mkdir(parents=True, exist_ok=True)
        toml = _toml
        config = f"""version = 3
root = {toml(str(self.tmp / 'containerd' / 'root'))}
state = {toml(str(self.tmp / 'containerd' / 'state'))}
[grpc]
  address = {toml(str(self.socket))}
[ttrpc]
  address = {toml(str(self.socket) + '.ttrpc')}
[debug]
  address = {toml(str(self.tmp / 'containerd-debug.sock'))}
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = {toml(PAUSE)}
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true  # no CAP_SYS_RESOURCE here: oom_score_adj may not go below containerd's
  cdi_spec_dirs = {toml([str(self.cdi), str(METADATA_CDI)])}
  netns_mounts_under_state_dir = true
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = {toml(str(self.tmp / 'runc'))}
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = {toml(cni_bin)}
  conf_dir = {toml(str(self.tmp / 'cni' / 'net.d'))}
"""
        (self.tmp / "containerd.toml").write_text(config)
        # The shim is found on PATH, next to containerd.
        self._spawn("containerd", [str(BIN / "containerd"), f"--config={self.tmp / 'containerd.toml'}"],
                    env={"PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
        self.plane._wait("containerd", lambda: self.ctr("version", check=False).returncode == 0, 30)

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN / "ctr"), f"--address={self.socket}", "--namespace=k8s.io", *args],
                              check=check, capture_output=True, text=True)

    def _import_images(self) -> None:
        images = self.tmp / "images"
        images.mkdir()
        write_image(images / "busybox.tar", BUSYBOX, busybox_layer(), ["sh"])
        write_image(images / "pause.tar", PAUSE, _layer({"pause": (BIN / "pause").read_bytes()}, {}), ["/pause"])
        for tar in ("busybox.tar", "pause.tar"):
            self.ctr("images", "import", str(images / tar))

    def _start_kubelet(self) -> None:
        pki, ca = self.tmp / "pki", self.plane.pki
        pki.mkdir()
        key, csr, crt = pki / "kubelet.key", pki / "kubelet.csr", pki / "kubelet.crt"
        (pki / "ext").write_text("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n")
        for argv in (["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key)],
                     ["openssl", "req", "-new", "-key", str(key), "-out", str(csr),
                      "-subj", f"/O=system:nodes/CN=system:node:{self.name}"],
                     ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca / "ca.crt"), "-CAkey", str(ca / "ca.key"),
                      "-CAcreateserial", "-CAserial", str(pki / "ca.srl"), "-days", "2", "-extfile", str(pki / "ext"),
                      "-out", str(crt)]):
            subprocess.run(argv, check=True, capture_output=True)
        self.plane._write_kubeconfig(self.tmp / "kubelet.kubeconfig", user=f"system:node:{self.name}", cert=crt, key=key)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "cgroupDriver": "cgroupfs", "failCgroupV1": False, "failSwapOn": False,
            "address": self.ip, "healthzBindAddress": "127.0.0.1", "healthzPort": 0, "readOnlyPort": 0,
            # The API server's client cert (of the cluster CA) is the only caller; no webhook, anything it asks is allowed.
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": str(ca / "ca.crt")}},
            "authorization": {"mode": "AlwaysAllow"},
            "podLogsDirectory": str(self.tmp / "pod-logs"), "resolvConf": "/etc/resolv.conf",
            # A shared machine's disk may be fuller than the defaults allow: evict only when nearly full.
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100,
            "featureGates": {gate: True for gate in self.plane.kube.feature_gates},  # the control plane's
        }
        (self.tmp / "kubelet.yaml").write_text(json.dumps(config, indent=2))  # JSON is YAML
        self._spawn("kubelet", [str(BIN / "kubelet"), f"--config={self.tmp / 'kubelet.yaml'}",
                                f"--kubeconfig={self.tmp / 'kubelet.kubeconfig'}", f"--root-dir={self.kubelet_root}",
                                f"--cert-dir={self.tmp / 'kubelet-pki'}", f"--hostname-override={self.name}",
                                f"--node-ip={self.ip}", "--v=2"])

    def _node_ready(self) -> bool:
        self.check()
        text = self.plane._get(f"/api/v1/nodes/{self.name}")
        conditions = json.loads(text).get("status", {}).get("conditions", []) if text else []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def _slice_published(self) -> bool:
        self.check()
        text = self.plane._get(f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName={self.name}")
        return bool(text and json.loads(text).get("items"))

    def check(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"e2e: {name} exited with status {proc.returncode} (log: {self.logs / name}.log)")

    def tail_logs(self, lines: int = 12) -> None:
        for name, _ in self.procs:
            text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            print(f"---- {name} (last {lines} lines of {self.logs / name}.log) ----", file=sys.stderr)
            print("\n".join(text[-lines:]), file=sys.stderr)

    def stop(self) -> None:
        """Stop the processes (the driver and the kubelet first), then every container, containerd,
        and clean up what they leave on the machine."""
        if self._stopped:
            return
        self._stopped = True
        for name, proc in reversed(self.procs):
            if name == "containerd":
                with contextlib.suppress(Exception):  # the pods' containers: kill their tasks while containerd runs
                    for task in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
                        self.ctr("tasks", "kill", "--signal=SIGKILL", task, check=False)
            controlplane.stop_group(proc, grace=15)
        # containerd's shims outlive it; they are in the temp folder's runc root.
        for pid_file in self.tmp.glob("containerd/state/**/shim.pid"):
            with contextlib.suppress(ValueError, OSError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        mounts = [line.split()[1] for line in pathlib.Path("/proc/mounts").read_text().splitlines()]
        for mount in sorted((m for m in mounts if m.startswith(str(self.tmp) + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
        subprocess.run(["ip", "link", "delete", BRIDGE], check=False, capture_output=True)
        for root in pathlib.Path("/sys/fs/cgroup").glob("*/kubepods*"):  # the kubelet's (empty by now) cgroups
            for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            with contextlib.suppress(OSError):
                root.rmdir()
        for spec in METADATA_CDI.glob(f"{DRIVER}_metadata_*.json"):  # left by a claim never unprepared
            spec.unlink(missing_ok=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def real_node(*, run_dir: pathlib.Path = controlplane.RUN, node_name: str = "e2e-node", dra_driver: bool = True,
              dralloc: bool = False, kcm_controllers: str = controlplane.KCM_CONTROLLERS) -> Iterator[Node]:
    """The control plane and a real node (containerd, kubelet, the DRA test driver; with `dralloc`
    also `dralloc run --standalone`), Ready; stopped and cleaned up on the way out. The Node object
    has the admin kubeconfig (`node.plane.kubeconfig`) and the node's name (`node.name`). Raises
    Unavailable when this machine cannot run it, RuntimeError when a component fails to start
    (the last lines of every log are printed then)."""
    Node.check_prerequisites()
    plane = controlplane.ControlPlane(run_dir=run_dir.resolve(), kcm_controllers=kcm_controllers)
    node = Node(plane, name=node_name, dra_driver=dra_driver, dralloc=dralloc)
    started = time.monotonic()
    try:
        try:
            plane.start()
            print(f"e2e: control plane up in {time.monotonic() - started:.1f} s; KUBECONFIG={plane.kubeconfig}",
                  flush=True)
            node.start()
        except (RuntimeError, subprocess.CalledProcessError, devcluster.ApiError):
            plane.tail_logs()
            node.tail_logs()
            raise
        print(f"e2e: Node {node.name} ({node.ip}) Ready in {time.monotonic() - started:.1f} s: kubelet v1.37.2, "
              f"containerd {node.ctr('version').stdout.split('Version:')[1].split()[0]}"
              f"{', DRA driver ' + DRIVER if node.dra_driver else ''} (logs: {plane.logs}, state: {node.tmp})", flush=True)
        yield node
    finally:
        node.stop()
        plane.stop()
        print("e2e: node and control plane stopped", file=sys.stderr, flush=True)


# ---- smoke: #33's first step --------------------------------------------------------------------------

def smoke(plane: controlplane.ControlPlane, node: Node, scheduler: str) -> int:
    client = devcluster.Client(plane.url, token=plane.token, ca_file=plane.pki / "ca.crt")
    container = {"name": "c", "image": BUSYBOX, "imagePullPolicy": "Never"}
    hello = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hello", "namespace": "default"},
             "spec": {"nodeName": node.name, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                      "containers": [{**container, "command": ["echo", "hello"]}]}}
    claim_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "e2e-test-driver"},
                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "smoke", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": "e2e-test-driver"}}],
                                  "config": [{"opaque": {"driver": DRIVER, "parameters": {"color": "blue"}}}]}}}
    with_claim = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "with-claim", "namespace": "default"},
                  "spec": {"schedulerName": scheduler, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                           "containers": [{**container, "command": ["env"], "resources": {"claims": [{"name": "r"}]}}],
                           "resourceClaims": [{"name": "r", "resourceClaimName": "smoke"}]}}
    # Compact JSON, as kubectl and client-go send: kube-apiserver 1.37.2 keeps an opaque config's
    # `parameters` byte for byte, and then refuses every later patch of the claim (dralloc adds its
    # delete-protection finalizer with one) when they were sent with blanks (Python's json.dumps
    # default): "spec: Invalid value: null: field is immutable", as the patched copy is compact.
    for path, obj in (("/api/v1/namespaces/default/pods", hello),
                      ("/apis/resource.k8s.io/v1/deviceclasses", claim_class),
                      ("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", claim),
                      ("/api/v1/namespaces/default/pods", with_claim)):
        request = urllib.request.Request(plane.url + path, data=json.dumps(obj, separators=(",", ":")).encode(),
                                         method="POST", headers={"Content-Type": "application/json",
                                                                 "Authorization": f"Bearer {plane.token}"})
        urllib.request.urlopen(request, timeout=10, context=client.context).close()
    failures = []
    for name, expected in (("hello", ["hello"]), ("with-claim", ["claim_smoke_dev=true", "user_color=blue"])):
        started = time.monotonic()
        path = f"/api/v1/namespaces/default/pods/{name}"
        plane._wait(f"pod {name} finished", functools.partial(_finished, client, path), 120)
        pod = client.request("GET", path)
        log = plane._get(f"{path}/log")  # through the API server, from the kubelet
        state = pod["status"]["containerStatuses"][0]["state"]
        ok = pod["status"]["phase"] == "Succeeded" and all(line in log.splitlines() for line in expected)
        print(f"e2e: pod {name}: {pod['status']['phase']} on {pod['spec'].get('nodeName')} in "
              f"{time.monotonic() - started:.1f} s, state {json.dumps(state)}; log has {expected}: {ok}", flush=True)
        if not ok:
            failures.append(name)
            print(f"---- log of {name} ----\n{log}", file=sys.stderr)
    if failures:
        print(f"e2e: smoke FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("e2e: smoke passed: the kubelet ran both pods; the claim's CDI device reached the container", flush=True)
    return 0


def _finished(client: devcluster.Client, path: str) -> bool:
    return client.request("GET", path).get("status", {}).get("phase") in ("Succeeded", "Failed")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="e2e/kubelet.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=pathlib.Path, default=controlplane.RUN,
                        help="the control plane's kubeconfig and every component's log (default: e2e/run)")
    parser.add_argument("--node-name", default="e2e-node")
    parser.add_argument("--no-dra-driver", action="store_true", help="no DRA test driver on the node")
    parser.add_argument("--scheduler", default="default-scheduler",
                        help="smoke: the claim pod's schedulerName; 'dralloc' also starts `dralloc run` (needs .venv)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("smoke", help="start, run a plain pod and a pod with a claim on the node, check, stop")
    run = sub.add_parser("run", help="start, run a command with KUBECONFIG set, stop")
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    sub.add_parser("up", help="start and serve until Ctrl-C")
    args = parser.parse_args(argv)
    cmd = [c for c in getattr(args, "cmd", []) if c != "--"] if args.command == "run" else []
    if args.command == "run" and not cmd:
        parser.error("run: give the command after --")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, controlplane._raise_on_signal)
    try:
        with real_node(run_dir=args.run_dir, node_name=args.node_name, dra_driver=not args.no_dra_driver,
                       dralloc=args.scheduler == "dralloc") as node:
            plane = node.plane
            atexit.register(plane.stop)
            atexit.register(node.stop)  # atexit runs last registered first: the node goes before the control plane
            try:
                if args.command == "smoke":
                    return smoke(plane, node, args.scheduler)
                if args.command == "up":
                    while True:
                        plane.check()
                        node.check()
                        time.sleep(1)
                child = subprocess.Popen(cmd, env={**os.environ, "KUBECONFIG": str(plane.kubeconfig),
                                                   "E2E_NODE": node.name})
                try:
                    while (code := child.poll()) is None:
                        plane.check()
                        node.check()
                        time.sleep(1)
                finally:
                    if child.poll() is None:  # a component died, or we were interrupted: the command goes too
                        child.terminate()
                        child.wait()
                return code
            except (RuntimeError, subprocess.CalledProcessError, devcluster.ApiError):
                plane.tail_logs()
                node.tail_logs()
                raise
    except KeyboardInterrupt:
        print("e2e: interrupted, stopping", file=sys.stderr)
        return 130
    except Unavailable as exc:
        print(exc, file=sys.stderr)
        return 2
    except (RuntimeError, subprocess.CalledProcessError, devcluster.ApiError) as exc:
        print(exc, file=sys.stderr)
        return 1

if __name__ == "__main__":
    sys.exit(main())
