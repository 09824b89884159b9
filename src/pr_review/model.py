"""The data that flows between pipeline stages (design.md §4).

Every stage takes and returns these plain dataclasses; nothing here talks to git or GitHub.
"""
from __future__ import annotations

import re
import reprlib
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypeVar

T = TypeVar("T")

Severity = Literal["high", "medium", "low"]
Tag = Literal["verified", "inferred"]

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
SEVERITY_ICON = {"high": "🔴", "medium": "⚠️", "low": "📝"}


def record(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:
    """`@dataclass` (or `@dataclass(frozen=True)`) whose `__repr__`, `__eq__` and `__hash__` are one
    shared implementation of what dataclass generates, rather than compiled from source for each
    class: Python 3.10-3.13 compile every generated method when the module is imported, ~0.2 ms a
    method, and the engine's ~60 dataclasses are the largest part of importing it. A class that
    defines one of the three itself is a plain dataclass's job."""
    def wrap(cls: type[T]) -> type[T]:
        if {"__repr__", "__eq__", "__hash__"} & set(cls.__dict__):
            raise TypeError(f"{cls.__qualname__} defines __repr__, __eq__ or __hash__: use @dataclass")
        if not cls.__dict__.get("__doc__"):
            # dataclass documents an undocumented class by its signature, through inspect.signature:
            # a third of what decorating it costs. The field names say as much.
            cls.__doc__ = f"{cls.__name__}({', '.join(cls.__dict__.get('__annotations__', {}))})"
        cls = dataclass(cls, repr=False, eq=False, frozen=frozen)
        own = fields(cls)  # type: ignore[arg-type]
        cls._record_fields = (tuple(f.name for f in own if f.repr), tuple(f.name for f in own if f.compare),  # type: ignore[attr-defined]
                              tuple(f.name for f in own if (f.compare if f.hash is None else f.hash)))
        cls.__repr__, cls.__eq__ = _record_repr, _record_eq  # type: ignore[assignment]
        cls.__hash__ = _record_hash if frozen else None  # type: ignore[assignment]  # as dataclass: eq without frozen is unhashable
        return cls
    return wrap if cls is None else wrap(cls)


@reprlib.recursive_repr()
def _record_repr(self: Any) -> str:
    return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._record_fields[0])})"


def _record_eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        names = self._record_fields[1]
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return NotImplemented


def _record_hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in self._record_fields[2]))


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


# eq and repr are not generated: no report is compared or printed whole, and for its 31 fields they
# cost every review's import more than anything the class does
@dataclass(eq=False, repr=False)
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
