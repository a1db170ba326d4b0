"""Scripted faults: make the sandbox misbehave on purpose, the way clusters do.

Tests and users script what the next requests meet instead of patching client
internals. Rules match an HTTP method (or `*`) and a path glob (fnmatch, on the path
without the query string) and either answer with an error Status or add latency;
a rule fires a limited number of times (`times`, None = forever) and is dropped when
used up. Two actions act at once: `close_watches()` ends every open watch stream, and
`compact()` drops the watch history so any resume from an older resourceVersion gets
410 Gone.

The spec language of `--faults` is a `;`-separated list of rules:

    PATCH /apis/resource.k8s.io/v1/namespaces/*/resourceclaims/*/status 409 x3
    GET /api/v1/pods* delay=0.2
    * * 500 x1
    close-watches every=30
    compact every=60

Rules are evaluated in order; the first error rule that matches answers, and delays of
all matching delay rules add up. Access is guarded by a lock so tests in another
thread can script a server running in its own thread.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import shlex
import threading
from collections.abc import Callable


@dataclasses.dataclass
class Rule:
    method: str  # "GET", "PATCH", ... or "*"
    path: str  # fnmatch glob on the request path
    status: int | None = None  # answer with this code ...
    delay: float = 0.0  # ... or wait this long first
    times: int | None = 1  # how often it may fire; None = forever
    message: str = "injected fault"

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("*", method.upper())) and fnmatch.fnmatchcase(path, self.path)


@dataclasses.dataclass(frozen=True)
class Periodic:
    action: str  # "close-watches" or "compact"
    every: float


@dataclasses.dataclass(frozen=True)
class Decision:
    status: int | None
    delay: float
    message: str


class Faults:
    """The fault rules of one server; safe to call from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rules: list[Rule] = []
        self.periodic: list[Periodic] = []
        self._actions: dict[str, Callable[[], None]] = {}

    def bind(self, action: str, fn: Callable[[], None]) -> None:
        """Connect an immediate action ("close-watches", "compact") to the running server."""
        self._actions[action] = fn

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def next(self, method: str, path: str, status: int, *, times: int = 1, message: str = "injected fault") -> Rule:
        """The next `times` requests matching `method` and `path` answer `status`."""
        return self.add(Rule(method.upper(), path, status=status, times=times, message=message))

    def latency(self, method: str, path: str, seconds: float, *, times: int | None = None) -> Rule:
        """Requests matching `method` and `path` wait `seconds` before being served."""
        return self.add(Rule(method.upper(), path, delay=seconds, times=times))

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def close_watches(self) -> None:
        self._actions["close-watches"]()

    def compact(self) -> None:
        self._actions["compact"]()

    def decide(self, method: str, path: str) -> Decision | None:
        with self._lock:
            if not self.rules:
                return None
            status, delay, message = None, 0.0, ""
            for rule in list(self.rules):
                if not rule.matches(method, path):
                    continue
                if rule.status is not None and status is not None:
                    continue
                if rule.status is not None:
                    status, message = rule.status, rule.message
                delay += rule.delay
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        self.rules.remove(rule)
            if status is None and not delay:
                return None
            return Decision(status, delay, message)

    def load(self, spec: str) -> None:
        """Add the rules of a `--faults` spec string (see the module docstring)."""
        for text in spec.split(";"):
            words = shlex.split(text)
            if not words:
                continue
            if words[0] in ("close-watches", "compact"):
                every = _option(words[1:], "every")
                if every is None:
                    raise ValueError(f"{words[0]} needs every=SECONDS: {text!r}")
                self.periodic.append(Periodic(words[0], float(every)))
                continue
            if len(words) < 3:
                raise ValueError(f"a fault rule is 'METHOD PATH STATUS|delay=S [xN]': {text!r}")
            method, path, action, *rest = words
            times: int | None = None
            for word in rest:
                if word.startswith("x") and word[1:].isdigit():
                    times = int(word[1:])
                else:
                    raise ValueError(f"unknown fault option {word!r} in {text!r}")
            if action.startswith("delay="):
                self.add(Rule(method.upper(), path, delay=float(action.split("=", 1)[1]), times=times))
            elif action.isdigit():
                self.add(Rule(method.upper(), path, status=int(action), times=times))
            else:
                raise ValueError(f"a fault action is a status code or delay=SECONDS: {text!r}")


def _option(words: list[str], name: str) -> str | None:
    for word in words:
        if word.startswith(f"{name}="):
            return word.split("=", 1)[1]
    return None
