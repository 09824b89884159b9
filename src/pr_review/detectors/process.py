"""Process rules decided by the engine itself: backbone coverage gaps and stale diffs."""
from __future__ import annotations

import ast
import re
from typing import Iterable

from ..evidence.backbone import callers_of, changed_symbols
from ..model import Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re


# The description says how the change was validated: a test, a run, an accuracy or benchmark result.
VALIDATION = lazy_re(r"\b(tests?|tested|pytest|op_tests|unit ?tests?|validat\w*|verif\w*|accuracy|gsm8k|mmlu|lm[_-]eval|"
                        r"e2e|end[- ]to[- ]end|smoke|ran|run|benchmark\w*|CI)\b", re.IGNORECASE)
PASS_THROUGH = lazy_re(r"^\s*(\w+)\s*=\s*\1\s*,?\s*\)?\s*,?\s*$")  # `name=name,` forwarding a parameter


@detector("backbone-tier-gap")
def backbone_tier_gap(review: ReviewInput) -> Iterable[Finding]:
    """At most one finding per PR: a Tier-1 file whose behaviour changes with no test touched and no
    validation named. The table in the summary carries every other tier and status."""
    body = review.pr.body or ""
    if not body.strip() or VALIDATION.search(body):
        return  # with no description, whether validation was named is unknown, not absent
    if any(review.facts.role(f.path) == "test" for f in review.files):
        return
    for core in review.evidence.get("backbone") or []:
        if core.tier != 1 or core.status != "GAP":
            continue
        changed = next((f for f in review.files if f.path == core.path), None)
        code = review.code.get(core.path)
        table_lines = _table_entry_lines(review, core.path)
        behaviour = [(n, t) for n, t in (code.added if code else [])
                     if not PASS_THROUGH.match(t) and not _registry_entry(review, core.path, t)
                     and n not in table_lines]
        if changed is None or not behaviour:
            continue  # formatting, comments, registry entries and forwarded parameters change no behaviour
        symbols = [s for s in changed_symbols(review, changed) if s != "<module level>"] or ["module-level code"]
        # name the caller of the symbol named, never a caller of another changed symbol
        symbol, caller = next(((s, c[0]) for s in symbols[:4] if (c := callers_of(review, core.path, s, 1))),
                              (symbols[0], None))
        at_risk = f"; `{symbol}` is called from {caller}" if caller else ""
        yield Finding(
            rule="backbone-tier-gap", path=core.path, line=behaviour[0][0], tag="inferred",
            problem=f"Tier 1 file `{core.path}` changes `{symbol}`{at_risk}, but the PR touches no test and "
                    "its description names no validation.",
            impact="A defect here reaches every user of this file's callers; nothing in the PR would catch it.",
            action="Reviewer should ask which run exercised the changed code (a test, or an end-to-end run on the "
                   "archs this file serves), and for its command and result.",
        )
        return


def _registry_entry(review: ReviewInput, path: str, line: str) -> bool:
    """An added line that only registers a knob in a family the file already registers (config paths)."""
    match = re.search(r"""\b(?:getenv|environ(?:\.get)?)\s*[(\[]\s*["'](\w+)["']""", line)
    return bool(match) and review.facts.registered_family(path, match.group(1)) is not None


def _table_entry_lines(review: ReviewInput, path: str) -> set[int]:
    """Lines of the entries of module-level dict literals whose keys are strings and whose values are
    strings or dotted names: a registry of implementations by name
    (`"Qwen3MoeForCausalLM": "atom.models.qwen3_moe.Qwen3MoeForCausalLM",`), whose new entry adds a
    choice and changes nothing an existing caller runs."""
    tree = review.source.python(path) if path.endswith(".py") else None
    lines: set[int] = set()
    for stmt in tree.body if tree is not None else []:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Dict):
            continue
        for key, item in zip(value.keys, value.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and _names_implementation(item):
                lines.update(range(key.lineno, (item.end_lineno or item.lineno) + 1))
    return lines


def _names_implementation(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Attribute):  # models.qwen.Qwen3ForCausalLM
        return isinstance(node.value, (ast.Name, ast.Attribute)) and _names_implementation(node.value)
    return isinstance(node, ast.Name)


@detector("stale-diff")
def stale_diff(review: ReviewInput) -> Iterable[Finding]:
    if review.stale is None or not review.stale.conflicts:
        return
    path = review.stale.conflicts[0]
    changed = next((f for f in review.files if f.path == path), None)
    yield Finding(
        rule="stale-diff", path=path, line=changed.added[0][0] if changed and changed.added else 1,
        problem=review.stale.message,
        impact="CI results and this review describe a tree that no longer exists once the base moved.",
        action="Author must rebase onto the current base and re-run CI before merge.",
    )
