"""Housekeeping rules decided from Python and C++ syntax: sys.path mutation, unfinished code, env knobs."""
from __future__ import annotations

import ast
import re
from typing import Iterable

from ..lang import cpp
from ..lang.code_lines import python_comments
from ..lang.index import index_of
from ..lang.python import comments, dotted_callee, dotted_name, is_module_level, string_constants, walk
from ..lang.regex import lazy_re
from ..model import Evidence, Finding
from ..repofacts import env_reads
from . import detector
from .base import ReviewInput

SYSPATH_CALLS = {"sys.path.insert", "sys.path.append", "sys.path.extend"}
SYSPATH_TAILS = {name.rsplit(".", 1)[-1] for name in SYSPATH_CALLS}


@detector("syspath-mutation")
def syspath_mutation(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("python", include_tests=False):
        if not any("sys.path" in text for _, text in f.added) or not review.facts.is_library(f.path):
            continue  # scripts, CLIs, CI helpers and docs examples run as programs: their search path is theirs
        tree = review.source.python(f.path)
        if tree is None:
            continue
        added = f.added_lines
        parents = index_of(tree).parents
        base_calls = _syspath_call_texts(review.base_python(f))
        for node in index_of(tree).of_type(ast.Call):
            if dotted_callee(node, SYSPATH_TAILS) not in SYSPATH_CALLS:
                continue
            if node.lineno not in added or not is_module_level(node, parents):
                continue
            call = ast.unparse(node)
            if call in base_calls:
                continue  # the same mutation already ran at import time on base: moved, not new
            yield Finding(
                rule="syspath-mutation", path=f.path, line=node.lineno,
                problem=f"`{call}` runs at import time of `{f.path}`.",
                impact="Every process that imports this module gets a changed module search path, "
                       "so a same-named module elsewhere can shadow the intended one.",
                action="Author must import through the package (relative or absolute import) "
                       "instead of editing sys.path, or confine it to a script entry point.",
                trigger=f"importing {f.path} executes {call}",
                evidence=[Evidence(f.path, node.lineno, call)],
            )


def _syspath_call_texts(tree: ast.Module | None) -> set[str]:
    if tree is None:
        return set()
    return {ast.unparse(n) for n in index_of(tree).of_type(ast.Call)
            if dotted_callee(n, SYSPATH_TAILS) in SYSPATH_CALLS}


TODO_MARK = lazy_re(r"^\W*(TODO|FIXME|XXX|HACK)\b", re.IGNORECASE)
TODO_WORD = lazy_re(r"\b(TODO|FIXME|XXX|HACK)\b", re.IGNORECASE)
STUB_WORD = lazy_re(r"^\s*(pass|raise\s+NotImplementedError)\b")
# A TODO is deferred work; it tells a reviewer something only when it admits that the shipped path is
# incomplete or wrong for some input. Clean-up and tuning notes ("legacy, remove", "tune later") do not.
GAP_WORDS = lazy_re(r"\b(not (yet )?(supported|implemented|handled|covered|tested|correct)|unsupported|unimplemented|"
                       r"silently|falls? ?back|fallback|wrong|incorrect|broken|buggy|bug|hack\w*|workaround|temporar\w*|"
                       r"only (supports?|handles?|works?)|assum\w*|ignor\w*|missing|no coverage|skip\w*|disabled?|"
                       r"used to be|runs? as|treated as|instead of|placeholder|dummy|fake|stub|hard-?coded|accuracy|precision|overflow|race)\b",
                       re.IGNORECASE)
# The header of a file copied in from another project (vLLM's SPDX line, "Adapted from ...").
VENDORED = lazy_re(r"contributors to the \w+ project|\b(adapted|copied|ported|borrowed|taken|vendored) from\b",
                      re.IGNORECASE)
OPTIMISATION = lazy_re(r"^\W*(TODO|FIXME|XXX)\b\W*(\(\w+\)\W*)?(tighten|optimi[sz]e|speed ?up|make \w+ faster|"
                          r"tune|retune|reduce (the )?overhead|avoid (the )?redundant|vectori[sz]e|fuse)\b", re.IGNORECASE)
WEAK_GAP = {"instead of", "skip", "skips", "skipping", "skipped"}


def _optimisation_note(note: str) -> bool:
    """A note that asks for a faster version of a correct path ("TODO: tighten NEED_M_MASK to fire only on
    the boundary tile instead of every tile"): its only gap word is a comparison of two correct ways."""
    if not OPTIMISATION.match(note) or STRONG_MARK.match(note):
        return False
    return all(m.group(0).lower() in WEAK_GAP for m in GAP_WORDS.finditer(note))


def _rejected_below(lines: list[str], last: int, language: str) -> bool:
    """The first code line after the note is an `assert`/`raise` (C++: a CHECK or throw): the note explains
    a limitation the code enforces (`# TODO: wait for ds_load_tr4 before including uint8` over
    `assert kv_cache_dtype in (bf16, fp8)`), so callers outside it get an error, not a silent wrong path."""
    comment = "#" if language == "python" else "//"
    for line in lines[last:last + 4]:
        code = line.strip()
        if not code or code.startswith(comment) or code.startswith("*") or code.startswith("/*"):
            continue
        if language == "python":
            return bool(re.match(r"(assert|raise)\b", code))
        return bool(re.match(r"(\w*CHECK\w*|TORCH_CHECK|AITER_CHECK|static_assert|throw)\b", code))
    return False


STRONG_MARK = lazy_re(r"^\W*(FIXME|XXX|HACK)\b", re.IGNORECASE)


@detector("incomplete-code")
def incomplete_code(review: ReviewInput) -> Iterable[Finding]:
    # findings in file order: the new notes of a file (their base search waits for one search of the
    # base tree for every note of the PR), then its stub bodies
    pending: list[tuple[str, int, int, str] | list[Finding]] = []
    for f in review.changed("python", "cpp", include_tests=False):
        if not review.facts.is_library(f.path):
            continue  # scripts, benchmarks and docs examples do not ship a path users reach
        if not any(TODO_WORD.search(t) or STUB_WORD.search(t) for _, t in f.added):
            continue  # nothing on the added lines that could be a note or a stub body
        text = review.source.text(f.path)
        if text is None:
            continue
        removed_texts = {_norm(t) for _, t in f.removed}
        added = f.added_lines
        lines = text.splitlines()
        vendored = f.is_new and bool(VENDORED.search("\n".join(lines[:25])))
        tree = review.source.python(f.path) if f.language == "python" else None
        for first, last, note in _notes(f.language, text, tree):
            if first not in added or vendored:
                continue  # a note of a file copied in from another project is upstream's, not this PR's
            if _norm(lines[first - 1]) in removed_texts or any(_norm(note.split("\n")[0]) in t for t in removed_texts):
                continue  # the same note was already there and only its line was edited
            if not (STRONG_MARK.match(note) or GAP_WORDS.search(note)) or _optimisation_note(note):
                continue  # clean-up or tuning note: nothing about the shipped path's behaviour
            if _rejected_below(lines, last, f.language):
                continue  # the next statement refuses the unsupported case: it fails loudly, as the action asks
            pending.append((f.path, first, last, note))
        if tree is not None:
            pending.append(list(_stub_bodies(review, f.path, tree, added, lines)))
    searched = [_searched(item[3]) for item in pending if isinstance(item, tuple)]
    on_base = review.source.grep_fixed([s for s in searched if s], "base")
    for item in pending:
        if isinstance(item, list):
            yield from item
            continue
        path, first, last, note = item
        if on_base.get(_searched(note)):
            continue  # moved from code the base already had, in this file or another
        quoted = " ".join(part.strip() for part in note.splitlines())
        yield Finding(
            rule="incomplete-code", path=path, line=first, end_line=last,
            problem=f"New deferred-work note in code the PR adds: `{quoted[:400]}`.",
            impact="The note says the path the PR ships is unfinished or wrong for some input; callers "
                   "reach it with no warning.",
            action="Author must finish the path, or make it fail loudly for the unsupported case "
                   "and track the rest in an issue.",
            tag="verified",
        )


def _notes(language: str, text: str, tree: ast.Module | None = None) -> list[tuple[int, int, str]]:
    """(first line, last line, whole note) for each TODO/FIXME/XXX/HACK comment, with the comment lines
    that continue it: a note is quoted whole, since its second line is often the one that matters.
    `tree`: the text's parsed module, from which the comments are read without tokenizing when it can."""
    if language == "python":
        raw = (python_comments(text, tree) if tree is not None else None)
        if raw is None:
            raw = comments(text)
        by_line = dict(raw)
        code_lines = text.splitlines()
        out = []
        for line, comment in raw:
            if not TODO_MARK.match(comment):
                continue
            parts, last = [comment], line
            while (last + 1) in by_line and code_lines[last].lstrip().startswith("#") \
                    and not TODO_MARK.match(by_line[last + 1]) and by_line[last + 1]:
                last += 1
                parts.append(by_line[last])
            out.append((line, last, "\n".join(parts)))
        return out
    notes = []
    for a, b, c in cpp.comments(cpp.parse(text)):
        body = "\n".join(part.strip().lstrip("/*!").rstrip("*/").strip() for part in c.splitlines())
        if TODO_MARK.match(body):
            notes.append((a, b, body.strip()))
    return notes


def _searched(note: str) -> str:
    """The text a note is looked up by in the base tree (its first line), or '' when too short to mean
    the same note."""
    first = _norm(note.split("\n")[0])
    return first if len(first) >= 12 else ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _stub_bodies(review: ReviewInput, path: str, tree: ast.Module, added: set[int], lines: list[str]) -> Iterable[Finding]:
    """A new function or branch whose whole body is `pass` or `raise NotImplementedError`."""
    for node in index_of(tree).of_type((ast.FunctionDef, ast.AsyncFunctionDef, ast.If)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.lineno not in added or _is_interface(node, tree):
                continue
            bodies = [("function", node.name, node.body)]
        else:  # an if
            bodies = [("branch", ast.unparse(node.test)[:80], node.body)]
            if node.orelse and not isinstance(node.orelse[0], ast.If):
                bodies.append(("else branch", ast.unparse(node.test)[:80], node.orelse))
        for kind, name, body in bodies:
            stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(stmts) != 1 or stmts[0].lineno not in added:
                continue
            stmt = stmts[0]
            what = _stub_kind(stmt)
            if what is None or (kind != "function" and what == "raise NotImplementedError"):
                continue  # an unsupported-case raise in one branch is a guard, not a stub
            if kind == "function" and (_declared_unsupported(review, node, tree, what) or _import_fallback(node, tree)):
                continue
            if what == "pass" and (len(body) > 1 or _explained(lines, stmt.lineno)):
                continue  # a docstring or a comment says why nothing happens: a deliberate no-op
            if what == "pass" and kind == "branch" and node.orelse:
                continue  # the accepted case of an if/elif chain whose other branches do the work
            yield Finding(
                rule="incomplete-code", path=path, line=stmt.lineno,
                problem=f"The new {kind} `{name}` has only `{what}` as its body.",
                impact="Callers that reach it silently do nothing" if what == "pass"
                else "Callers that reach it fail at run time with NotImplementedError",
                action="Author must implement it or remove it until it is needed.",
            )


def _explained(lines: list[str], line: int) -> bool:
    """`pass  # reason`, or a comment line right above the `pass`."""
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    above = lines[line - 2].strip() if line >= 2 else ""
    return "#" in here.split("pass", 1)[-1] or above.startswith("#")


IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def _import_fallback(func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> bool:
    """A stand-in defined where an optional import failed (`try: from …amd import s_set_prio as f` /
    `except ImportError: def f(prio): pass`): doing nothing is the intended degradation, a scheduling hint
    the installed Triton does not have, not unfinished work."""
    parents = index_of(tree).parents
    handler = parents.get(func)
    attempt = parents.get(handler) if isinstance(handler, ast.ExceptHandler) else None
    if not isinstance(attempt, ast.Try) or handler.type is None:
        return False
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    if not {dotted_name(c).rsplit(".", 1)[-1] for c in caught} & IMPORT_ERRORS:
        return False
    bound = {alias.asname or (alias.name if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0])
             for stmt in attempt.body for node in walk(stmt) if isinstance(node, (ast.Import, ast.ImportFrom))
             for alias in node.names}
    return func.name in bound


def _stub_kind(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Pass):
        return "pass"
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        if dotted_name(exc) == "NotImplementedError":
            return "raise NotImplementedError"
    return None


PLAIN_BASES = {"object", "Module", "Enum", "IntEnum", "Exception", "ValueError", "RuntimeError", "dict", "list",
               "tuple", "str", "int", "Generic", "NamedTuple", "TypedDict"}


def _declared_unsupported(review: ReviewInput, func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module,
                          what: str) -> bool:
    """A method empty by design: its class is a base another class of the tree subclasses (an abstract
    method or a no-op hook by convention, overridden there), or — for `raise NotImplementedError` — the
    class implements an interface from outside the tree (an SGLang KV pool, a vLLM attention backend) whose
    method this implementation does not support: the framework calls it and expects that raise."""
    cls = next((c for c in index_of(tree).of_type(ast.ClassDef) if func in c.body), None)
    if cls is None:
        return False
    if review.source.grep(rf"^\s*class\s+\w+\s*\([^)]*\b{re.escape(cls.name)}\b", "head", ("*.py",), files_only=True):
        return True
    if what != "raise NotImplementedError":
        return False
    bases = [dotted_name(b).rsplit(".", 1)[-1] for b in cls.bases]
    external = [b for b in bases if b and b not in PLAIN_BASES
                and not review.source.grep(rf"^\s*class\s+{re.escape(b)}\b", "head", ("*.py",), files_only=True)]
    return bool(external) or _framework_hook(review, func)


def _framework_hook(review: ReviewInput, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method of a duck-typed protocol an outside framework calls: other definitions of the same method
    exist in the tree (sibling backends implementing the same hooks, with no common base class) and no code
    of the tree calls it. vLLM asks an attention backend `get_kv_cache_stride_order()` and reads the raise as
    "no preferred order"; declining a hook is not unfinished work."""
    name = re.escape(func.name)
    if len(review.source.grep(rf"^\s*(async\s+)?def {name}\s*\(", "head", ("*.py",))) < 2:
        return False
    return not review.source.grep(rf"\.{name}\s*\(", "head", ("*.py",), files_only=True)


def _is_interface(func: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> bool:
    """Abstract methods, protocol/overload stubs, methods of ABC/Protocol classes, and binding declarations
    whose body the decorator supplies (aiter's `@compile_ops`, a C++ op behind a Python signature) are meant
    to be empty."""
    decorators = {dotted_name(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1] for d in func.decorator_list}
    if decorators & {"abstractmethod", "overload", "abstractproperty", "compile_ops"}:
        return True
    for cls in index_of(tree).of_type(ast.ClassDef):
        if func in cls.body:
            bases = {dotted_name(b).rsplit(".", 1)[-1] for b in cls.bases}
            return bool(bases & {"ABC", "Protocol", "ABCMeta"})
    return False


def _knob_sites(review: ReviewInput) -> list[tuple[str, ast.AST, str]]:
    """Every read of a project-prefixed environment variable on an added line of a changed non-test Python
    file outside the registry, in file order (once per review): the search plan takes the names, the detector
    the reads in library files (which files are library code may itself be a search of the tree, which the
    plan must not start)."""
    return review.once("_env_knob_sites", _find_knob_sites)


def _knob_names(review: ReviewInput) -> list[str]:
    """The knobs' names, looked up in the base tree's Python files through the review's planned search of
    the head tree's (`ReviewInput.base_word_lines`)."""
    return sorted({name for _, _, name in _knob_sites(review)})


def _find_knob_sites(review: ReviewInput) -> list[tuple[str, ast.AST, str]]:
    prefixes = tuple(review.profile.env_prefixes)
    registry = set(review.profile.env_registry)
    sites: list[tuple[str, ast.AST, str]] = []
    if not prefixes:
        return sites
    for f in review.changed("python", include_tests=False):
        if f.path in registry:
            continue  # the registry is where knobs belong
        if not any("environ" in t or "getenv" in t for _, t in f.added):
            continue
        tree = review.source.python(f.path)
        if tree is None:
            continue
        added = f.added_lines
        sites += [(f.path, node, name) for node, name in env_reads(tree, string_constants(tree))
                  if node.lineno in added and name.startswith(prefixes)
                  and not review.facts.registered_family(f.path, name)]
    return sites


@detector("env-var-knob", searches=_knob_names)
def env_var_knob(review: ReviewInput) -> Iterable[Finding]:
    first_read: dict[str, tuple[str, ast.AST]] = {}  # one finding per knob, at its first read
    also_in: dict[str, set[str]] = {}
    for path, node, name in _knob_sites(review):
        if not review.facts.is_library(path):
            continue  # scripts, tuning CLIs and benchmarks are not runtime
        if name in first_read:
            also_in.setdefault(name, set()).add(path)
        else:
            first_read[name] = (path, node)
    if not first_read:
        return
    registry = set(review.profile.env_registry)
    names = sorted(first_read)
    on_base = _names_on_base(review, names)  # a moved or repeated read is not a new knob
    registered = _names_in_tree(review, names, "head", tuple(registry)) if registry else set()
    new_by_file: dict[str, list[str]] = {}
    for name in sorted(names, key=lambda n: first_read[n][1].lineno):
        if name not in on_base and name not in registered:
            new_by_file.setdefault(first_read[name][0], []).append(name)
    unregistered = f" and is not registered in {', '.join(sorted(registry))}" if registry else ""
    for path, new in new_by_file.items():
        if len(new) >= KNOBS_AS_ONE:
            # an experiment's switchboard: one annotation for the file, with every read as evidence
            shown = ", ".join(f"`{n}`" for n in new[:KNOBS_SHOWN])
            more = f" and {len(new) - KNOBS_SHOWN} more" if len(new) > KNOBS_SHOWN else ""
            registry_note = f" (none registered in {', '.join(sorted(registry))})" if registry else ""
            yield _knob_finding(registry, path, [first_read[n][1] for n in new],
                                f"{len(new)} new environment knobs are read in this file{registry_note}: {shown}{more}.")
            continue
        for name in new:
            others = sorted(also_in.get(name, set()) - {path})
            elsewhere = f" (also read in {', '.join(f'`{p}`' for p in others[:3])})" if others else ""
            yield _knob_finding(registry, path, [first_read[name][1]],
                                f"New environment knob `{name}` is read here{unregistered}{elsewhere}.")


KNOBS_AS_ONE = 4  # new knobs in one file from which the file gets one annotation, not one per knob
KNOBS_SHOWN = 8


def _knob_finding(registry: set[str], path: str, reads: list[ast.AST], problem: str) -> Finding:
    return Finding(
        rule="env-var-knob", path=path, line=reads[0].lineno, problem=problem,
        impact="A knob changes behaviour invisibly per process; untested settings and "
               "stale knobs accumulate, and users cannot discover it.",
        action="Author must justify the knob (or drive the choice from config/arguments), "
               + ("register it in the env registry, " if registry else "")
               + "document it, and test both settings.",
        evidence=[Evidence(path, node.lineno, ast.unparse(node)[:120]) for node in reads],
    )


def _names_on_base(review: ReviewInput, names: list[str]) -> set[str]:
    """Which of `names` the base tree holds as words, in any file. Asked where a known knob usually is
    first: the base tree's Python files (the PR's own files' base sides, and the other files through the
    review's planned search of the head tree); only names in neither cost a search of the rest of the
    tree (its C++, scripts, workflows and docs: four fifths of a search of aiter's whole tree, ~0.2 s).
    Not its CSV tables: tuned configurations hold values, never a knob's read, and they are half the
    bytes of that search in aiter."""
    found = {name for name, lines in review.base_word_lines(names).items() if lines}
    missing = [n for n in names if n not in found]
    return found | (_names_in_tree(review, missing, "base", (":(exclude)*.py", ":(exclude)*.csv")) if missing else set())


def _names_in_tree(review: ReviewInput, names: list[str], side, pathspecs: tuple[str, ...]) -> set[str]:
    """Which of `names` occur as words anywhere in a tree: one `git grep -o` for all of them."""
    pattern = "|".join(re.escape(n) for n in names)
    hits = review.source.grep(pattern, side, pathspecs, word=True, only_matching=True)
    return {text for _, _, text in hits}
