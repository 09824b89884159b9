"""The review pipeline (design.md §2): context → diff → triage → derivation → evidence →
detectors → gate → CI classification → validation → report. Each stage takes plain data and
returns plain data; only this module sequences them."""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from . import __version__
from .catalog import Catalog, load_catalog, load_rules
from .config import CONFIG_PATH, RepoConfig, parse_config
from .derivation import Facts, derive
from .detectors import Detector, ReviewInput, all_detectors
from .evidence import collect, collector_searches
from .gate import finalize, not_checked_files
from .git import CatFile, Repo
from .git.diff import ChangedFile, read_changes
from .lang.regex import lazy_re
from .model import ChecklistItem, Finding, NotChecked, PRInfo, Report, SEVERITY_ORDER, field, record
from .profiles import Profile, detect_profile, load_profiles
from .repofacts import RepoFacts
from .source import Source
from .triage import triage as run_triage

if TYPE_CHECKING:  # the CI stage loads the GitHub client, which costs more than a small review
    from .ci import CIRequest, CIResult

REPORT_SCHEMA = 1
# Most source files one review parses; a larger PR (vendored trees, mass renames) keeps the files
# with the most added lines and lists the rest as not checked, so review time stays bounded.
ANALYSIS_BUDGET = 60
# Most bytes of Python (both sides of each file) one review keeps parsed. A parsed tree holds ~37 bytes
# per byte of source and lives until the report is written, and the count of files bounds neither: 60
# of aiter's largest modules are 6 MB of source and 213 MB of trees. 3 MiB keeps a review under 200 MB;
# 3 of the last 600 aiter and ATOM PRs reach it.
PYTHON_BYTES_BUDGET = 3 * 1024 * 1024


@record(frozen=True)
class ReviewRequest:
    repo_dir: str
    base: str | None = None  # default: the repository's default branch
    base_label: str = ""  # how to name the base in reports when `base` is a sha (e.g. the PR's base branch)
    head: str = "HEAD"
    pr: PRInfo = field(default_factory=PRInfo)
    profile: str | None = None  # override; default: repository config, then auto-detection
    remote: str | None = "origin"  # where a missing base/head is fetched from
    base_tip: str | None = None  # current tip of the base branch, for the staleness check
    repo_name: str = ""
    size_cap: int = 2 * 1024 * 1024
    config_path: str = CONFIG_PATH  # repository config, always read from the base side
    repo_url: str = ""  # web address of the repository; default: derived from the remote when it is GitHub
    ci: CIRequest | None = None  # classify the head's CI through the API (needs a token and a PR)


@record
class Context:
    repo: Repo
    source: Source
    base_ref: str
    base_sha: str
    merge_base: str
    head_sha: str
    profile: Profile
    catalog: Catalog
    config: RepoConfig
    notes: list[str]
    remote: str | None = None  # the request's remote (the repository may not have it)


class Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - start, 4)


def build_context(request: ReviewRequest, catfile_holder: list[CatFile]) -> Context:
    repo = Repo.open(request.repo_dir)
    base_ref = request.base or repo.default_branch()
    # Both revisions and their merge base by one git call; `git remote` runs only when one of them is
    # missing, i.e. when the request's remote (if the repository has it) is fetched from.
    head_sha, base_sha, merge_base = repo.commits_and_merge_base(request.head, base_ref)
    if not merge_base:
        remote = request.remote if request.remote and request.remote in repo.remotes() else None
        head_sha = repo.ensure_commit(request.head, remote)
        base_sha = repo.ensure_commit(base_ref, remote)
        merge_base = repo.find_merge_base(base_sha, head_sha, remote)
    catfile = CatFile(repo, request.size_cap)
    catfile_holder.append(catfile)
    source = Source(repo, catfile, merge_base, head_sha)
    profiles = load_profiles()
    catalog = load_catalog()
    notes = [f"git: {line}" for line in repo.fetch_log]
    config = parse_config(source.text(request.config_path, "base"), f"{request.config_path} (base side)",
                          set(catalog.rules), set(profiles))
    notes += list(config.messages)
    if config.rule_dirs:
        _add_repository_rules(catalog, source, config.rule_dirs, notes)
    # Detected on the base side, like the config: a PR that adds another project's marker file
    # does not choose the rules it is reviewed by.
    name = request.profile or config.profile or detect_profile(profiles, lambda p: source.exists(p, "base"))
    if name not in profiles:
        raise ValueError(f"unknown profile '{name}' (choose from {', '.join(sorted(profiles))})")
    return Context(repo, source, base_ref, base_sha, merge_base, head_sha, profiles[name], catalog, config, notes,
                   request.remote)


def _add_repository_rules(catalog: Catalog, source: Source, dirs: tuple[str, ...], notes: list[str]) -> None:
    """Rule files a repository keeps in its own tree, read from the base side like its config."""
    import tempfile  # only for a repository that keeps its own rules

    with tempfile.TemporaryDirectory() as tmp:
        for directory in dirs:
            for path in source.files("base", (directory,)):
                text = source.text(path, "base")
                if path.endswith(".yml") and text is not None:
                    target = Path(tmp, path)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
        try:
            extra = load_rules(Path(tmp))
        except Exception as exc:  # a bad repository rule must not stop the review
            # named by their paths in the repository, not in the scratch directory
            notes.append(f"repository rules not loaded: {str(exc).replace(str(Path(tmp)) + '/', '')}")
            return
        catalog.rules.update(extra)
        if extra:
            notes.append(f"loaded {len(extra)} repository rule(s) from {', '.join(dirs)}")


def read_diff(ctx: Context) -> list[ChangedFile]:
    return read_changes(ctx.repo, ctx.merge_base, ctx.head_sha, ctx.source.catfile.size_cap, ctx.config.excluded)


def apply_budget(files: list[ChangedFile], budget: int | None = None, python_bytes: int | None = None) -> None:
    """Mark source files beyond the budget as not checked, keeping those with the most changed lines:
    at most `budget` files, and Python files while their sources add up to at most `python_bytes`."""
    budget = ANALYSIS_BUDGET if budget is None else budget
    python_bytes = PYTHON_BYTES_BUDGET if python_bytes is None else python_bytes
    bytes_left = python_bytes
    source = [f for f in files if f.language in ("python", "cpp") and not f.skipped and f.status != "deleted"]
    ranked = sorted(source, key=lambda f: len(f.added) + len(f.removed), reverse=True)
    for f in ranked[budget:]:
        f.skipped = f"not analysed: the PR changes {len(source)} source files, over the {budget}-file budget of one review"
    for f in ranked[:budget]:
        if f.language != "python":
            continue
        if f.source_bytes > bytes_left:  # a smaller file further down may still fit
            f.skipped = (f"not analysed: the PR's Python files are more than the {python_bytes / 2**20:g} MiB "
                         "of source one review parses; the files with the most changed lines came first")
        else:
            bytes_left -= f.source_bytes


def _applicable(review: ReviewInput, catalog: Catalog) -> list[tuple[Detector, list[str]]]:
    """The detectors with a rule that applies to the review's profile, each with those rules (a text rule
    needs a PR description)."""
    described = bool((review.pr.body or "").strip())
    out = []
    for det in all_detectors():
        rules = [r for r in det.rules if r in catalog.rules and catalog.rules[r].applies_to(review.profile.name)
                 and (described or catalog.rules[r].detector != "text")]
        if rules:
            out.append((det, rules))
    return out


def plan_searches(review: ReviewInput, catalog: Catalog) -> None:
    """Tell the review's source every name the evidence and the detectors will search the head tree's
    Python files for, so that the first such search looks for all of them (`Source.plan_words`)."""
    words = set(review.facts.searched_words())
    searches = [det.searches for det, _ in _applicable(review, catalog) if det.searches] + collector_searches()
    for searched in searches:
        try:
            words.update(searched(review))
        except Exception:  # only a plan: the detector or collector still runs, and reports its own failure
            continue
    review.source.plan_words(words)


def run_detectors(review: ReviewInput, catalog: Catalog, notes: list[str],
                  ) -> tuple[list[Finding], dict[str, str], dict[str, float]]:
    """All detectors whose rules apply to the profile; returns findings, per decided rule what was
    scanned, and the seconds each detector took."""
    findings: list[Finding] = []
    decided: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for det, rules in _applicable(review, catalog):
        start = time.perf_counter()
        try:
            produced = list(det.func(review))
        except Exception as exc:  # one broken detector must not cost the whole review
            notes.append(f"detector {det.name} failed and was skipped: {type(exc).__name__}: {exc}")
            continue
        finally:
            seconds[det.name] = round(time.perf_counter() - start, 4)
        findings.extend(produced)
        for rule in rules:
            decided[rule] = det.name
    return findings, decided, seconds


def apply_verdicts(checklist: list[ChecklistItem], findings: list[Finding], decided: dict[str, str],
                   files: list[ChangedFile], catalog: Catalog, described: bool) -> None:
    """FIRE/CLEAR for derived rules a detector decided, with a reason naming what was read."""
    read = [f.path for f in files if not f.skipped and f.status != "deleted"]  # never claim to have read a binary
    scanned = ", ".join(read[:4]) + (f" and {len(read) - 4} more" if len(read) > 4 else "")
    listed = {item.rule for item in checklist}
    for finding in findings:  # a detector that found an instance shows the rule applies, derived or not
        if finding.rule not in listed:
            listed.add(finding.rule)
            checklist.append(ChecklistItem(finding.rule, finding.code, finding.title,
                                           list(catalog.rules[finding.rule].families[:1]), [finding.location]))
    for item in checklist:
        if item.rule not in decided and catalog.rules[item.rule].detector == "text" and not described:
            item.reason = "undecided: the PR has no description to read"
            continue
        hits = [f for f in findings if f.rule == item.rule]
        if hits:
            item.verdict = "FIRE"
            item.reason = "; ".join(h.location for h in hits[:5])
        elif item.rule in decided:
            item.verdict = "CLEAR"
            read = ("the PR title and description" if catalog.rules[item.rule].detector == "text"
                    else scanned or "the diff")
            item.reason = f"{decided[item.rule]} read {read} and found no instance"


def apply_ci_verdicts(checklist: list[ChecklistItem], ci: CIResult, findings: list[Finding]) -> None:
    """FIRE/CLEAR for the rules the CI stage decides, with reasons naming jobs, labels and owners."""
    counts: dict[str, int] = {}
    for verdict in ci.verdicts:
        counts[verdict.classification] = counts.get(verdict.classification, 0) + 1
    classes = ", ".join(f"{n} {cls}" for cls, n in sorted(counts.items())) or "no failed or unfinished job or check"
    for item in checklist:
        hits = [f for f in findings if f.rule == item.rule]
        if item.rule == "ci-failure-classification":
            item.verdict = "FIRE" if counts.get("pr") else "CLEAR"
            item.reason = f"CI classification: {classes}"
        elif item.rule == "downstream-ci-skipped" and (hits or ci.downstream_clear):
            item.verdict, item.reason = ("FIRE", hits[0].action) if hits else ("CLEAR", ci.downstream_clear)
        elif item.rule == "core-api-owner-signoff" and ci.owners:
            item.verdict = "FIRE"
            item.reason = "; ".join(f"{o.path}: de-facto owner {o.name} ({o.commits} of {o.total} commits)"
                                    for o in ci.owners)


def describe(files: list[ChangedFile]) -> list[str]:
    """What the PR does, from the diff: counts by status and the directories it touches."""
    if not files:
        return ["The PR changes no files."]
    by_status: dict[str, int] = {}
    for f in files:
        by_status[f.status] = by_status.get(f.status, 0) + 1
    added = sum(len(f.added) for f in files)
    removed = sum(len(f.removed) for f in files)
    dirs: dict[str, int] = {}
    for f in files:
        d = f.path.rsplit("/", 1)[0] if "/" in f.path else "."
        dirs[d] = dirs.get(d, 0) + 1
    top = sorted(dirs.items(), key=lambda kv: -kv[1])[:5]
    return [
        f"{len(files)} file(s) ({', '.join(f'{n} {s}' for s, n in sorted(by_status.items()))}), +{added}/−{removed} lines.",
        "Touches " + ", ".join(f"`{d}` ({n})" for d, n in top) + ("" if len(dirs) <= 5 else f" and {len(dirs) - 5} more directories") + ".",
    ]


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector off for one review. A review builds millions of long-lived objects
    (every parsed tree lives until the report is written), and the collector walks all of them again
    each time they grow by a quarter: a third of the CPU time of a large review went to finding no
    garbage (aiter 044f906a8d: 12.0 → 6.5 s). Reference counting still frees everything that is not a
    cycle; the cycles a review leaves (a tree and the index kept on it) are collected once, after it,
    when the collector runs again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            # once, now: a process reviewing PR after PR (a `stats` worker) would otherwise start the
            # next review, collector paused again, still holding this one's trees. A full collection:
            # some of a review's cycles pass through older objects, which a young one never frees
            gc.collect()


def review(request: ReviewRequest) -> Report:
    with cyclic_gc_paused():
        return _review(request)


def _review(request: ReviewRequest) -> Report:
    timer = Timer()
    holder: list[CatFile] = []
    try:
        with timer.stage("context"):
            ctx = build_context(request, holder)
        with timer.stage("diff"):
            files = read_diff(ctx)
            apply_budget(files)
        with timer.stage("triage"):
            tri = run_triage(files, ctx.source, ctx.profile, ctx.repo, request.base_tip,
                             request.pr.title, request.pr.body)
        light = tri.relevance.light_groups if tri.relevance and tri.relevance.level == "not" else None
        if tri.relevance:
            ctx.notes.append(f"ROCm relevance: {tri.relevance.level} — {tri.relevance.reason}"
                             + ("; ROCm-specific rules skipped, housekeeping and description kept" if light is not None else ""))
        if request.config_path in {f.path for f in files}:
            ctx.notes.append(f"This PR edits {request.config_path}; the review used the base side's version.")
        with timer.stage("derivation"):
            facts = Facts.build(files, tri.code, request.pr.title)
            fired, checklist = derive(facts, ctx.catalog, ctx.profile, ctx.profile.code_fallback,
                                     tri.runtime_surface, light)
        # the facts know the changed files, to answer "is it a script?" for all of them with one search
        repo_facts = RepoFacts(ctx.profile, ctx.source, [f.path for f in files if f.status != "deleted" and not f.skipped])
        review_input = ReviewInput(files=files, profile=ctx.profile, pr=request.pr, source=ctx.source,
                                   code=tri.code, families=fired, stale=tri.stale, facts=repo_facts)
        with timer.stage("evidence"):
            plan_searches(review_input, ctx.catalog)
            artifacts = collect(review_input, ctx.notes)
            review_input.evidence = {name: a.data for name, a in artifacts.items()}
        with timer.stage("detectors"):
            raw, decided, detector_seconds = run_detectors(review_input, ctx.catalog, ctx.notes)
        with timer.stage("gate"):
            findings = finalize(raw, ctx.catalog, ctx.profile.name, ctx.profile.code_fallback, files,
                                ctx.source, set(ctx.config.disable), ctx.config.severity)
            findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity or "medium"], f.path, f.line or 0))
            apply_verdicts(checklist, findings, decided, files, ctx.catalog, bool((request.pr.body or "").strip()))
            annotates = {r for r, rule in ctx.catalog.rules.items() if rule.annotates_in(ctx.profile.name) or ctx.config.preview}
            annotated = [f for f in findings if f.rule in annotates]
            preview = [f for f in findings if f.rule not in annotates]
        ci: CIResult | None = None
        if request.ci is not None:
            from .ci import run as run_ci

            with timer.stage("ci"):
                ci = run_ci(request.ci, ctx.head_sha, files, ctx.profile, ctx.repo, ctx.merge_base,
                            lambda path: ctx.source.text(path, "base"))
                gated = finalize(ci.findings, ctx.catalog, ctx.profile.name, ctx.profile.code_fallback, files,
                                 ctx.source, set(ctx.config.disable), ctx.config.severity)
                apply_ci_verdicts(checklist, ci, gated)
                annotated += [f for f in gated if f.rule in annotates]  # a repository's `preview: true` too
                preview += [f for f in gated if f.rule not in annotates]
                annotated.sort(key=lambda f: (SEVERITY_ORDER[f.severity or "medium"], f.path, f.line or 0))
        not_checked: list[NotChecked] = not_checked_files(files) + ctx.source.not_checked
        return Report(
            schema=REPORT_SCHEMA, engine_version=__version__, repo=request.repo_name or ctx.repo.root.name,
            profile=ctx.profile.name, base_ref=request.base_label or ctx.base_ref, base_sha=ctx.base_sha, merge_base=ctx.merge_base,
            head_sha=ctx.head_sha, pr=request.pr, summary=describe(files),
            runtime_surface=tri.runtime_surface, runtime_reason=tri.runtime_reason, stale=tri.stale.message if tri.stale else None,
            findings=annotated, preview_findings=preview, checklist=checklist,
            core_files=artifacts["backbone"].data if "backbone" in artifacts else [], ci=ci.verdicts if ci else [], not_checked=_dedupe(not_checked),
            notes=ctx.notes, evidence={name: a.lines for name, a in artifacts.items()},
            relevance=tri.relevance.level if tri.relevance else None,
            stats={"files": len(files), "families": sorted(fired), "derived_rules": len(checklist),
                   "catalog_rules": len(ctx.catalog.rules)},
            timings=timer.timings,
            step_timings={"detectors": detector_seconds, "evidence": {name: a.seconds for name, a in artifacts.items()}},
            ci_notes=ci.notes if ci else [], owners=ci.owners if ci else [],
            repo_url=request.repo_url or web_url(ctx.repo, ctx.remote),
        )
    finally:
        for catfile in holder:
            catfile.close()


GITHUB_REMOTE = lazy_re(r"^(?:https://(?:[^@/]+@)?|git@|ssh://git@)(github\.com)[:/]([\w.-]+/[\w.-]+?)(?:\.git)?/?$")


def web_url(repo: Repo, remote: str | None) -> str:
    """https://github.com/owner/name for a GitHub remote the repository has, so findings can link to
    their lines; else ''. `git remote get-url` fails (no output) for a remote the repository does not
    have, so no `git remote` is asked first."""
    if not remote:
        return ""
    match = GITHUB_REMOTE.match(repo.text("remote", "get-url", remote, check=False).strip())
    return f"https://{match.group(1)}/{match.group(2)}" if match else ""


def _dedupe(items: list[NotChecked]) -> list[NotChecked]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        if (item.path, item.reason) not in seen:
            seen.add((item.path, item.reason))
            out.append(item)
    return out
