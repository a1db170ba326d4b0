"""How Kubernetes 1.38's CEL (cel.dev/cel-go v0.33.2) words an undeclared reference.

1.37's cel-go printed "undeclared reference to 'x' (in container '')". v0.33 drops the container
when it is empty and suggests declared names close to the one written (`catalog_1_38`): the
name itself when it is declared (then nothing is added), else the nearest by Damerau-Levenshtein
distance (adjacent transpositions count one) within 1 for names of up to 3 characters, 2 up to 8
and a third of the length beyond, else the declared names it is a prefix of (2 characters at
least); at most two, shortest first, then alphabetical. A dotted name is compared only with
dotted ones, a plain name only with plain ones.
"""

from __future__ import annotations

import functools

from dralloc.cel.catalog_1_38 import SYMBOLS_1_38

_FAR = 1 << 31  # "too far to matter", as a distance


def distance(a: str, b: str) -> int:
    """The Damerau-Levenshtein distance (optimal string alignment), or _FAR where cel-go gives
    up: very unequal lengths of 16+ characters count their difference, 4,096+ cells of table or
    a row whose best exceeds a third of the longer length are out of reach."""
    la, lb = len(a), len(b)
    if la == 0 or lb == 0:
        return la or lb
    if la >= 16 and 2 * la >= 3 * lb:
        return la - lb
    if lb >= 16 and 2 * lb >= 3 * la:
        return lb - la
    if la * lb > 64 * 64:
        return _FAR
    limit = max(la, lb) // 3
    before: list[int] = []  # row i-2
    previous = list(range(lb + 1))  # row i-1
    for i in range(1, la + 1):
        row = [i] + [0] * lb
        best = i
        for j in range(1, lb + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            value = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                value = min(value, before[j - 2] + 1)
            row[j] = value
            best = min(best, value)
        if best > limit:
            return _FAR
        before, previous = previous, row
    return previous[lb]


@functools.lru_cache(maxsize=1024)
def near(name: str) -> tuple[str, ...]:
    """The declared names cel-go v0.33 offers for `name` (itself alone when it is declared)."""
    if not name:
        return ()
    if name in SYMBOLS_1_38:
        return (name,)
    dotted = "." in name
    limit = 1 if len(name) <= 3 else 2 if len(name) <= 8 else len(name) // 3
    candidates = [s for s in SYMBOLS_1_38 if ("." in s) == dotted]
    scored = [(distance(name, s), s) for s in candidates]
    close = [(d, s) for d, s in scored if d <= limit]
    if close:
        nearest = min(d for d, _ in close)
        return tuple(sorted((s for d, s in close if d == nearest), key=lambda s: (len(s), s))[:2])
    if len(name) >= 2:
        return tuple(sorted((s for s in candidates if s.startswith(name)), key=lambda s: (len(s), s))[:2])
    return ()


def undeclared(name: str) -> str:
    """The whole message: "undeclared reference to 'x'" and what is suggested."""
    offered = near(name)
    if not offered or offered == (name,):
        suffix = ""
    elif len(offered) == 1:
        suffix = f" (did you mean '{offered[0]}'?)"
    else:
        suffix = f" (did you mean '{offered[0]}' or '{offered[1]}'?)"
    return f"undeclared reference to '{name}'{suffix}"
