"""DeviceSet (allocation.snapshots): versions that grow cheaply still behave as plain immutable sets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dralloc.allocation.pools import DeviceID
from dralloc.allocation.snapshots import DeviceSet

DEVICES = [DeviceID("d", "p", f"dev-{i}") for i in range(12)]

# A program: start from a set, then each step grows or shrinks one of the versions made so far.
steps = st.lists(st.tuples(st.sampled_from(["grow", "shrink"]), st.integers(0, 40),
                           st.lists(st.sampled_from(DEVICES), max_size=4)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(start=st.lists(st.sampled_from(DEVICES), max_size=6), program=steps)
def test_every_version_equals_the_plain_set_it_stands_for(start: list[DeviceID],
                                                          program: list[tuple[str, int, list[DeviceID]]]) -> None:
    """Growing the newest version in place, an older one through its overlay, and shrinking: every
    version made along the way keeps exactly its own devices (membership, iteration, length, count)."""
    versions = [(DeviceSet(start), frozenset(start))]
    for op, which, devices in program:
        base, plain = versions[which % len(versions)]
        if op == "grow":
            versions.append((base.with_devices(devices), plain | set(devices)))
        else:
            versions.append((base.without(devices), plain - set(devices)))
    for made, plain in versions:
        assert set(made) == plain
        assert len(made) == len(plain)
        assert all((d in made) == (d in plain) for d in DEVICES)
        # count (the gang search's free devices per node): the newest version's fast path and the rest.
        assert made.count(DEVICES) == len(plain)
        assert made.count(DEVICES[:5]) == len(plain & set(DEVICES[:5]))


def test_an_overlay_too_large_is_copied() -> None:
    """Beyond OVERLAY_MAX additions to an older version, the set is copied (and still right)."""
    base = DeviceSet([DEVICES[0]])
    base.with_devices([DEVICES[1]])  # base is no longer the newest version
    many = [DeviceID("d", "p", f"x-{i}") for i in range(DeviceSet.OVERLAY_MAX + 1)]
    grown = base.with_devices(many)
    assert len(grown) == len(many) + 1 and DEVICES[1] not in grown and DEVICES[0] in grown
