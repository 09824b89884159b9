"""Housekeeping around new kernels: new-op-without-test (HK6), nth-op-variant (HK5) and stray
root-level files (temp-script, HK1).

A kernel is recognised by what the file defines, not by where it sits: a `@triton.jit` /
`@gluon.jit` function, a FlyDSL kernel module, or a C++ `__global__` function.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable

from ..git.diff import ChangedFile
from ..lang import Unparsable, cpp
from ..lang.index import index_of
from ..lang.python import DEVICE_DECORATORS, decorated_with, imported_module_path
from ..lang.triton import kernels
from ..model import Finding
from . import detector
from .base import ReviewInput
from .testing import _pr_adds_collectable, _pytest_prefixes
from ..lang.regex import lazy_re

CPP_KERNEL = lazy_re(r"\b__global__\b")
# A kernel definition line: `@triton.jit`, `@gluon.jit`, `@flyc.kernel(...)`, `__global__`; a file the PR takes
# more of them out of than it puts in gives its kernels up (to the new files beside it).
KERNEL_DEF = lazy_re(r"^\s*@[\w.]*\b(jit|kernel)\b|\b__global__\b")
MOVED_SHARE = 0.5  # a new kernel file at least half made of lines the PR removes elsewhere was moved
FLYDSL_IMPORT = lazy_re(r"^\s*(from|import)\s+flydsl\b", re.MULTILINE)


def _kernel_names(review: ReviewInput, f: ChangedFile) -> list[str]:
    """The kernels a new file defines ([] when it defines none or cannot be read)."""
    text = review.source.text(f.path) or ""
    if f.language == "python":
        tree = review.source.python(f.path)
        if tree is None:
            return []
        found = [k.name for k in kernels(tree)]
        if not found and FLYDSL_IMPORT.search(text) and _defines_device_function(tree):
            found = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and not n.name.startswith("_")]
        return found
    if f.language == "cpp" and CPP_KERNEL.search(text):
        tree = cpp.parse(text)
        return [cpp.function_name(n) for n in cpp.walk(tree.root_node)
                if n.type == "function_definition" and "__global__" in cpp.text_of(n).split("(", 1)[0]]
    return []


def _held_kernels(review: ReviewInput, f: ChangedFile) -> bool:
    """Whether a file the PR deletes defined kernels on the base side."""
    path = f.old_path or f.path
    if f.language == "python":
        tree = review.source.python(path, "base")
        text = review.source.text(path, "base") or ""
        return tree is not None and bool(kernels(tree) or (FLYDSL_IMPORT.search(text) and _defines_device_function(tree)))
    return f.language == "cpp" and bool(CPP_KERNEL.search(review.source.text(path, "base") or ""))


def _defines_device_function(tree: ast.Module) -> bool:
    """A FlyDSL module holds a kernel when some function in it (nested in a builder or not) is decorated
    `@...kernel` or `@...jit`; one that only wraps intrinsics (buffer ops, TDM descriptors, cluster masks)
    is a library of helpers, tested through the kernels that use it."""
    index = index_of(tree)
    return any(decorated_with(n, DEVICE_DECORATORS)
               for n in index.of_type(ast.FunctionDef) + index.of_type(ast.AsyncFunctionDef))


def _public_names(review: ReviewInput, f: ChangedFile) -> set[str]:
    tree = review.source.python(f.path) if f.language == "python" else None
    if tree is None:
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and not n.name.startswith("_")}


@detector("new-op-without-test")
def new_op_without_test(review: ReviewInput) -> Iterable[Finding]:
    facts = review.facts
    new_kernels = [(f, names) for f in review.changed("python", "cpp", include_tests=False)
                   if f.is_new and facts.is_library(f.path) and (names := _kernel_names(review, f))]
    if not new_kernels:
        return
    if _pr_adds_collectable(review, *_pytest_prefixes(review)):
        return  # a collectable test arrives with the kernels
    retired = {(g.old_path or g.path).rsplit("/", 1)[0] for g in review.files
               if (g.status in ("deleted", "renamed") and _held_kernels(review, g))
               or sum(1 for _, t in g.removed if KERNEL_DEF.search(t)) > sum(1 for _, t in g.added if KERNEL_DEF.search(t))}
    moved_out = {re.sub(r"\s+", "", t) for g in review.files for _, t in g.removed if len(t.strip()) >= 12}
    # the whole of each test file the PR touches: a test extended with a new case (`"gluon"` in a
    # parametrize list) calls the op on lines the PR did not change
    test_text = "\n".join(review.source.text(f.path) or "" for f in review.files
                          if facts.role(f.path) == "test" and f.status != "deleted")
    for f, names in new_kernels:
        if f.path.rsplit("/", 1)[0] in retired:
            continue  # the PR splits or replaces a kernel file it deletes beside it: a reorganisation, not a new op
        mine = [re.sub(r"\s+", "", t) for _, t in f.added if len(t.strip()) >= 12]
        if mine and sum(1 for t in mine if t in moved_out) >= MOVED_SHARE * len(mine):
            continue  # most of the file is code the PR removes elsewhere: moved into its own file, not a new op
        callers = set(names) | {f.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]}
        for g in _importers(review, f):  # the kernel file, and the PR's modules that reach it by import
            callers |= _public_names(review, g)
        if any(re.search(rf"\b{re.escape(n)}\b", test_text) for n in callers):
            continue  # an existing test, changed in this PR, now exercises it
        if _backend_of_tested_op(review, f):
            continue  # another backend's kernels for an op the project already tests under the same name
        benchmark = [g.path for g in review.files if g.status == "added" and facts.role(g.path) == "benchmark"]
        yield Finding(
            rule="new-op-without-test", path=f.path, line=1,
            problem=f"New kernel file `{f.path}` (`{'`, `'.join(names[:3])}`) arrives with no test pytest would "
                    "collect, and no changed test refers to it"
                    + (f"; the PR adds a benchmark instead (`{benchmark[0]}`)" if benchmark else "") + ".",
            impact="CI never checks the kernel's results from its first commit on; a wrong result ships green.",
            action="Author must add a unit test in the project's op-test format that compares the kernel "
                   "against a reference over production shapes.",
            tag="verified",
        )


def _backend_of_tested_op(review: ReviewInput, f: ChangedFile) -> bool:
    """The new file re-implements, for another device or DSL, an op the base tree already ships under the same
    file name in an enclosing package, with kernels of its own, and a test of the tree imports that op's module
    or names one of its public functions or classes (liger's `ops/backends/_ascend/ops/layer_norm.py` beside
    `ops/layer_norm.py`, fla's `modules/backends/triton_ascend/layernorm.py` beside `modules/layernorm.py`). The
    backend is selected in place of the default when its device is present, so the op's existing test is its test."""
    directory, _, leaf = f.path.rpartition("/")
    parts = directory.split("/") if directory else []
    twins = [("/".join(parts[:i] + [leaf])) for i in range(len(parts) - 1, -1, -1)]
    facts = review.facts
    for twin in twins:
        tree = review.source.python(twin, "base") if f.language == "python" else None
        if tree is None or not facts.is_library(twin, "base") or not kernels(tree):
            continue
        names = sorted({n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        and not n.name.startswith("_")})
        found = review.source.grep_words(names, "base") if names else {}
        users = {p for paths in found.values() for p in paths}
        if any(facts.role(p) == "test" for p in users):
            return True
        # one hop: a test importing the op's module, or a library module that uses the op (liger's
        # `transformers/sparsemax.py` wrapping `LigerSparsemaxFunction` for `test_sparsemax.py`)
        modules = [_module_name(p) for p in sorted(users | {twin}) if p == twin or facts.is_library(p, "base")]
        importers = review.source.grep_fixed(modules, "base", ("*.py",))
        if any(facts.role(p) == "test" for paths in importers.values() for p in paths):
            return True
    return False


def _module_name(path: str) -> str:
    """The dotted name a module is imported by (a `src/` layout imports without the `src.` prefix)."""
    return re.sub(r"^src\.", "", _dotted(path))


def _dotted(path: str) -> str:
    module = path.rsplit(".", 1)[0].replace("/", ".")
    return module[: -len(".__init__")] if module.endswith(".__init__") else module


def _imported_modules(tree: ast.Module, path: str) -> set[str]:
    """Dotted modules a file imports, `from p import a` giving both `p` and `p.a` (a may be a module)."""
    index = index_of(tree)
    out: set[str] = {a.name for node in index.of_type(ast.Import) for a in node.names}
    for node in index.of_type(ast.ImportFrom):
        module = imported_module_path(path, node).replace("/", ".")
        out.add(module)
        out.update(f"{module}.{a.name}" if module else a.name for a in node.names)
    return out


def _importers(review: ReviewInput, kernel: ChangedFile, hops: int = 4) -> list[ChangedFile]:
    """The kernel file and the PR's library modules that import it, directly or through one another (a
    package `__init__` re-exporting the op a test imports): a test reaching any of them tests the kernel."""
    reached = [kernel]
    names = {_dotted(kernel.path)}
    imports: dict[str, tuple[ChangedFile, set[str]]] = {}  # each module's imports, read once for all hops
    for g in review.changed("python", include_tests=False):
        tree = review.source.python(g.path) if g.path != kernel.path else None
        if tree is not None:
            imports[g.path] = (g, _imported_modules(tree, g.path))
    for _ in range(hops):
        grew = False
        for g, imported in imports.values():
            if g in reached:
                continue
            if imported & names:
                reached.append(g)
                names.add(_dotted(g.path))
                grew = True
        if not grew:
            break
    return reached


# ------------------------------------------------------------------------------ HK5

VARIANT_SUFFIX = lazy_re(r"^(?P<stem>.+?)_(v\d+|opt|optimi[sz]ed|variant|fast|new|alt)$")


@detector("nth-op-variant")
def nth_op_variant(review: ReviewInput) -> Iterable[Finding]:
    """The family is counted over the library, not the directory: aiter's entry points of one op live in
    different packages (`aiter/ops/mha.py`, `aiter/ops/triton/attention/mha.py` and `…/mha_v3.py` when #4627
    added `aiter/ops/mha_v4.py`), so a directory count never saw the habit. Files in private packages
    (`_triton_kernels/`) are implementations behind an entry point, not entry points."""
    facts = review.facts
    deleted = {f.path for f in review.files if f.status in ("deleted", "renamed")} | \
              {f.old_path for f in review.files if f.old_path}
    base_files: list[str] | None = None
    for f in review.changed("python", "cpp", include_tests=False):
        if not f.is_new or not facts.is_library(f.path) or facts.arch_of(f.path) or _private(f.path):
            continue
        name = f.path.rpartition("/")[2]
        stem, dot, suffix = name.rpartition(".")
        match = VARIANT_SUFFIX.match(stem)
        if not match or not _entry_point(review, f):
            continue
        family = match.group("stem")
        if base_files is None:
            base_files = review.source.files("base")
        siblings = [p for p in base_files if p.endswith(dot + suffix) and p not in deleted and not _private(p)
                    and _same_family(p.rpartition("/")[2].rpartition(".")[0], family)
                    and not facts.arch_of(p) and facts.is_library(p, "base")]
        if len(siblings) < 2:
            continue  # the first or second variant: not yet a pattern
        if any(p.rpartition("/")[2] == name for p in siblings):
            continue  # the counterpart of a variant the tree has (aiter/aot/pa_v1.py for csrc/cpp_itfs/pa/pa_v1.py)
        listed = ", ".join(f"`{p}`" for p in sorted(siblings)[:4])
        yield Finding(
            rule="nth-op-variant", path=f.path, line=1,
            problem=f"`{name}` is entry point number {len(siblings) + 1} of `{family}` in the library "
                    f"(already: {listed}).",
            impact="Callers must choose among near-duplicates, every fix has to be applied to each copy, and the "
                   "copies drift (see sibling-variant-unfixed).",
            action="Reviewer should ask whether this can be a mode of the existing entry point instead of a new "
                   "file.",
            tag="verified",
        )


def _private(path: str) -> bool:
    """A file inside a private package (`aiter/ops/triton/_triton_kernels/…`)."""
    return any(part.startswith("_") for part in path.split("/")[:-1])


OP_DECORATORS = ("compile_ops", "custom_op")  # aiter's @compile_ops, @torch.library.custom_op


def _entry_point(review: ReviewInput, f: ChangedFile) -> bool:
    """An op's entry point: it defines kernels, a compiled op (`@compile_ops`), or public functions (Python); or a
    kernel or a host function taking tensors (C++). A model file of classes is not an op variant."""
    if _kernel_names(review, f):
        return True
    if f.language == "cpp":
        text = review.source.text(f.path)
        if text is None:
            return False
        try:
            tree = cpp.parse(text)
        except Unparsable:
            return False
        return any(cpp.text_of(param.child_by_field_name("type")).rsplit("::", 1)[-1] == "Tensor"
                   for func in cpp.nodes_of_type(tree, "function_definition") for param in cpp.parameters(func))
    tree = review.source.python(f.path)
    return tree is not None and any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                    and (not n.name.startswith("_") or decorated_with(n, OP_DECORATORS))
                                    for n in tree.body)


def _same_family(stem: str, family: str) -> bool:
    if stem == family:
        return True
    match = VARIANT_SUFFIX.match(stem)
    return bool(match) and match.group("stem") == family


# ------------------------------------------------------------------------------ HK1 at the root

@detector("temp-script")
def stray_root_module(review: ReviewInput) -> Iterable[Finding]:
    """A new Python file at the top of the tree that defines nothing and nothing refers to: a probe
    (`probe_x.py` holding `x = 1` landed on aiter's main this way)."""
    for f in review.files:
        if f.status != "added" or "/" in f.path or not f.path.endswith(".py"):
            continue
        tree = review.source.python(f.path)
        if tree is None or any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body):
            continue  # a module with definitions is meant to be imported or run as a tool
        stem = f.path.removesuffix(".py")
        refs = [p for p, _, _ in review.source.grep(stem, "head", (), fixed=True, word=True, files_only=True)
                if p != f.path]
        if refs:
            continue
        statements = len(tree.body)
        yield Finding(
            rule="temp-script", path=f.path, line=1,
            problem=f"New top-level file `{f.path}` defines no function or class ({statements} statement"
                    f"{'s' if statements != 1 else ''}) and nothing in the tree imports, runs or mentions it: "
                    "a local probe or scratch file.",
            impact="It ships at the root of every checkout and install, confuses users and is mistaken for a "
                   "supported entry point.",
            action="Author must remove it before merge, or move it to the maintained scripts location with a "
                   "stated purpose.",
            tag="verified",
        )
