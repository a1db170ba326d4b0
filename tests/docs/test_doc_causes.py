"""The README lists the causes `dralloc allocate`'s reasons count devices under (the keys of `removed`),
every one, in the order the allocator checks them: a user reading a JSON reason finds each key there."""

from __future__ import annotations

import pathlib
import re

from dralloc.allocation.outcomes import Cause

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_lists_every_cause_in_the_order_devices_are_checked() -> None:
    found = re.search(r"Causes, in the order devices are checked: (.*?)\.\n", README, re.DOTALL)
    assert found, "README: the sentence listing the causes of removed devices"
    listed = " ".join(found.group(1).split())
    assert listed == ", ".join(cause.value for cause in Cause)
