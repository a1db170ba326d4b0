"""The placement half of bench/scale.py: simulate's own placement loop, in process, timed and profiled.

The snapshot is read and indexed exactly as `dralloc simulate` does (`simulating.prepare`,
with the collector kept off and the result frozen as there), then `simulating.place_workload`
places every claim; only that loop is timed.
"""

from __future__ import annotations

import cProfile
import dataclasses
import io
import pathlib
import pstats
import tempfile
import time
import tracemalloc

import scale_snapshot

from dralloc.offline import heap, simulating


@dataclasses.dataclass(frozen=True)
class Scenario:
    nodes: int
    claims: int
    seed: int


@dataclasses.dataclass(frozen=True)
class Timing:
    placed: int
    items: int
    wall: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.placed / self.wall if self.wall > 0 else 0.0


def _request(path: pathlib.Path) -> simulating.Request:
    return simulating.Request(snapshot_files=[str(path)], progress=False)


def _run(path: pathlib.Path, limit: int | None = None, profile: cProfile.Profile | None = None,
         traced: bool = False) -> tuple[Timing, tuple[int, int, int]]:
    """Place the snapshot's claims (the first `limit`): timing, and (peak, retained, blocks) when traced."""
    request = _request(path)
    err = io.StringIO()
    with heap.LongLived() as long_lived:
        placer, workload, templates, claims_by_ref = simulating.prepare(request, err)
        long_lived.built()
        workload = workload[:limit] if limit is not None else workload
        memory = (0, 0, 0)
        if traced:
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
        wall, cpu = time.perf_counter(), time.process_time()
        if profile is not None:
            profile.enable()
        results = simulating.place_workload(placer, workload, templates, claims_by_ref, request, err)
        if profile is not None:
            profile.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if traced:
            after = tracemalloc.take_snapshot()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            diff = after.compare_to(before, "filename")
            memory = (peak, sum(d.size_diff for d in diff), sum(d.count_diff for d in diff))
    placed = sum(r.placement is not None for r in results)
    return Timing(placed, len(results), wall, cpu), memory


def _profile_text(profile: cProfile.Profile, lines: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(lines)
    return "\n".join(line for line in out.getvalue().splitlines()[4:] if line.strip())


def _by_package(profile: cProfile.Profile) -> list[tuple[str, float]]:
    """Own time per dralloc package (allocation, cel, scheduling, ...) and for everything else."""
    stats = pstats.Stats(profile)
    totals: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        marker = "/dralloc/"
        if marker in filename:
            rest = filename.split(marker, 1)[1]
            package = "dralloc." + (rest.split("/", 1)[0] if "/" in rest else rest.removesuffix(".py"))
        elif "pydantic" in filename:
            package = "pydantic"
        else:
            package = "other (builtins, stdlib, celpy)"
        totals[package] = totals.get(package, 0.0) + tottime
    return sorted(totals.items(), key=lambda kv: -kv[1])


def report(small: Scenario, big: Scenario, *, profile_lines: int, traced: int) -> None:
    with tempfile.TemporaryDirectory(prefix="dralloc-scale-placement-") as scratch:
        timings = {}
        for scenario in (small, big):
            path = scale_snapshot.write(pathlib.Path(scratch) / str(scenario.nodes), scenario.nodes,
                                        scenario.claims, scenario.seed, ("json",))["json"]
            timing, _ = _run(path)
            timings[scenario.nodes] = timing
            print(f"placement at {scenario.nodes:5d} nodes: {timing.placed} of {timing.items} claims placed in "
                  f"{timing.wall:6.2f} s = {timing.rate:7.0f} claims/s; CPU {timing.cpu / max(timing.placed, 1) * 1e6:6.0f}"
                  f" us per placement")
        ratio = timings[big.nodes].rate / timings[small.nodes].rate if timings[small.nodes].rate else 0.0
        rate_goal = "met" if timings[big.nodes].rate >= 5000 else "not met"
        print(f"  ratio {big.nodes}/{small.nodes} nodes: {ratio:.2f} (goal >= 0.7: {'met' if ratio >= 0.7 else 'not met'});"
              f" goal >= 5,000 placements/s at {big.nodes} nodes: {rate_goal}")
        limit = min(traced, big.claims)
        timing, (peak, retained, blocks) = _run(path, limit=limit, traced=True)
        count = max(timing.placed, 1)
        print(f"  tracemalloc, first {limit} claims at {big.nodes} nodes: peak {peak / 1e6:.1f} MB above the snapshot,"
              f" retained {retained / count / 1e3:.1f} kB and {blocks / count:.0f} blocks per placement")
        if profile_lines:
            profile = cProfile.Profile()
            timing, _ = _run(path, profile=profile)
            print(f"\nprofile of the placement loop at {big.nodes} nodes ({timing.wall:.2f} s under cProfile), own time"
                  f" per package:")
            for package, seconds in _by_package(profile):
                print(f"  {package:34} {seconds:6.2f} s")
            print(f"\ntop {profile_lines} functions by own time:")
            print(_profile_text(profile, profile_lines))
