"""The data that flows between pipeline stages (design.md §4).

Every stage takes and returns these plain records (`record`, a lighter dataclass); nothing here talks to git or GitHub.
"""
from __future__ import annotations

import re
import reprlib
from typing import Any, Callable, Literal, TypeVar

T = TypeVar("T")

Severity = Literal["high", "medium", "low"]
Tag = Literal["verified", "inferred"]

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
SEVERITY_ICON = {"high": "🔴", "medium": "⚠️", "low": "📝"}


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # a field without a default or a factory


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record (AttributeError, as dataclasses' of the same name)."""


class Field:
    """One field of a record: its name, its default value or the factory that makes one, and whether
    it takes part in comparing (`compare`) and hashing (`hash`; None: as `compare`) two records."""

    __slots__ = ("name", "default", "default_factory", "compare", "hash")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True,
                 hash: bool | None = None) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory, self.compare, self.hash = default, default_factory, compare, hash

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r}, "
                f"compare={self.compare!r}, hash={self.hash!r})")


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING, compare: bool = True,
          hash: bool | None = None) -> Any:
    """A record field with a default or a factory (a fresh list per object), or left out of comparing
    and hashing, as `dataclasses.field`."""
    return Field(default, default_factory, compare, hash)


def record(cls: type[T] | None = None, /, *, frozen: bool = False, eq: bool = True) -> Any:
    """A value class, as `@dataclass` (`frozen=True`, `eq=False` as there) makes one, without the
    dataclasses module: it imports inspect (with dis, tokenize and linecache, ~15 ms of every review's
    start), and Python 3.10-3.13 compile each generated method per class at import. A record's
    methods are one shared implementation: `__init__` takes the fields positionally or by name, fills
    in defaults and factories and calls `__post_init__`; `__repr__`, `__eq__` and (frozen) `__hash__`
    answer as dataclass's; `fields`, `replace` and `asdict` below do what dataclasses' do. What a
    record does not support (a base record, `ClassVar`, `InitVar`, a class defining one of the shared
    methods) it refuses: a plain dataclass's job."""
    def wrap(cls: type[T]) -> type[T]:
        if {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"} & set(cls.__dict__):
            raise TypeError(f"{cls.__qualname__} defines a method record shares: use @dataclass")
        if any(hasattr(base, "_record_plan") for base in cls.__mro__[1:]):
            raise TypeError(f"{cls.__qualname__} extends a record: use @dataclass")
        own = _collect_fields(cls)
        if not cls.__dict__.get("__doc__"):
            cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in own)})"
        cls._record_fields = own  # type: ignore[attr-defined]
        cls._record_compared = (tuple(f.name for f in own if f.compare),  # type: ignore[attr-defined]
                                tuple(f.name for f in own if (f.compare if f.hash is None else f.hash)))
        cls._record_plan = _init_plan(cls.__qualname__, own, hasattr(cls, "__post_init__"))  # type: ignore[attr-defined]
        cls.__match_args__ = tuple(f.name for f in own)  # type: ignore[attr-defined]
        cls.__init__ = _record_init  # type: ignore[assignment]
        cls.__repr__ = _record_repr  # type: ignore[assignment]
        if eq:
            cls.__eq__ = _record_eq  # type: ignore[assignment]
            cls.__hash__ = _record_hash if frozen else None  # type: ignore[assignment]  # as dataclass: eq without frozen is unhashable
        if frozen:
            cls.__setattr__, cls.__delattr__ = _frozen_setattr, _frozen_delattr  # type: ignore[assignment]
        return cls
    return wrap if cls is None else wrap(cls)


def _collect_fields(cls: type) -> tuple[Field, ...]:
    """The class's annotated names in order, each with its default: a class attribute (left on the
    class, as dataclass leaves it) or a `field(...)` (its factory taken off the class)."""
    own = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if str(annotation).split("[")[0].rpartition(".")[2] in ("ClassVar", "InitVar", "KW_ONLY"):
            raise TypeError(f"{cls.__qualname__}.{name} is a {annotation}: use @dataclass")
        value = cls.__dict__.get(name, MISSING)
        made = value if isinstance(value, Field) else Field(value)
        made.name = name
        if made.default is not MISSING and type(made.default).__hash__ is None:
            raise ValueError(f"mutable default {type(made.default)} for field {name} is not allowed: use default_factory")
        if isinstance(value, Field):
            if made.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
        own.append(made)
    return tuple(own)


def _init_plan(qualname: str, own: tuple[Field, ...], post_init: bool) -> tuple:
    """What `_record_init` needs of a class: its name, its fields in order and as a set, each default
    as (value, is a factory), and whether to call `__post_init__`. Refuses the field order dataclass's
    own __init__ would refuse."""
    defaults = {f.name: (f.default_factory, True) if f.default is MISSING else (f.default, False)
                for f in own if f.default is not MISSING or f.default_factory is not MISSING}
    taken = tuple(f.name for f in own)
    for before, after in zip(taken, taken[1:]):
        if before in defaults and after not in defaults:
            raise TypeError(f"non-default argument {after!r} follows default argument")
    return qualname, taken, frozenset(taken), defaults, post_init


def _record_init(self: Any, *args: Any, **kwargs: Any) -> None:
    qualname, taken, known, defaults, post_init = self._record_plan
    if len(args) > len(taken):
        raise TypeError(f"{qualname}.__init__() takes {len(taken) + 1} positional arguments but {len(args) + 1} were given")
    values = dict(zip(taken, args))
    if kwargs:
        if not known.issuperset(kwargs):
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {min(kwargs.keys() - known)!r}")
        if not values.keys().isdisjoint(kwargs):
            raise TypeError(f"{qualname}.__init__() got multiple values for argument {min(values.keys() & kwargs)!r}")
        values.update(kwargs)
    if len(values) < len(taken):
        for name in taken:
            if name not in values:
                if name not in defaults:
                    raise TypeError(f"{qualname}.__init__() missing required argument: {name!r}")
                default, factory = defaults[name]
                values[name] = default() if factory else default
    self.__dict__.update(values)
    if post_init:
        self.__post_init__()


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@reprlib.recursive_repr()
def _record_repr(self: Any) -> str:
    return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._record_plan[1])})"


def _record_eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        names = self._record_compared[0]
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return NotImplemented


def _record_hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in self._record_compared[1]))


def fields(value: Any) -> tuple[Field, ...]:
    """A record's (or a record class's) fields, in order."""
    try:
        return value._record_fields
    except AttributeError:
        raise TypeError(f"{value!r} is not a record") from None


def replace(value: T, /, **changes: Any) -> T:
    """A copy of the record `value` with `changes` (each through `__init__`, as `dataclasses.replace`)."""
    return value.__class__(**{**{n: getattr(value, n) for n in value._record_plan[1]}, **changes})  # type: ignore[attr-defined]


def asdict(value: Any) -> Any:
    """A record as a dict, its nested records, lists, tuples and dicts converted alike (as
    `dataclasses.asdict`, without copying the values that are none of these: a report's are immutable)."""
    if hasattr(type(value), "_record_plan"):
        return {n: asdict(getattr(value, n)) for n in value._record_plan[1]}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple takes its fields positionally
        return type(value)(*map(asdict, value))
    if isinstance(value, (list, tuple)):
        return type(value)(asdict(v) for v in value)
    if isinstance(value, dict):
        return type(value)((asdict(k), asdict(v)) for k, v in value.items())
    return value


@record
class Evidence:
    """A file:line pointer with a short snippet backing a finding."""

    path: str
    line: int | None
    snippet: str = ""
    side: Literal["head", "base"] = "head"


@record
class Finding:
    """A problem a detector found at file:line; the engine fills in code, title, severity and fingerprint."""

    rule: str
    path: str
    line: int | None
    problem: str
    impact: str = ""
    action: str = ""
    trigger: str | None = None
    tag: Tag = "verified"
    end_line: int | None = None
    severity: Severity | None = None  # None: the catalog's default for the rule
    evidence: list[Evidence] = field(default_factory=list)
    # Filled in by the engine after the detector ran:
    code: str = ""
    title: str = ""
    group: str = ""  # the rule's catalog group (coverage, bypass, …), for reports that sort by kind
    fingerprint: str = ""
    anchor: str = "added"  # added | hunk | file | elsewhere | pr (design.md §10: annotate, don't drop)
    line_text: str = ""  # the head-side line the finding sits on, for the fingerprint
    notes: list[str] = field(default_factory=list)
    new: bool | None = None  # since the previous review of this PR, when known

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line or 1}" if self.path else "PR description"

    def compute_fingerprint(self) -> str:
        import hashlib  # here: it loads OpenSSL, which a review that finds nothing does not need

        normalised = re.sub(r"\s+", " ", self.line_text).strip()
        raw = f"{self.rule}\0{self.path}\0{normalised}\0{self.problem if not normalised else ''}"
        return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:16]


@record
class ChecklistItem:
    """A derived rule for the human reviewer, with what derived it and any detector verdict."""

    rule: str
    code: str
    title: str
    families: list[str]
    derived_by: list[str]  # "path:line: text" or "path" or "title: …"
    verdict: Literal["FIRE", "CLEAR", "N/A", "OPEN"] = "OPEN"
    reason: str = ""

    @property
    def derived_from(self) -> str:
        """The evidence that really derived the rule: an added or deleted line when there is one."""
        lines = [e for e in self.derived_by if re.search(r":\d+: ", e)]
        named = [e for e in self.derived_by if e not in ("all paths", "no such added line")]
        return (lines or named or [""])[0]


@record
class CoreFile:
    """A changed file of the profile's core tiers, and whether its callers are covered by tests."""

    path: str
    tier: int
    status: Literal["COVERED", "GAP", "N/A"]
    reason: str
    callers: list[str] = field(default_factory=list)


@record
class CIVerdict:
    """A failed or unfinished job or check on the PR head, and the class that explains it (pr, baseline,
    flaky, infra, stale, pending, unknown) with the evidence that decided it."""

    name: str
    conclusion: str
    classification: str
    evidence: str = ""
    url: str = ""
    workflow: str = ""  # empty for a check run of another app or a commit status
    links: list[str] = field(default_factory=list)  # the default branch's runs it was compared with
    excerpt: str = ""  # for `pr`: the log around the first error, secrets blanked


@record
class Owner:
    """The de-facto owner of a stable core file the PR changes in behaviour (E5): its top non-bot committer."""

    path: str
    tier: int
    name: str
    login: str  # from a GitHub noreply address; empty when the commits carry another address
    commits: int
    total: int  # commits of the path read (bots included)
    shallow: bool  # the checkout's history is cut short, so the counts are a lower bound
    notify: bool  # whether the summary may @-mention the owner (input notify-owners)


@record
class NotChecked:
    """A changed file the review did not analyse, and why."""

    path: str
    reason: str


@record
class PRInfo:
    """What the review knows of the pull request beyond its commits."""

    number: int | None = None
    title: str = ""
    body: str = ""
    labels: list[str] = field(default_factory=list)
    author: str = ""
    state: str = ""
    merged: bool | None = None
    url: str = ""


def verdict_id(verdict: str) -> str:
    """The verdict as a value without spaces, for `if:` conditions: lgtm, needs-work, block, skipped, error."""
    return verdict.lower().replace(" ", "-")


@record(eq=False)  # never compared whole
class Report:
    """Everything one review found and decided; the renderers' and the action's input."""

    schema: int
    engine_version: str
    repo: str
    profile: str
    base_ref: str
    base_sha: str
    merge_base: str
    head_sha: str
    pr: PRInfo
    summary: list[str]  # what the PR does, from the diff
    runtime_surface: bool
    runtime_reason: str
    stale: str | None  # None: applies to base tip; else a sentence
    findings: list[Finding]
    checklist: list[ChecklistItem]
    core_files: list[CoreFile]
    ci: list[CIVerdict]
    not_checked: list[NotChecked]
    notes: list[str]
    stats: dict[str, Any]
    timings: dict[str, float]
    evidence: dict[str, list[str]] = field(default_factory=dict)  # artifact name → reviewer-readable lines
    relevance: str | None = None  # vLLM ROCm relevance gate: fully / partially / not
    validation: dict[str, Any] | None = None
    repo_url: str = ""  # https://github.com/owner/name when known: findings link to their head-side line
    # Findings of preview rules: they decide the checklist and the context artifact, but are not
    # annotated and never move the verdict until a measured sample earns the rule `stable`.
    preview_findings: list[Finding] = field(default_factory=list)
    ci_notes: list[str] = field(default_factory=list)  # what the CI classification could not read, and why
    owners: list[Owner] = field(default_factory=list)  # E5: who should sign off a core behaviour change
    # Seconds per detector and per evidence collector ({"detectors": {name: s}, "evidence": {name: s}}),
    # so a slow one shows on the PR that made it slow; `timings` holds the stages.
    step_timings: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """✅ LGTM / ⚠️ NEEDS WORK / 🔴 BLOCK (advisory), from what is trustworthy only: BLOCK from a
        🔴 (which the gate lets through only with a concrete trigger), NEEDS WORK from a verified ⚠️;
        an inferred ⚠️ is a question for the reviewer and leaves the verdict at LGTM with notes."""
        if any(f.severity == "high" for f in self.findings):
            return "BLOCK"
        if any(f.severity == "medium" and f.tag == "verified" for f in self.findings):
            return "NEEDS WORK"
        return "LGTM"

    @property
    def all_findings(self) -> list[Finding]:
        """Every finding the detectors decided, annotated or preview (the checklist's view)."""
        return self.findings + self.preview_findings

    def counts(self) -> dict[str, int]:
        out = {"high": 0, "medium": 0, "low": 0}
        for f in self.findings:
            out[f.severity or "medium"] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict
        data["counts"] = self.counts()
        return data
