"""Counts in the text a person reads: "1 item", "2 items", never "1 items" (#32).

Imports nothing of dralloc: any module that writes a report or a message may use it.
"""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str = "") -> str:
    """`count` and `noun` agreeing with it: plural(1, "item") is "1 item", plural(0, "item") and plural(2, "item")
    "0 items" and "2 items". `nouns`: the plural when it is not `noun` + "s" (plural(2, "policy", "policies"))."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
