"""Scripted faults: make the sandbox misbehave on purpose, the way clusters do.

Tests and users script what requests meet instead of patching client internals. One
ordered rule list holds every kind of fault:

- request rules match a method (or `*`), a path glob (fnmatch, on the path without the
  query) and optionally one client (`agent=` a User-Agent substring, `token=` its bearer
  token), and then either answer with an error Status before the request is served
  (`409`), add latency (`delay=0.2`), or serve the request and answer an error anyway
  (`applied-then=504`: the write is committed and its watch event sent, but the client
  gets the 504 Timeout kube-apiserver returns when etcd's answer comes too late);
- periodic rules act on their own: `close-watches every=30` ends open watch streams
  (those of one client with `agent=`/`token=`), `compact every=60` drops the watch
  history so resuming from an older resourceVersion gets 410 Gone;
- `watch-lag delay=0.5` holds back watch events (for some watchers with `agent=`,
  `token=`, `path=GLOB`), keeping their order, the way a slow watch cache does.

A rule fires at most `xN` times (then it is dropped; default: forever, except `next()`),
and with `p=0.1` only for that fraction of the requests it matches, drawn from a
random generator per rule seeded from the fault seed (`seed=N`, `Faults(seed=...)`), so
a run with the same seed and the same requests injects the same faults. Every fault
injected is counted per rule and per kind (`counters()`).

The spec language (`--faults`, `load()`, POST /_faults as `{"spec": "..."}`) is a `;`-separated
list of rules:

    rule     := request | periodic | lag | "seed=" INT
    request  := METHOD PATH action option*
    action   := STATUS | "delay=" SECONDS | "applied-then" ["=" STATUS]
    periodic := ("close-watches" | "compact") "every=" SECONDS option*
    lag      := "watch-lag" "delay=" SECONDS option*
    option   := "x" N | "p=" FRACTION | "agent=" TEXT | "token=" TEXT | "path=" GLOB
              | "message=" TEXT        (words may be shell-quoted)

Rules are evaluated in order; the first matching error rule (status or applied-then)
answers, the delays of all matching delay rules add up. Access is guarded by a lock so
tests in another thread can script a server running in its own thread, and rules may
change at any time while the server runs (GET/POST/DELETE /_faults, loopback only).
"""

from __future__ import annotations

import collections
import dataclasses
import fnmatch
import itertools
import random
import shlex
import threading
from collections.abc import Callable
from typing import Any

# What kube-apiserver answers when the request's deadline passes while etcd commits.
TIMEOUT_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"
PERIODIC = ("close-watches", "compact")
REQUEST, LAG = "request", "watch-lag"


@dataclasses.dataclass
class Rule:
    method: str = "*"  # "GET", "PATCH", ... or "*"
    path: str = "*"  # fnmatch glob on the request path
    status: int | None = None  # answer with this code ...
    delay: float = 0.0  # ... or wait this long first (watch-lag: hold events this long)
    times: int | None = 1  # how often it may fire; None = forever
    message: str = "injected fault"
    applied_then: bool = False  # serve the request, then answer `status` anyway
    p: float = 1.0  # the fraction of matching requests it fires for
    agent: str | None = None  # only clients whose User-Agent contains this
    token: str | None = None  # only clients sending this bearer token
    action: str = REQUEST  # REQUEST, LAG, "close-watches" or "compact"
    every: float = 0.0  # periodic rules: seconds between firings
    id: int = 0  # set when added
    fired: int = 0  # faults injected by this rule
    spec: str = ""  # the rule as written, when it came from a spec
    removed: bool = dataclasses.field(default=False, repr=False, compare=False)  # taken out by remove()/clear()
    rng: random.Random = dataclasses.field(default_factory=random.Random, repr=False, compare=False)

    def matches(self, method: str, path: str, agent: str = "", token: str | None = None) -> bool:
        return (self.method in ("*", method.upper()) and fnmatch.fnmatchcase(path, self.path)
                and self.targets(agent, token))

    def targets(self, agent: str, token: str | None) -> bool:
        """Whether the rule is aimed at this client (a rule without agent/token aims at all)."""
        return (self.agent is None or self.agent in agent) and (self.token is None or self.token == token)

    @property
    def kind(self) -> str:
        if self.action != REQUEST:
            return self.action
        if self.applied_then:
            return "applied-then"
        return "error" if self.status is not None else "delay"

    def describe(self) -> dict[str, Any]:
        """The rule as JSON (what GET /_faults lists)."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "fired": self.fired, "times": self.times}
        if self.action == REQUEST:
            out.update(method=self.method, path=self.path)
            if self.status is not None:
                out.update(status=self.status, message=self.message)
            if self.delay:
                out["delay"] = self.delay
        elif self.action == LAG:
            out.update(delay=self.delay, path=self.path)
        else:
            out["every"] = self.every
        if self.p < 1.0:
            out["p"] = self.p
        for key in ("agent", "token"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.spec:
            out["spec"] = self.spec
        return out


@dataclasses.dataclass(frozen=True)
class Periodic:
    """A periodic rule's action and interval (what `Faults.periodic` lists)."""

    action: str  # "close-watches" or "compact"
    every: float


@dataclasses.dataclass(frozen=True)
class Decision:
    status: int | None
    delay: float
    message: str
    applied_then: bool = False
    rule: Rule | None = None  # the rule that answers (status or applied-then)


class Faults:
    """The fault rules of one server; safe to call from any thread."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.RLock()
        self.rules: list[Rule] = []
        self.seed_value = seed if seed is not None else random.SystemRandom().randrange(2**32)
        self._ids = itertools.count(1)
        self._kinds: collections.Counter[str] = collections.Counter()
        self._statuses: collections.Counter[int] = collections.Counter()
        self._by_rule: collections.Counter[int] = collections.Counter()  # also of rules used up or removed
        self._actions: dict[str, Callable[..., None]] = {}
        self._on_periodic: Callable[[Rule], None] | None = None
        self.lagging = False  # whether any watch-lag rule exists: the watch fan-out checks it per event

    # ---- wiring to the server ----------------------------------------------------------------

    def bind(self, action: str, fn: Callable[..., None]) -> None:
        """Connect an immediate action ("close-watches", "compact") to the running server."""
        self._actions[action] = fn

    def on_periodic(self, fn: Callable[[Rule], None] | None) -> None:
        """Called for each periodic rule added (the server starts its timer); None unbinds."""
        self._on_periodic = fn

    # ---- adding and removing rules -----------------------------------------------------------

    def seed(self, seed: int) -> None:
        """Reseed: every rule's generator restarts from (seed, rule id)."""
        with self._lock:
            self.seed_value = seed
            for rule in self.rules:
                rule.rng = random.Random(f"{seed}:{rule.id}")

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            if not 0.0 <= rule.p <= 1.0:
                raise ValueError(f"p must be between 0 and 1: {rule.p}")
            rule.id = next(self._ids)
            rule.rng = random.Random(f"{self.seed_value}:{rule.id}")
            self.rules.append(rule)
            self._changed()
        if rule.action in PERIODIC and self._on_periodic is not None:
            self._on_periodic(rule)
        return rule

    def next(self, method: str, path: str, status: int, *, times: int = 1, message: str = "injected fault",
             p: float = 1.0, agent: str | None = None, token: str | None = None) -> Rule:
        """The next `times` requests matching `method` and `path` answer `status`."""
        return self.add(Rule(method.upper(), path, status=status, times=times, message=message, p=p,
                             agent=agent, token=token))

    def latency(self, method: str, path: str, seconds: float, *, times: int | None = None, p: float = 1.0,
                agent: str | None = None, token: str | None = None) -> Rule:
        """Requests matching `method` and `path` wait `seconds` before being served."""
        return self.add(Rule(method.upper(), path, delay=seconds, times=times, p=p, agent=agent, token=token))

    def applied_then(self, method: str, path: str, status: int = 504, *, times: int | None = 1,
                     message: str | None = None, p: float = 1.0, agent: str | None = None,
                     token: str | None = None) -> Rule:
        """Matching writes are committed, then answered with `status` (504 Timeout by default)."""
        return self.add(Rule(method.upper(), path, status=status, times=times, applied_then=True, p=p,
                             message=message or _default_message(status, True), agent=agent, token=token))

    def watch_lag(self, seconds: float, *, path: str = "*", agent: str | None = None, token: str | None = None,
                  times: int | None = None) -> Rule:
        """Watch events for matching watchers are held back `seconds` (order kept)."""
        return self.add(Rule("*", path, delay=seconds, times=times, action=LAG, agent=agent, token=token))

    def every(self, action: str, seconds: float, *, agent: str | None = None, token: str | None = None,
              times: int | None = None) -> Rule:
        """A periodic rule: "close-watches" or "compact" every `seconds`."""
        if action not in PERIODIC:
            raise ValueError(f"a periodic action is close-watches or compact, not {action!r}")
        if action == "compact" and (agent or token):
            raise ValueError("compact acts on the whole server: it takes no agent= or token=")
        if seconds <= 0:
            raise ValueError(f"every= must be positive: {seconds}")
        return self.add(Rule("*", "*", times=times, action=action, every=seconds, agent=agent, token=token))

    def remove(self, rule_id: int) -> bool:
        with self._lock:
            before = len(self.rules)
            for rule in self.rules:
                rule.removed = rule.removed or rule.id == rule_id
            self.rules = [r for r in self.rules if r.id != rule_id]
            self._changed()
            return len(self.rules) != before

    def clear(self, *, counters: bool = False) -> None:
        with self._lock:
            for rule in self.rules:
                rule.removed = True
            self.rules.clear()
            self._changed()
            if counters:
                self._kinds.clear()
                self._statuses.clear()
                self._by_rule.clear()

    @property
    def periodic(self) -> list[Periodic]:
        with self._lock:
            return [Periodic(r.action, r.every) for r in self.rules if r.action in PERIODIC]

    def active(self, rule: Rule) -> bool:
        with self._lock:
            return any(r is rule for r in self.rules)

    # ---- immediate actions -------------------------------------------------------------------

    def close_watches(self) -> None:
        self._actions["close-watches"]()

    def compact(self) -> None:
        self._actions["compact"]()

    # ---- evaluation --------------------------------------------------------------------------

    def _use(self, rule: Rule) -> None:
        """Count one firing of `rule` (lock held) and drop it when used up."""
        rule.fired += 1
        self._by_rule[rule.id] += 1
        self._kinds[rule.kind] += 1
        if rule.status is not None and rule.action == REQUEST:
            self._statuses[rule.status] += 1
        if rule.times is not None:
            rule.times -= 1
            if rule.times <= 0:
                self.rules = [r for r in self.rules if r is not rule]
                self._changed()

    def _draw(self, rule: Rule) -> bool:
        return rule.p >= 1.0 or rule.rng.random() < rule.p

    def decide(self, method: str, path: str, agent: str = "", token: str | None = None) -> Decision | None:
        """What a request meets: an error, latency, or an error after serving it."""
        with self._lock:
            if not self.rules:
                return None
            answer: Rule | None = None
            delay = 0.0
            for rule in list(self.rules):
                if rule.action != REQUEST or not rule.matches(method, path, agent, token):
                    continue
                if rule.applied_then and method.upper() == "GET":
                    continue  # only writes can be "applied"
                erroring = rule.status is not None
                if erroring and answer is not None:
                    continue
                if not self._draw(rule):
                    continue
                if erroring:
                    answer = rule
                delay += rule.delay
                self._use(rule)
            if answer is None and not delay:
                return None
            if answer is None:
                return Decision(None, delay, "")
            return Decision(answer.status, delay, answer.message, answer.applied_then, answer)

    def refund(self, decision: Decision) -> None:
        """An applied-then rule whose request failed anyway: it did not inject anything."""
        rule = decision.rule
        if rule is None:
            return
        with self._lock:
            rule.fired -= 1
            self._by_rule[rule.id] -= 1
            self._kinds[rule.kind] -= 1
            if rule.status is not None:
                self._statuses[rule.status] -= 1
            if rule.times is not None:
                rule.times += 1
                if not rule.removed and not any(r is rule for r in self.rules):
                    self.rules.append(rule)
                    self.rules.sort(key=lambda r: r.id)
                    self._changed()

    def lag(self, path: str, agent: str = "", token: str | None = None) -> float:
        """How long a watch event for this watcher is held back (counted as one fault when > 0)."""
        with self._lock:
            total = 0.0
            for rule in list(self.rules):
                if rule.action == LAG and fnmatch.fnmatchcase(path, rule.path) and rule.targets(agent, token) \
                        and self._draw(rule):
                    total += rule.delay
                    self._use(rule)
            return total

    def _changed(self) -> None:
        self.lagging = any(r.action == LAG for r in self.rules)

    def fire_periodic(self, rule: Rule) -> bool:
        """Count a periodic firing; False when the rule is gone (its timer should stop)."""
        with self._lock:
            if not any(r is rule for r in self.rules):
                return False
            self._use(rule)
            return True

    # ---- counters ----------------------------------------------------------------------------

    def counters(self) -> dict[str, Any]:
        """Faults injected so far: per kind, per status code, and per rule id (rules used up or
        removed included; present rules listed even at 0)."""
        with self._lock:
            by_rule = {r.id: 0 for r in self.rules} | {k: v for k, v in self._by_rule.items() if v}
            return {"kinds": {k: v for k, v in sorted(self._kinds.items()) if v},
                    "statuses": {str(k): v for k, v in sorted(self._statuses.items()) if v},
                    "rules": {str(k): v for k, v in sorted(by_rule.items())}}

    def snapshot(self) -> dict[str, Any]:
        """Everything GET /_faults shows."""
        with self._lock:
            return {"seed": self.seed_value, "rules": [r.describe() for r in self.rules],
                    "counters": self.counters()}

    # ---- the spec language -------------------------------------------------------------------

    def load(self, spec: str) -> list[Rule]:
        """Add the rules of a spec string (see the module docstring); returns them.

        The whole spec is read before anything is added: a bad rule adds nothing."""
        seed, rules = parse_spec(spec)
        return self._install(seed, rules)

    def load_json(self, data: Any) -> list[Rule]:
        """Add rules given as JSON: a rule object, {"spec": "..."}, {"seed": N}, or a list of those."""
        seed: int | None = None
        rules: list[Rule] = []
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and set(item) <= {"spec", "seed"} and item:
                if "seed" in item:
                    seed = _int(str(item["seed"]), str(item))
                if "spec" in item:
                    spec_seed, spec_rules = parse_spec(str(item["spec"]))
                    seed = spec_seed if spec_seed is not None else seed
                    rules += spec_rules
            else:
                rules.append(rule_from_json(item))
        return self._install(seed, rules)

    def _install(self, seed: int | None, rules: list[Rule]) -> list[Rule]:
        if seed is not None:
            self.seed(seed)
        return [self.add(rule) for rule in rules]


def parse_spec(spec: str) -> tuple[int | None, list[Rule]]:
    """(seed or None, rules) of a spec string, nothing added anywhere."""
    rules: list[Rule] = []
    seed: int | None = None
    for text in spec.split(";"):
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise ValueError(f"cannot read fault rule {text.strip()!r}: {exc}") from exc
        if not words:
            continue
        if len(words) == 1 and words[0].startswith("seed="):
            seed = _int(words[0][5:], text)
        else:
            rules.append(parse_rule(words, text))
    return seed, rules


def _default_message(status: int, applied: bool) -> str:
    return TIMEOUT_MESSAGE if status == 504 else ("injected fault after the write was applied" if applied
                                                  else "injected fault")


def _int(text: str, rule: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise ValueError(f"not a number: {text!r} in fault rule {rule.strip()!r}") from exc


def _float(text: str, rule: str) -> float:
    try:
        return float(text)
    except ValueError as exc:
        raise ValueError(f"not a number: {text!r} in fault rule {rule.strip()!r}") from exc


def parse_rule(words: list[str], text: str) -> Rule:
    """One rule of the spec language, already split into words."""
    head = words[0]
    rule = Rule(times=None, spec=" ".join(words))
    if head in PERIODIC or head == LAG:
        rule.action, rest = head, words[1:]
    else:
        if len(words) < 3:
            raise ValueError(f"a fault rule is 'METHOD PATH STATUS|delay=S|applied-then[=STATUS] [options]': "
                             f"{text.strip()!r}")
        rule.method, rule.path, action, rest = words[0].upper(), words[1], words[2], words[3:]
        if action.isdigit():
            rule.status = int(action)
        elif action.startswith("delay="):
            rule.delay = _float(action[6:], text)
        elif action == "applied-then" or action.startswith("applied-then="):
            rule.applied_then = True
            rule.status = _int(action.split("=", 1)[1], text) if "=" in action else 504
        else:
            raise ValueError(f"a fault action is a status code, delay=SECONDS or applied-then[=STATUS]: "
                             f"{text.strip()!r}")
    message: str | None = None
    for word in rest:
        key, eq, value = word.partition("=")
        if word.startswith("x") and word[1:].isdigit():
            rule.times = int(word[1:])
        elif eq and key == "p":
            rule.p = _float(value, text)
        elif eq and key in ("agent", "token", "message") and value:
            if key == "message":
                message = value
            else:
                setattr(rule, key, value)
        elif eq and key == "path" and rule.action == LAG:
            rule.path = value
        elif eq and key == "every" and rule.action in PERIODIC:
            rule.every = _float(value, text)
        elif eq and key == "delay" and rule.action == LAG:
            rule.delay = _float(value, text)
        else:
            raise ValueError(f"unknown fault option {word!r} in {text.strip()!r}")
    _check(rule, text.strip())
    if rule.status is not None:
        rule.message = message or _default_message(rule.status, rule.applied_then)
    return rule


def _check(rule: Rule, text: str) -> None:
    if not 0.0 <= rule.p <= 1.0:
        raise ValueError(f"p must be between 0 and 1 in {text!r}")
    if rule.status is not None and not 400 <= rule.status <= 599:
        raise ValueError(f"a fault status is an HTTP error code (400-599) in {text!r}")
    if rule.action in PERIODIC and rule.every <= 0:
        raise ValueError(f"{rule.action} needs every=SECONDS (> 0): {text!r}")
    if rule.action == "compact" and (rule.agent or rule.token):
        raise ValueError(f"compact acts on the whole server: it takes no agent= or token=: {text!r}")
    if rule.action == LAG and rule.delay <= 0:
        raise ValueError(f"watch-lag needs delay=SECONDS (> 0): {text!r}")
    if rule.delay < 0:
        raise ValueError(f"delay must not be negative in {text!r}")


_JSON_KEYS = {"action", "method", "path", "status", "delay", "times", "message", "appliedThen", "p", "agent",
              "token", "every"}


def rule_from_json(item: Any) -> Rule:
    """A rule from its JSON form, e.g. {"method": "PATCH", "path": "/apis/*", "status": 409, "times": 3},
    {"method": "POST", "path": "/api/v1/*", "appliedThen": 504}, {"action": "watch-lag", "delay": 0.5,
    "agent": "replica-a"}, {"action": "compact", "every": 60}."""
    if not isinstance(item, dict):
        raise ValueError(f"a fault rule in JSON is an object, not {item!r}")
    unknown = set(item) - _JSON_KEYS
    if unknown:
        raise ValueError(f"unknown fault rule fields {sorted(unknown)} in {item!r}")
    try:
        action = str(item.get("action", REQUEST))
        times = item.get("times")
        rule = Rule(str(item.get("method", "*")).upper(), str(item.get("path", "*")),
                    times=None if times is None else int(times), p=float(item.get("p", 1.0)),
                    agent=item.get("agent"), token=item.get("token"), action=action,
                    every=float(item.get("every", 0)), delay=float(item.get("delay", 0)))
        if "appliedThen" in item:
            rule.applied_then = True
            rule.status = int(item["appliedThen"] if item["appliedThen"] is not True else 504)
        elif item.get("status") is not None:
            rule.status = int(item["status"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot read fault rule {item!r}: {exc}") from exc
    if action not in (REQUEST, LAG, *PERIODIC):
        raise ValueError(f"unknown fault action {action!r}")
    if action == REQUEST and rule.status is None and not rule.delay:
        raise ValueError(f"a request rule needs status, delay or appliedThen: {item!r}")
    _check(rule, str(item))
    if rule.status is not None:
        rule.message = str(item.get("message") or _default_message(rule.status, rule.applied_then))
    return rule
