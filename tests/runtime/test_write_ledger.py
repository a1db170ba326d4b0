"""The ledger of allocations written but not yet observed: released only when the truth is known."""

from __future__ import annotations

from dralloc.model import claims, conversion
from dralloc.state.ledger import Ledger, Reservation

ALLOCATION = conversion.parse_as(claims.AllocationResult, {
    "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]}})


def claim(version: str, *, allocated: bool = False) -> claims.ResourceClaim:
    raw: dict[str, object] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                              "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": version},
                              "spec": {"devices": {"requests": []}}}
    if allocated:
        raw["status"] = {"allocation": conversion.to_raw(ALLOCATION)}
    return conversion.parse_as(claims.ResourceClaim, raw)


def ledger() -> Ledger:
    book = Ledger()
    book.reserve(Reservation("u1", "ns/c", ALLOCATION, "pod-uid"))
    return book


def test_an_entry_whose_write_is_not_sent_survives_any_unallocated_version() -> None:
    book = ledger()
    book.observed(claim("7"))  # e.g. our own finalizer patch came back
    assert "u1" in book


def test_the_claim_seen_allocated_releases_the_entry() -> None:
    book = ledger()
    book.sending("u1", "7")
    book.observed(claim("8", allocated=True))
    assert "u1" not in book


def test_a_newer_version_without_allocation_means_the_write_cannot_apply() -> None:
    book = ledger()
    book.sending("u1", "7")
    book.outcome_unknown("u1")
    book.observed(claim("7"))
    assert "u1" in book and [r.claim_uid for r in book.unknown()] == ["u1"]
    book.observed(claim("9"))
    assert "u1" not in book


def test_an_older_version_delivered_late_changes_nothing() -> None:
    book = ledger()
    book.sending("u1", "7")
    book.observed(claim("5"))
    assert "u1" in book


def test_opaque_versions_wait_for_an_allocation() -> None:
    book = ledger()
    book.sending("u1", "abc")
    book.observed(claim("xyz"))
    assert "u1" in book
    book.observed(claim("xyz2", allocated=True))
    assert "u1" not in book
