"""Differential testing: random cases through dralloc and through upstream's allocator (`make differential`).

    python -m tests.differential.differential [-n N] [--seed S] [--version v0.37|v0.36]
                                              [--out DIR] [--timeout D] [--max-checks M]
    python -m tests.differential.differential --replay FILE.yaml [FILE.yaml ...]

Generates N cases (tests/differential/generating.py) from seed S (default: a new one,
printed), answers each with dralloc's allocation library in-process and with
`oracle batch`, and judges each pair (tests/differential/judging.py). Every difference
is shrunk greedily while it keeps its label (tests/differential/shrinking.py; not when
upstream timed out on it: every candidate would cost the time limit) and saved
as a vector YAML: DIR/<seed>/<label>/<case>.yaml (default DIR: out/differential, which
git ignores). The file has upstream's answer as `expect`, plus dralloc's answer and the
verdict. Prints `N cases, D differences (K deliberate)`, then one line per label with
how many cases it covers and the path of its smallest example. `--replay` judges saved
files again. dralloc answers at the Kubernetes release of the oracle (`Features.release`:
1.37 against v0.37, 1.36 against v0.36). Exit status: 1 when a difference is unexplained
(not deliberate), else 0; with `--strict`, 1 on any difference that is
not deliberate. A difference where the previous release answers as dralloc does is
marked so (dralloc kept that release's semantics) and still counts as unexplained.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import random
import re
import shutil
import sys
import time
from typing import Any

import yaml
from tests.differential import generating, judging, oracle, running, shrinking

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Oracles:
    """Upstream asked one case at a time, as it is and restricted to its incubating channel."""

    def __init__(self, version: str | None, timeout: str, previous: str | None = None) -> None:
        self.version, self.timeout, self.previous_version = version, timeout, previous
        self.release = running.release_of_module(oracle.version_of(version))
        self._sessions: dict[tuple[str | None, str], oracle.Session] = {}

    def _session(self, allocator: str, version: str | None = None) -> oracle.Session:
        key = (version or self.version, allocator)
        if key not in self._sessions:
            self._sessions[key] = oracle.Session(version=key[0], timeout=self.timeout, allocator=allocator)
        return self._sessions[key]

    def previous(self, case: dict[str, Any]) -> dict[str, Any] | None:
        if self.previous_version is None:
            return None
        return self._session("", self.previous_version).ask(case)

    def newer(self, case: dict[str, Any]) -> dict[str, Any] | None:
        """v0.37's answer when judging against v0.36 (and its oracle is built), else None."""
        if self.release != "1.36" or not oracle.binary("v0.37").exists():
            return None
        return self._session("", "v0.37").ask(case)

    def upstream(self, case: dict[str, Any]) -> dict[str, Any]:
        return self._session("").ask(case)

    def incubating(self, case: dict[str, Any]) -> dict[str, Any]:
        return self._session("incubating").ask(case)

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()


def verdict_of(case: dict[str, Any], oracles: Oracles, *,
               previous: bool = True) -> tuple[judging.Verdict | None, dict[str, Any], dict[str, Any]]:
    ours = running.answer(case, release=oracles.release)
    theirs = oracles.upstream(case)
    return judging.judge(case, ours, theirs, oracles, previous=previous), ours, theirs


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:80] or "difference"


def _size(case: dict[str, Any]) -> int:
    return len(json.dumps(case["objects"]))


def save(directory: pathlib.Path, case: dict[str, Any], verdict: judging.Verdict, ours: dict[str, Any],
         theirs: dict[str, Any], *, seed: int, checks: int, release: str) -> pathlib.Path:
    expect: dict[str, Any] = theirs.get("expect") or {"status": theirs["status"], "message": theirs.get("message")}
    if "results" in expect:
        expect = {"exact": True, **expect}
    document = {
        "name": case["name"],
        "description": f"{verdict.label}: {verdict.detail}"[:500],
        "upstream": {"file": f"tests/differential (oracle, k8s.io/dynamic-resource-allocation {release})",
                     "case": f"generated from seed {seed}, shrunk in {checks} checks"},
        "tags": ["differential"] + ([f"deliberate: {verdict.deliberate}"] if verdict.deliberate else [])
                + ([f"known: {verdict.known}"] if verdict.known else [])
            + ([f"changed in {release}: {verdict.changed}"] if verdict.changed else []),
        "versions": [running.release_of_module(release)],
        "features": case.get("features") or [],
        "node": case["node"],
        "objects": case["objects"],
        "expect": expect,
        "dralloc": {k: ours[k] for k in ("status", "claims", "message") if ours.get(k)},
        "difference": {"label": verdict.label, "detail": verdict.detail, "deliberate": verdict.deliberate,
                       "known": verdict.known, "changed": verdict.changed},
    }
    path = directory / slug(verdict.label) / f"{case['name']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False, explicit_start=True, width=120))
    return path


def run(args: argparse.Namespace) -> int:
    base = args.seed if args.seed is not None else random.SystemRandom().randrange(10**9)
    seeds = _seeds(base, args.n)
    release = oracle.version_of(args.version)
    print(f"differential: {args.n} cases from seed {base} (replay: make differential N={args.n} SEED={base}); "
          f"dralloc vs k8s.io/dynamic-resource-allocation {release}", flush=True)
    started = time.perf_counter()
    cases = [generating.case(s, running.release_of_module(release)) for s in seeds]
    t0 = time.perf_counter()
    ours = [running.answer(c, release=running.release_of_module(release)) for c in cases]
    t1 = time.perf_counter()
    theirs = oracle.ask(cases, version=args.version, timeout=args.timeout, jobs=args.jobs)
    t2 = time.perf_counter()
    oracles = Oracles(args.version, args.timeout, _previous(args.version))
    out_dir = pathlib.Path(args.out) / str(base)
    if out_dir.is_dir():
        shutil.rmtree(out_dir)  # a rerun of the seed replaces what an earlier one saved
    found: list[tuple[dict[str, Any], judging.Verdict, dict[str, Any], dict[str, Any], int]] = []
    inconclusive: collections.Counter[str] = collections.Counter()
    statuses: collections.Counter[str] = collections.Counter()
    try:
        for case, mine, upstream, seed in zip(cases, ours, theirs, seeds, strict=True):
            statuses[f"{mine['status']}/{upstream['status']}"] += 1
            verdict = judging.judge(case, mine, upstream, oracles)
            if verdict is None:
                continue
            if verdict.inconclusive:
                inconclusive[verdict.label] += 1
                continue
            found.append((case, verdict, mine, upstream, seed))
        t3 = time.perf_counter()
        shrunk: collections.Counter[Key] = collections.Counter()
        groups: dict[Key, list[pathlib.Path]] = collections.defaultdict(list)
        smallest: dict[Key, tuple[int, pathlib.Path]] = {}
        for case, verdict, mine, upstream, seed in found:
            checks = 0
            key = key_of(verdict)
            # A case upstream needs its whole time limit for would cost that limit per candidate.
            if args.max_checks > 0 and shrunk[key] < args.shrink_per_label and upstream["status"] != "timeout":
                shrunk[key] += 1
                kept: list[tuple[judging.Verdict, dict[str, Any], dict[str, Any]]] = []

                def still(candidate: dict[str, Any], key: Key = key,
                          kept: list[tuple[judging.Verdict, dict[str, Any], dict[str, Any]]] = kept) -> bool:
                    again, mine_, upstream_ = verdict_of(candidate, oracles, previous=False)
                    if again is None or key_of(again) != key:
                        return False
                    if upstream_.get("allocator") == "stable":
                        # Its answer may depend on map order: a candidate must differ the same way
                        # twice, or shrinking drifts towards orders that rarely happen.
                        twice = judging.judge(candidate, mine_, oracles.upstream(candidate), oracles, previous=False)
                        if twice is None or key_of(twice) != key:
                            return False
                    kept.append((again, mine_, upstream_))
                    return True

                case, checks = shrinking.shrink(case, still, max_checks=args.max_checks)
                if kept:  # the answers for the smallest case (upstream's stable channel may vary)
                    _, mine, upstream = kept[-1]
                    verdict = judging.judge(case, mine, upstream, oracles) or kept[-1][0]
            key = key_of(verdict, changed=True)
            path = save(out_dir, case, verdict, mine, upstream, seed=seed, checks=checks, release=release)
            groups[key].append(path)
            if key not in smallest or _size(case) < smallest[key][0]:
                smallest[key] = (_size(case), path)
        t4 = time.perf_counter()
    finally:
        oracles.close()

    deliberate = sum(len(paths) for key, paths in groups.items() if key[1])
    changed = sum(len(paths) for key, paths in groups.items() if key[3] and not key[1])
    known = sum(len(paths) for key, paths in groups.items() if key[2] and not key[1])
    # A known difference names an upstream behaviour dralloc was fixed to match: seeing one again is
    # a regression, so it counts as unexplained too.
    unexplained = sum(len(paths) for key, paths in groups.items() if not key[1])
    print(f"{args.n} cases, {len(found)} differences ({deliberate} deliberate); {known} known (fixed before), "
          f"{unexplained} unexplained"
          + (f" ({changed} of them answered by dralloc as the release before {release} does)" if changed else ""))
    rows = []
    for key, paths in sorted(groups.items(), key=lambda item: (bool(item[0][1]), -len(item[1]))):
        label, rule, known, change = key
        tag = (f"deliberate: {rule}" if rule else f"known {known}" if known
               else f"DIFFERENCE, as before {release}: {change}" if change else "DIFFERENCE")
        example = smallest[key][1]
        shown = example.relative_to(ROOT) if example.is_relative_to(ROOT) else example
        print(f"  {len(paths):5d}  [{tag}] {label}\n         e.g. {shown}")
        rows.append({"label": label, "count": len(paths), "deliberate": rule, "known": known, "changed": change,
                     "example": str(example)})
    for label, count in inconclusive.most_common():
        print(f"  {count:5d}  [inconclusive] {label}")
    print(f"answers (dralloc/upstream): {dict(statuses.most_common())}")
    print(f"time: generate {t0 - started:.1f} s, dralloc {t1 - t0:.1f} s, oracle {t2 - t1:.1f} s, "
          f"judge {t3 - t2:.1f} s, shrink+save {t4 - t3:.1f} s, total {t4 - started:.1f} s")
    if found:
        out_dir.mkdir(parents=True, exist_ok=True)
        summary = {"seed": base, "cases": args.n, "release": release, "differences": len(found),
                   "deliberate": deliberate, "changed": changed, "known": known, "unexplained": unexplained,
                   "inconclusive": sum(inconclusive.values()),
                   "groups": rows, "answers": dict(statuses)}
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        print(f"saved in {out_dir}")
    if args.strict:
        return 0 if deliberate == len(found) else 1
    return 0 if unexplained == 0 else 1


Key = tuple[str, str | None, str | None, str | None]


def key_of(verdict: judging.Verdict, *, changed: bool = False) -> Key:
    """What shrinking keeps: the label and the rules; `changed` (reported, not kept) on request."""
    return (verdict.label, verdict.deliberate, verdict.known, verdict.changed if changed else None)


def _previous(version: str | None) -> str | None:
    """v0.36 when judging against v0.37 and its oracle is built (make oracle ORACLE_DRA_VERSION=v0.36)."""
    if oracle.binary(version) == oracle.binary("v0.37") and oracle.binary("v0.36").exists():
        return "v0.36"
    return None


def _seeds(base: int, n: int) -> list[int]:
    rng = random.Random(base)
    return [rng.getrandbits(40) for _ in range(n)]


def replay(paths: list[str], version: str | None, timeout: str) -> int:
    oracles = Oracles(version, timeout, _previous(version))
    worst = 0
    try:
        for path in paths:
            case = yaml.safe_load(pathlib.Path(path).read_text())
            verdict, ours, theirs = verdict_of(case, oracles)
            if verdict is None:
                print(f"{path}: same answer (dralloc {ours['status']}, upstream {theirs['status']})")
                continue
            worst = max(worst, 0 if verdict.deliberate or verdict.inconclusive else 1)
            print(f"{path}: {verdict.label} [{verdict.deliberate or verdict.known or 'difference'}]\n  {verdict.detail}")
    finally:
        oracles.close()
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="cases (default 1000)")
    parser.add_argument("--seed", type=int, help="base seed (default: a new one, printed)")
    parser.add_argument("--version", default=None, help="oracle release: v0.37 (default) or v0.36")
    parser.add_argument("--out", default=str(ROOT / "out" / "differential"), help="where differences are saved")
    parser.add_argument("--timeout", default="10s", help="upstream's time limit per case (default 10s)")
    parser.add_argument("--jobs", type=int, default=2, help="cases the oracle runs at once (default 2)")
    parser.add_argument("--max-checks", type=int, default=400, help="candidates tried per shrink (0: no shrinking)")
    parser.add_argument("--shrink-per-label", type=int, default=10**9,
                        help="shrink at most this many differences per label (default: all)")
    parser.add_argument("--replay", nargs="+", metavar="FILE", help="judge saved cases again")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 on any difference that is not deliberate (default: only on unexplained ones, "
                             "i.e. not deliberate, not known, not a change of the release)")
    args = parser.parse_args(argv)
    if args.replay:
        return replay(args.replay, args.version, args.timeout)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
