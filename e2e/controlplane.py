"""A real Kubernetes 1.37 (or 1.38) control plane on loopback, for `make e2e` and for kubectl.

    python e2e/controlplane.py run -- CMD...   start, run CMD with KUBECONFIG set, stop; CMD's exit code
    python e2e/controlplane.py up              start, print how to reach it, serve until Ctrl-C

It runs the binaries of e2e/bin/ (`e2e/build.sh` builds them): our etcd (a temp data
dir), kube-apiserver (secure port on 127.0.0.1, every DRA feature gate of 1.37 on, the
beta/alpha resource.k8s.io and scheduling.k8s.io versions served), kube-scheduler and
kube-controller-manager, each in its own process group, on free ports. Certificates,
the service-account key pair and an admin token come from e2e/bin/pki, into the same
temp folder. It waits for /readyz and the kube-node-lease namespace, writes an admin
kubeconfig (`--kubeconfig`, default <run dir>/kubeconfig) and stops everything it
started on exit, on Ctrl-C, SIGTERM or SIGHUP and when any component dies; each
component's log is in <run dir>/logs/ (the last lines are printed when it fails). The
run dir is e2e/run unless `--run-dir` names another: two control planes at once (say a
benchmark beside the suite) each need their own.

`--kube-version 1.38` runs Kubernetes v1.38.0-beta.0 instead, from e2e/bin-1.38/
(`e2e/build.sh 1.38`), with 1.38's gates and API versions (KUBE_VERSIONS below); 1.37.2
stays the default.

There is no kubelet: tests/handlers/realcluster.py keeps the Nodes a test creates Ready
(Lease heartbeats) and finishes pod deletions on them, and tests write pod phases.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import dataclasses
import functools
import json
import os
import pathlib
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence

import devcluster  # e2e/devcluster.py: this file's folder is on sys.path (run as a script, or as bench/ imports it)

HERE = pathlib.Path(__file__).resolve().parent
BIN = HERE / "bin"
RUN = HERE / "run"

# Every DRA gate kube 1.37 has (the GA/beta ones are on by default; named anyway), and
# the Workload/PodGroup API (GenericWorkload, beta, off by default).
FEATURE_GATES = [
    "DynamicResourceAllocation", "DRAAdminAccess", "DRAConsumableCapacity", "DRADerivedAttributes",
    "DRADeviceBindingConditions", "DRADeviceCompatibilityGroups", "DRADeviceTaintRules", "DRADeviceTaints",
    "DRAExtendedResource", "DRAFractionalCapacityRange", "DRAListTypeAttributes", "DRANodeAllocatableResources",
    "DRAOptionalNodeOperations", "DRAPartitionableDevices", "DRAPartitionableDevicesType", "DRAPrioritizedList",
    "DRAResourceClaimDeviceStatus", "DRAResourceClaimGranularStatusAuthorization", "DRAResourcePoolStatus",
    "DRASchedulerFilterTimeout", "DRAWorkloadResourceClaims", "GenericWorkload",
    # PodGroup topology constraints (a gang on one value of a node label), alpha in 1.36 and 1.37.
    "TopologyAwareWorkloadScheduling",
]
# resource.k8s.io/v1 (incl. DeviceTaintRule) is on by default; the older versions are
# what clients of older releases use; v1alpha3 serves ResourcePoolStatusRequest.
RUNTIME_CONFIG = ["resource.k8s.io/v1beta1=true", "resource.k8s.io/v1beta2=true", "resource.k8s.io/v1alpha3=true",
                  "scheduling.k8s.io/v1beta1=true"]
# KCM runs every controller it runs by default, as in any real cluster: its
# resourceclaim-controller and device-taint-eviction-controller then do the claim lifecycle
# and NoExecute eviction, and dralloc (--claim-lifecycle/--taint-eviction auto) defers to them
# while KCM holds its leader Lease. `make e2e` runs the suite a second time with these two
# off (WITHOUT_KCM_DRA_CONTROLLERS) and dralloc doing both itself.
KCM_CONTROLLERS = "*"
WITHOUT_KCM_DRA_CONTROLLERS = "*,-resourceclaim-controller,-device-taint-eviction-controller"

# Kubernetes 1.38 (v1.38.0-beta.0, `--kube-version 1.38`), from its pkg/features/kube_features.go:
# DynamicResourceAllocation is gone (GA since 1.34, locked since 1.35; a component refuses a gate it does
# not know: "unrecognized feature gate", so it may not be named). DRAPartitionableDevices, DRADeviceBindingConditions, DRADeviceTaints
# and DRADeviceTaintRules are GA and locked on, DRAConsumableCapacity and DRAFractionalCapacityRange GA
# (not locked yet): naming a locked gate at its default is allowed, so they stay named.
# TopologyAwareWorkloadScheduling is beta (still off by default). Left off as in 1.37: CompositePodGroup
# (beta in 1.38, off by default; its scheduling.k8s.io/v1beta1 compositepodgroups are served only with
# it). PodGroupPreemptionPolicy (alpha in 1.37, never on here) is gone in 1.38: a PodGroup's (and a
# Workload template's) spec.preemptionPolicy is now always kept, where 1.37 here dropped it.
FEATURE_GATES_138 = [gate for gate in FEATURE_GATES if gate != "DynamicResourceAllocation"]
# resource.k8s.io/v1beta1 is removed in 1.38 (APILifecycleRemoved 1.38): a 1.38 kube-apiserver that is
# not an alpha serves none of its resources, so it is not asked for. v1beta2 (removed in 1.39), v1alpha3
# (DeviceTaintRule, ResourcePoolStatusRequest) and scheduling.k8s.io/v1beta1 (Workload, PodGroup) are as
# in 1.37.
RUNTIME_CONFIG_138 = [entry for entry in RUNTIME_CONFIG if entry != "resource.k8s.io/v1beta1=true"]


@dataclasses.dataclass(frozen=True)
class KubeVersion:
    """One Kubernetes release this control plane can run: where its binaries are and how to start them."""

    release: str  # "1.37": what --kube-version and E2E_KUBE_VERSION name
    version: str  # the git version the binaries report
    bin: pathlib.Path
    feature_gates: list[str]
    runtime_config: list[str]
    build: str  # how to build `bin`


KUBE_VERSIONS = {
    "1.37": KubeVersion("1.37", "v1.37.2", BIN, FEATURE_GATES, RUNTIME_CONFIG, "e2e/build.sh (or make e2e)"),
    "1.38": KubeVersion("1.38", "v1.38.0-beta.0", HERE / "bin-1.38", FEATURE_GATES_138, RUNTIME_CONFIG_138,
                        "e2e/build.sh 1.38 (or make e2e-build E2E_KUBE_VERSION=1.38)"),
}
DEFAULT_KUBE_VERSION = "1.37"


TMP_PREFIX = "dralloc-e2e-"


def remove_abandoned() -> None:
    """Remove the temp folders (etcd data, certificates) of launchers that died without cleaning up
    (kill -9): each folder names its launcher's pid, and a folder whose launcher is gone goes."""
    for folder in pathlib.Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        try:
            pid = int((folder / "launcher.pid").read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being set up
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            pass  # alive, someone else's


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL when the launcher dies, even by kill -9 (not SIGTERM:
    kube-apiserver's graceful shutdown hangs once etcd has gone with the launcher)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class ControlPlane:
    def __init__(self, *, kubeconfig: pathlib.Path | None = None, run_dir: pathlib.Path = RUN,
                 verbosity: int = 1, kcm_controllers: str = KCM_CONTROLLERS,
                 extra_args: dict[str, list[str]] | None = None, kube_version: str = DEFAULT_KUBE_VERSION) -> None:
        self.kube = KUBE_VERSIONS[kube_version]
        self.bin = self.kube.bin
        self.kubeconfig = kubeconfig or run_dir / "kubeconfig"
        self.extra_args = extra_args or {}  # component name -> more flags (a benchmark's rate limits)
        self.verbosity = verbosity
        self.kcm_controllers = kcm_controllers
        remove_abandoned()
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
        (self.tmp / "launcher.pid").write_text(f"{os.getpid()}\n")
        self.pki = self.tmp / "pki"
        self.logs = run_dir / "logs"
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.ports = {name: free_port() for name in ("etcd", "etcd-peer", "apiserver", "scheduler", "kcm")}
        self.url = f"https://127.0.0.1:{self.ports['apiserver']}"
        self.token = ""
        self._stopped = False

    # ---- start ----------------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        for binary in ("etcd", "pki", "kube-apiserver", "kube-scheduler", "kube-controller-manager"):
            if not (self.bin / binary).exists():
                raise SystemExit(f"e2e: {self.bin / binary} is missing: run {self.kube.build}")
        shutil.rmtree(self.logs, ignore_errors=True)
        self.logs.mkdir(parents=True)
        self.pki.mkdir()
        subprocess.run([str(self.bin / "pki"), "-dir", str(self.pki)], check=True)
        self.token = (self.pki / "admin.token").read_text().strip()
        for user in ("kube-scheduler", "kube-controller-manager"):
            self._write_kubeconfig(self.tmp / f"{user}.kubeconfig", user=user, cert=self.pki / f"{user}.crt",
                                   key=self.pki / f"{user}.key")
        self._write_kubeconfig(self.kubeconfig, user="dralloc-e2e-admin", token=self.token)

        p = self.pki
        self._spawn("etcd", "etcd", "-data-dir", str(self.tmp / "etcd"),
                    "-client-url", f"http://127.0.0.1:{self.ports['etcd']}",
                    "-peer-url", f"http://127.0.0.1:{self.ports['etcd-peer']}")
        self._wait("etcd", lambda: self._log_says("etcd", "etcd ready"), 60)
        gates = ",".join(f"{gate}=true" for gate in self.kube.feature_gates)
        self._spawn("kube-apiserver", "kube-apiserver",
                    f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                    "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                    f"--secure-port={self.ports['apiserver']}",
                    f"--tls-cert-file={p / 'apiserver.crt'}", f"--tls-private-key-file={p / 'apiserver.key'}",
                    f"--client-ca-file={p / 'ca.crt'}", f"--token-auth-file={p / 'tokens.csv'}",
                    f"--requestheader-client-ca-file={p / 'ca.crt'}",
                    "--requestheader-allowed-names=system:front-proxy-client",
                    "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
                    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                    f"--proxy-client-cert-file={p / 'front-proxy-client.crt'}",
                    f"--proxy-client-key-file={p / 'front-proxy-client.key'}",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    f"--service-account-key-file={p / 'sa.pub'}",
                    f"--service-account-signing-key-file={p / 'sa.key'}",
                    "--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=Node,RBAC",
                    "--endpoint-reconciler-type=none",  # it refuses a loopback address; no pod needs it
                    f"--feature-gates={gates}", f"--runtime-config={','.join(self.kube.runtime_config)}",
                    f"--v={self.verbosity}")
        self._wait("kube-apiserver /readyz", functools.partial(self._ok, "/readyz"), 120)
        common = [f"--feature-gates={gates}", "--bind-address=127.0.0.1", "--leader-elect=false",
                  f"--v={self.verbosity}"]
        self._spawn("kube-scheduler", "kube-scheduler", *common, f"--secure-port={self.ports['scheduler']}",
                    *self._component_auth("kube-scheduler"))
        # KCM elects a leader, as in a real cluster: its Lease kube-system/kube-controller-manager
        # is how dralloc tells that KCM's controllers run (handlers/coexisting.py).
        kcm_common = [arg if arg != "--leader-elect=false" else "--leader-elect=true" for arg in common]
        self._spawn("kube-controller-manager", "kube-controller-manager", *kcm_common,
                    f"--secure-port={self.ports['kcm']}", *self._component_auth("kube-controller-manager"),
                    f"--controllers={self.kcm_controllers}", "--use-service-account-credentials=true",
                    f"--service-account-private-key-file={p / 'sa.key'}", f"--root-ca-file={p / 'ca.crt'}",
                    f"--cluster-signing-cert-file={p / 'ca.crt'}", f"--cluster-signing-key-file={p / 'ca.key'}")
        for name, port in (("kube-scheduler", self.ports["scheduler"]), ("kube-controller-manager", self.ports["kcm"])):
            self._wait(f"{name} /healthz", functools.partial(self._ok, "/healthz", port), 60)
        # realcluster.py heartbeats Node Leases only when this namespace exists; the default
        # ServiceAccount of `default` shows that KCM's serviceaccount controller works.
        self._wait("namespace kube-node-lease", lambda: self._get("/api/v1/namespaces/kube-node-lease"), 60)
        self._wait("Lease kube-system/kube-controller-manager",
                   lambda: self._get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"),
                   60)
        if "serviceaccount" in self.kcm_controllers or self.kcm_controllers.startswith("*"):
            self._wait("ServiceAccount default/default",
                       lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default"), 60)
        return self

    def _component_auth(self, user: str) -> list[str]:
        config = self.tmp / f"{user}.kubeconfig"
        return [f"--kubeconfig={config}", f"--authentication-kubeconfig={config}",
                f"--authorization-kubeconfig={config}"]

    def _write_kubeconfig(self, path: pathlib.Path, *, user: str, token: str = "",
                          cert: pathlib.Path | None = None, key: pathlib.Path | None = None) -> None:
        credentials = {"token": token} if token else {"client-certificate": str(cert), "client-key": str(key)}
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "dralloc-e2e",
                  "clusters": [{"name": "dralloc-e2e", "cluster": {
                      "server": self.url, "certificate-authority-data": _b64((self.pki / "ca.crt").read_bytes())}}],
                  "users": [{"name": user, "user": credentials}],
                  "contexts": [{"name": "dralloc-e2e", "context": {"cluster": "dralloc-e2e", "user": user}}]}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
        path.chmod(0o600)

    def _spawn(self, name: str, binary: str, *args: str) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        proc = subprocess.Popen([str(self.bin / binary), *args, *self.extra_args.get(name, [])], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent)
        log.close()
        self.procs.append((name, proc))

    def _log_says(self, name: str, text: str) -> bool:
        return text in (self.logs / f"{name}.log").read_text(errors="replace")

    def _get(self, path: str, port: int | None = None) -> str:
        """GET over TLS with the admin token; '' on any error (for polling)."""
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        if port is not None:  # the scheduler's and KCM's serving certs are self-signed
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        request = urllib.request.Request(f"https://127.0.0.1:{port or self.ports['apiserver']}{path}",
                                         headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                return str(response.read().decode())
        except (OSError, urllib.error.URLError):
            return ""

    def _ok(self, path: str, port: int | None = None) -> bool:
        return self._get(path, port) == "ok"

    def _wait(self, what: str, ready: Callable[[], object], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            self.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"e2e: {what} not ready after {timeout:.0f} s")
            time.sleep(0.2)

    # ---- run, stop --------------------------------------------------------------------------------

    def check(self) -> None:
        """Raise when a component has exited."""
        for name, proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"e2e: {name} exited with status {proc.returncode}")

    def tail_logs(self, lines: int = 12) -> None:
        for name, _ in self.procs:
            text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            print(f"---- {name} (last {lines} lines of {self.logs / name}.log) ----", file=sys.stderr)
            print("\n".join(text[-lines:]), file=sys.stderr)

    def stop(self) -> None:
        """SIGTERM each process group, last started first; SIGKILL what is left after 15 s."""
        if self._stopped:
            return
        self._stopped = True
        for _, proc in reversed(self.procs):
            stop_group(proc, grace=15)
        shutil.rmtree(self.tmp, ignore_errors=True)


def stop_group(proc: subprocess.Popen[bytes], *, grace: float) -> None:
    """SIGTERM the process group of `proc` (started with start_new_session), SIGKILL it after `grace` s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _raise_on_signal(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="e2e/controlplane.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=pathlib.Path, default=RUN,
                        help="where the kubeconfig and the components' logs go (default: e2e/run)")
    parser.add_argument("--kubeconfig", type=pathlib.Path, default=None,
                        help="where to write the admin kubeconfig (default: <run dir>/kubeconfig)")
    parser.add_argument("--v", type=int, default=1, dest="verbosity", help="the components' log level")
    parser.add_argument("--kcm-controllers", default=KCM_CONTROLLERS,
                        help=f"kube-controller-manager --controllers (default {KCM_CONTROLLERS!r}, KCM's own; "
                        f"{WITHOUT_KCM_DRA_CONTROLLERS!r} leaves the claim lifecycle and taint eviction to dralloc)")
    parser.add_argument("--kube-version", choices=sorted(KUBE_VERSIONS),
                        default=os.environ.get("E2E_KUBE_VERSION") or DEFAULT_KUBE_VERSION,
                        help=f"the Kubernetes release to run (default: $E2E_KUBE_VERSION, else {DEFAULT_KUBE_VERSION}): "
                        + "; ".join(f"{k.release} is {k.version} from {k.bin.relative_to(HERE.parent)}/"
                                    for k in KUBE_VERSIONS.values()))
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start, run a command with KUBECONFIG set, stop")
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    up = sub.add_parser("up", help="start and serve until Ctrl-C, keeping every Node Ready (e2e/devcluster.py)")
    up.add_argument("--seed", choices=("none", "demo"), default="none",
                    help="demo: create dralloc's CRDs and the cluster of `dralloc demo` (4 Nodes with GPUs, GPU "
                    "partitions and NICs, their DeviceClasses) once the control plane is up (default none)")
    args = parser.parse_args(argv)
    if args.kube_version not in KUBE_VERSIONS:  # from $E2E_KUBE_VERSION, which argparse does not check
        parser.error(f"--kube-version (E2E_KUBE_VERSION) {args.kube_version!r}: one of {', '.join(sorted(KUBE_VERSIONS))}")
    cmd = [c for c in getattr(args, "cmd", []) if c != "--"] if args.command == "run" else []
    if args.command == "run" and not cmd:
        parser.error("run: give the command after --")

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGINT too: `cmd &` ignores it
        signal.signal(signum, _raise_on_signal)
    run_dir = args.run_dir.resolve()
    kubeconfig = (args.kubeconfig or run_dir / "kubeconfig").resolve()
    plane = ControlPlane(kubeconfig=kubeconfig, run_dir=run_dir, verbosity=args.verbosity,
                         kcm_controllers=args.kcm_controllers, kube_version=args.kube_version)
    atexit.register(plane.stop)
    started = time.monotonic()
    try:
        print(f"e2e: starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager {plane.kube.version}"
              f" (logs: {plane.logs})", flush=True)
        plane.start()
        print(f"e2e: control plane up in {time.monotonic() - started:.1f} s at {plane.url};"
              f" KUBECONFIG={kubeconfig}", flush=True)
        if args.command == "up":
            client = devcluster.Client(plane.url, token=plane.token, ca_file=plane.pki / "ca.crt")
            if args.seed == "demo":
                created = devcluster.seed_demo(client)
                print(f"e2e: seeded the demo cluster ({created} objects: dralloc's CRDs, 4 Nodes, their "
                      "ResourceSlices and DeviceClasses); try kubectl apply -f examples/demo/", flush=True)
            agent = devcluster.NodeAgent(client).start()
            print("e2e: every Node is kept Ready (Lease heartbeats, as a kubelet would) and pods deleted on them "
                  "are finished; Ctrl-C stops it", flush=True)
            try:
                while True:
                    plane.check()
                    time.sleep(1)
            finally:
                agent.stop()
        child = subprocess.Popen(cmd, env={**os.environ, "KUBECONFIG": str(kubeconfig)})
        try:
            while True:
                try:
                    code = child.wait(1)
                    break
                except subprocess.TimeoutExpired:
                    plane.check()
        finally:
            if child.poll() is None:  # a component died, or we were interrupted: the command goes too
                child.terminate()
                try:
                    child.wait(30)
                except subprocess.TimeoutExpired:
                    child.kill()
        if code != 0:
            plane.tail_logs()
        return code
    except KeyboardInterrupt:
        print("e2e: interrupted, stopping the control plane", file=sys.stderr)
        return 130
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(exc, file=sys.stderr)
        plane.tail_logs()
        return 1
    finally:
        plane.stop()
        print("e2e: control plane stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
