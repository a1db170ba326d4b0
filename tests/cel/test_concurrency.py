"""A compiled selector may be evaluated from several threads at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.cel import builders

from dralloc.cel import selectors


def test_concurrent_evaluations_see_their_own_device() -> None:
    """Evaluation writes no shared state, unlike celpy's CompiledRunner."""
    selector = selectors.compile_selector(
        'cel.bind(g, device.attributes["gpu.example.com"], [1, 2, 3].all(x, x > 0) && g.numa % 2 == 0)'
    )
    envs = [builders.gpu({"numa": {"int": i}}) for i in range(200)]

    def run(index: int) -> bool:
        return selector.evaluate(envs[index])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(200)))
    assert results == [i % 2 == 0 for i in range(200)]
