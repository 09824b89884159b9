"""design.md §7: every structural/text rule has fire and clean fixtures, run through the whole pipeline.

A fixture is tests/fixtures/rules/<rule-id>/<case>/ with `base/` and `head/` trees (head overlays
base) and `expect.yml`: `findings:` (rule, path, line) expected for that rule — empty for a clean
case — plus optional `profile`, `title`, `body` and `delete`.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pr_review.catalog import load_catalog
from pr_review.detectors import all_detectors
from pr_review.gate import ENGINE_DECIDED
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

from conftest import copy_tree, git

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
CASES = sorted(p for p in FIXTURES.glob("*/*") if (p / "expect.yml").exists())


def build_fixture_repo(case: Path, dest: Path, delete: list[str]) -> Path:
    dest.mkdir()
    git(dest, "init", "-q")
    copy_tree(case / "base", dest)
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "--allow-empty", "-m", "base")
    git(dest, "checkout", "-q", "-b", "pr")
    copy_tree(case / "head", dest)
    for path in delete:
        (dest / path).unlink()
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "--allow-empty", "-m", "pr")
    if (case / "main").is_dir():  # the base branch moved on after the PR branched
        git(dest, "checkout", "-q", "main")
        copy_tree(case / "main", dest)
        git(dest, "add", "-A")
        git(dest, "commit", "-q", "-m", "main moved")
        git(dest, "checkout", "-q", "pr")
    return dest


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_fixture(case: Path, tmp_path: Path) -> None:
    expect = yaml.safe_load((case / "expect.yml").read_text()) or {}
    rule = case.parent.name
    repo = build_fixture_repo(case, tmp_path / "repo", expect.get("delete") or [])
    base_tip = git(repo, "rev-parse", "main").strip()
    report = review(ReviewRequest(
        repo_dir=str(repo), base="main", head="pr", remote=None, profile=expect.get("profile", "aiter"),
        base_tip=base_tip,
        pr=PRInfo(title=expect.get("title", ""), body=expect.get("body", "")),
    ))
    # the PR the review read is the one the fixture writes: every head file that differs from base, every deletion
    changed = {path.relative_to(case / "head").as_posix() for path in (case / "head").rglob("*") if path.is_file()
               and (not (case / "base" / path.relative_to(case / "head")).is_file()
                    or (case / "base" / path.relative_to(case / "head")).read_bytes() != path.read_bytes())}
    assert set(git(repo, "diff", "--no-renames", "--name-only", "-z", "main...pr").split("\0")) - {""} == \
        changed | set(expect.get("delete") or [])
    got = sorted((f.rule, f.path, f.line) for f in report.all_findings if f.rule == rule)
    want = sorted((f["rule"], f["path"], f["line"]) for f in expect.get("findings") or [])
    assert got == want, "\n".join(f"{f.path}:{f.line} {f.problem}" for f in report.all_findings if f.rule == rule)
    for finding in report.all_findings:
        if finding.severity == "high":
            assert finding.trigger, f"{finding.rule}: a 🔴 finding must carry its trigger"
    for skipped in report.not_checked:  # a detector asking for a path it never resolved is a bug, not a skip
        assert skipped.path.strip() and "a tree, not a file" not in skipped.reason, skipped


def test_every_decidable_rule_has_fire_and_clean_fixtures() -> None:
    catalog = load_catalog()
    missing = []
    for rule in catalog.rules.values():
        if rule.detector not in ("structural", "text"):
            continue
        kinds = set()
        for case in FIXTURES.glob(f"{rule.id}/*/expect.yml"):
            kinds.add("fire" if (yaml.safe_load(case.read_text()) or {}).get("findings") else "clean")
        if kinds != {"fire", "clean"}:
            missing.append(f"{rule.id}: has {sorted(kinds) or 'no'} fixtures")
    assert not missing, "\n".join(missing)


def test_detectors_decide_catalog_rules_marked_decidable() -> None:
    catalog = load_catalog()
    decided = {rule for det in all_detectors() for rule in det.rules} | set(ENGINE_DECIDED)
    unknown = sorted(decided - set(catalog.rules))
    assert not unknown, f"detectors name rules the catalog lacks: {unknown}"
    wrong_kind = sorted(r for r in decided if catalog.rules[r].detector == "checklist")
    assert not wrong_kind, f"rules decided by a detector must be structural/text in the catalog: {wrong_kind}"
    undecided = sorted(r.id for r in catalog.rules.values() if r.detector in ("structural", "text") and r.id not in decided)
    assert not undecided, f"catalog marks these decidable but no detector decides them: {undecided}"
