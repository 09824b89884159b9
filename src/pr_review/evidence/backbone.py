"""Step 4 backbone assessment: for every touched Tier 1/2 file, its tier, COVERED/GAP/N/A and why.

The tier comes from the profile's table (never lowered); files the table does not list are
classified by the profile's structural tier questions where the tree can answer them (header
include fan-in, subclass count, importer count, plugin bridge, path pattern). The reason names
what this PR changed in the file and the test that covers it, or the gap.
"""
from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from ..detectors.base import ReviewInput
from ..git.diff import ChangedFile
from ..lang import cpp
from ..lang.index import index_of
from ..model import CoreFile
from . import Artifact, collector

CPP_SOURCES = ("*.cu", "*.cuh", "*.cpp", "*.hpp", "*.h", "*.hip", "*.cc")
MAX_CALLERS = 8


@collector("backbone")
def backbone(review: ReviewInput) -> Artifact:
    core: list[CoreFile] = []
    tier3: list[str] = []
    tests = _pr_tests(review)
    # one search of the C++ sources for the includes of every changed header a fan-in question reads
    if any((q.get("structural") or {}).get("kind") == "header-fanin" for q in review.profile.data.get("tier_questions") or []):
        review.source.prefetch_grep([_include_pattern(PurePosixPath(f.path).name) for f in review.files
                                     if f.language == "cpp" and f.path.endswith(HEADERS)], "head", CPP_SOURCES)
    tiers = [(f, *classify(review, f)) for f in review.files]
    # one search of the tree for the call sites of every Tier 1 file's changed symbols (assess asks
    # for each file's own share), instead of one search per file
    tier1 = [f for f, tier, _ in tiers if tier == 1 and _assessed(review, f)]
    for scope in sorted({_call_scope(review, f.path) for f in tier1}):
        review.source.prefetch_grep([_call_pattern(s) for f in tier1 if _call_scope(review, f.path) == scope
                                     for s in _symbols(review, f)[:4]], "head", scope)
    for f, tier, why in tiers:
        if tier is None or tier == 3:
            if f.language in ("python", "cpp"):
                tier3.append(f.path + (f" ({why})" if why else ""))
            continue
        core.append(assess(review, f, tier, why, tests))
    lines = [f"{c.path} TIER{c.tier} {c.status} -- {c.reason}" for c in core]
    if not core:
        lines = ["NONE -- no Tier 1/2 backbone file is touched"
                 + (f"; Tier 3 code touched: {', '.join(tier3[:8])}" if tier3 else "")]
    return Artifact("backbone", lines, core)


def classify(review: ReviewInput, f: ChangedFile) -> tuple[int | None, str]:
    entry = review.profile.tier_entry(f.path)
    if entry is not None:
        return entry.tier, "profile table" + (f": {entry.blast_radius}" if entry.blast_radius else "")
    for question in review.profile.data.get("tier_questions") or []:
        hint = question.get("structural") or {}
        answer = _answer(review, f, hint)
        if answer:
            return question["tier"], f"{question['id']}: {answer}"
    return None, ""


def _answer(review: ReviewInput, f: ChangedFile, hint: dict) -> str | None:
    """A short sentence when the structural question holds for this file, else None."""
    kind = hint.get("kind")
    path = f.path
    if kind == "header-fanin" and f.language == "cpp" and path.endswith(HEADERS):
        name = PurePosixPath(path).name
        if name in (hint.get("exclude") or []):
            return None
        includes = review.source.grep(_include_pattern(name), "head", CPP_SOURCES)
        units = {p for p, _, _ in includes}
        return f"included by {len(units)} files" if len(units) >= hint.get("min", 10) else None
    if kind == "plugin-bridge" and re.search(hint.get("pattern", "$^"), path):
        return "plugin bridge: high visibility to plugin users"
    if kind == "path-pattern" and re.search(hint.get("pattern", "$^"), path):
        return "matches the profile's path pattern"
    if f.language != "python":
        return None
    if kind == "subclass-count" and re.search(hint.get("search", ""), path):
        tree = review.source.python(path)
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)] if tree else []
        for name in classes:
            subclasses = review.source.grep(rf"^\s*class\s+\w+\s*\([^)]*\b{name}\b", "head")
            found = {p for p, _, _ in subclasses if p != path}
            if len(found) >= hint.get("min", 3):
                return f"{name} is subclassed in {len(found)} files"
    if kind == "importer-count" and re.search(hint.get("applies_to", ""), path):
        module = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        importers = review.source.grep(rf"(from|import)\s+{re.escape(module)}\b", "head", files_only=True)
        matching = {p for p, _, _ in importers if re.search(hint.get("importers", ""), p)}
        if len(matching) >= hint.get("min", 2):
            return f"imported by {len(matching)} files"
    return None


HEADERS = (".h", ".hpp", ".cuh")


def _include_pattern(name: str) -> str:
    """An `#include` of a header by its file name (git's extended regex, read alike by Python's `re`)."""
    return rf'#\s*include\s*[<"]([^">]*/)?{re.escape(name)}[">]'


def _pr_tests(review: ReviewInput) -> dict[str, str]:
    """Test files the PR adds or changes → their head text."""
    return {f.path: review.source.text(f.path) or "" for f in review.changed()
            if review.facts.role(f.path) == "test" and f.added}  # a benchmark or script is not coverage


def changed_symbols(review: ReviewInput, f: ChangedFile) -> list[str]:
    """Functions/classes whose code lines this PR changed, head side first, then removed ones on base."""
    code = review.code.get(f.path)
    if code is None:
        return []
    names: list[str] = []
    for side, lines in (("head", {n for n, _ in code.added}), ("base", {n for n, _ in code.removed})):
        path = f.path if side == "head" else (f.old_path or f.path)
        for name in _enclosing(review, path, side, f.language, lines):
            if name not in names:
                names.append(name)
    return names


def _enclosing(review: ReviewInput, path: str, side, language: str, lines: set[int]) -> list[str]:
    if not lines:
        return []
    if language == "python":
        tree = review.source.python(path, side)
        if tree is None:
            return []
        spans = [(n.lineno, n.end_lineno or n.lineno, n.name) for n in index_of(tree).nodes
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    elif language == "cpp":
        text = review.source.text(path, side)
        spans = cpp.function_spans(cpp.parse(text)) if text else []
    else:
        return []
    out = []
    for line in sorted(lines):
        inner = [s for s in spans if s[0] <= line <= s[1]]
        if inner:
            name = min(inner, key=lambda s: s[1] - s[0])[2]
            if name not in out:
                out.append(name)
        elif "<module level>" not in out:
            out.append("<module level>")
    return out


# Method names every other class also defines: a call by that name says nothing about which class runs.
GENERIC_METHODS = {"forward", "__call__", "run", "get", "set", "update", "step", "apply", "build", "load", "save",
                   "reset", "close", "start", "stop", "process", "execute", "call", "setup", "main", "init",
                   "prepare", "items", "keys", "values", "append", "extend", "pop", "copy", "to", "format"}


def callers_of(review: ReviewInput, path: str, symbol: str, limit: int = MAX_CALLERS) -> list[str]:
    """Runtime call sites of `symbol` outside `path`. For a Python file each grep hit is read as a call in
    the caller's syntax tree: a module-level function or class must be imported by that name (or called
    through its module, `mod.name(`), a method must be called on some object other than `self`/`cls`/
    `super()` and carry a name not every class defines (`forward`, `run`); a dunder (`__init__`) has no
    callers by its name. Text in comments, docstrings and local variables of the same name never counts."""
    if limit <= 0 or (symbol.startswith("__") and symbol.endswith("__")):
        return []
    kind = _kind(review, path, symbol)
    if kind == "method" and symbol in GENERIC_METHODS:
        return []
    out: list[str] = []
    for hit_path, line, text in review.source.grep(_call_pattern(symbol), "head", _call_scope(review, path)):
        # runtime callers only: a doc, benchmark or script that mentions the name is not blast radius
        if hit_path == path or not review.facts.is_library(hit_path):
            continue
        if kind is not None and hit_path.endswith(".py"):
            tree = review.source.python(hit_path)
            if tree is None or not _calls(tree, line, symbol, kind):
                continue
        elif kind is not None:
            continue  # a Python symbol is not called from C++ by name
        out.append(f"{hit_path}:{line}")
        if len(out) >= limit:
            break
    return out


def _kind(review: ReviewInput, path: str, symbol: str) -> str | None:
    """"function" (module-level def or class), "method", or None when `path` is not parsed Python."""
    tree = review.source.python(path) if path.endswith(".py") else None
    if tree is None:
        return None
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == symbol for n in tree.body):
        return "function"
    return "method"


def _calls(tree: ast.Module, line: int, symbol: str, kind: str) -> bool:
    imported = any(a.name == symbol and not a.asname for n in index_of(tree).of_type(ast.ImportFrom) for a in n.names)
    for node in index_of(tree).of_type(ast.Call):
        func = node.func
        if getattr(func, "end_lineno", None) != line:
            continue
        if isinstance(func, ast.Name) and func.id == symbol and kind == "function" and imported:
            return True
        if isinstance(func, ast.Attribute) and func.attr == symbol:
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            if kind == "method" or isinstance(owner, (ast.Name, ast.Attribute)):
                return True
    return False


def _assessed(review: ReviewInput, f: ChangedFile) -> bool:
    """Whether assess reads the file's symbols (not only comments, docstrings or whitespace changed)."""
    code = review.code.get(f.path)
    return not (code is not None and not code.added and not code.removed and not f.skipped and f.status != "deleted")


_SYMBOLS: dict[tuple[str, str, str], list[str]] = {}


def _symbols(review: ReviewInput, f: ChangedFile) -> list[str]:
    """The changed functions and classes of `f` (module-level code left out), once per review."""
    key = (review.source.rev("base"), review.source.rev("head"), f.path)
    if key not in _SYMBOLS:
        if len(_SYMBOLS) > 256:
            _SYMBOLS.clear()
        _SYMBOLS[key] = [s for s in changed_symbols(review, f) if s != "<module level>"]
    return _SYMBOLS[key]


def _call_pattern(symbol: str) -> str:
    return rf"\b{re.escape(symbol)}\s*\("


def _call_scope(review: ReviewInput, path: str) -> tuple[str, ...]:
    """Where callers_of searches for the callers of a symbol of `path`: a parsed Python file's symbols
    are only called from Python (callers_of reads no other hit), so only Python files are read, half
    of a whole-tree search; anything else, the whole tree."""
    return ("*.py",) if _kind(review, path, "") is not None else ()


def assess(review: ReviewInput, f: ChangedFile, tier: int, why: str, tests: dict[str, str]) -> CoreFile:
    if not _assessed(review, f):
        return CoreFile(f.path, tier, "N/A", f"only comments, docstrings or whitespace change in {f.path} ({why})")
    symbols = _symbols(review, f)
    module = PurePosixPath(f.path).stem
    mention = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in [module, *symbols]) + r")\b")
    covering = sorted(t for t, text in tests.items() if mention.search(text))
    named = ", ".join(f"`{s}`" for s in symbols[:6]) or f"module-level code of {f.path}"
    callers: list[str] = []
    if tier == 1:
        # one search of the tree for every symbol's call sites; callers_of then reads its own share
        review.source.prefetch_grep([_call_pattern(s) for s in symbols[:4]], "head", _call_scope(review, f.path))
        for symbol in symbols[:4]:
            callers += callers_of(review, f.path, symbol, MAX_CALLERS - len(callers))
    extra = _special(review, f, symbols)
    if covering:
        reason = f"changes {named}; exercised by {', '.join(covering[:3])} in this PR ({why})"
        return CoreFile(f.path, tier, "COVERED", reason + extra, callers)
    reason = (f"changes {named} but no test this PR adds or changes exercises it ({why})"
              + (f"; callers: {', '.join(callers[:5])}" if callers else "") + extra)
    return CoreFile(f.path, tier, "GAP", reason, callers)


def _special(review: ReviewInput, f: ChangedFile, symbols: list[str]) -> str:
    """ATOM's deepseek_v2 rule: a changed method nobody overrides reaches every DSv2/V3/Kimi model."""
    if review.profile.name != "atom" or f.path != "atom/models/deepseek_v2.py":
        return ""
    parts = []
    for symbol in symbols[:6]:
        overrides = [p for p, _, _ in review.source.grep(rf"^\s*def\s+{re.escape(symbol)}\s*\(", "head", ("atom/models/",))
                     if p != f.path]
        parts.append(f"`{symbol}` overridden in {', '.join(sorted(set(overrides))[:3])}" if overrides
                     else f"`{symbol}` is not overridden, so DSv2/V3/V3-0324/Kimi all run it")
    return "; " + "; ".join(parts) if parts else ""
