"""Tests that do not test: a reference computed above the kernel's precision, a test file pytest collects
nothing from, and a new test in a directory no CI job runs."""
from __future__ import annotations

import ast
import re
from typing import Iterable

from ..evidence._util import collectable_tests, is_test_file
from ..git.diff import ChangedFile
from ..lang.index import index_of
from ..model import Evidence, Finding
from ..lang.python import walk
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

# ----------------------------------------------------------------------------- test-reference-dtype-promotion

LOW_PRECISION = lazy_re(r"\b(bfloat16|float16|half|bf16|fp16|fp8\w*|float8\w*|e4m3\w*|e5m2\w*|fp4\w*|int8)\b")
REF_NAME = lazy_re(r"(^|_)(ref|refs|reference|golden|naive|native|baseline|expected|gt|truth|torch|ground)(_|$)|"
                      r"^(ref|torch|naive|reference|golden)|(ref|reference|golden|torch|naive)$", re.IGNORECASE)
REF_VAR = lazy_re(r"(^|_)(ref|reference|golden|expected|gt|truth)(_|$|\d)", re.IGNORECASE)
UPCAST_TEXT = lazy_re(r"\.(float|double)\(\)|\.(to|type)\([^)]*float(32|64)?\b|\.(to|type)\([^)]*double")
FP32 = {"torch.float32", "torch.float", "torch.float64", "torch.double", "float32", "float64", "dtypes.fp32",
        "torch.float32,", "fp32"}


def _is_upcast(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    attr = node.func.attr
    if attr in ("float", "double") and not node.args and not node.keywords:
        return True
    if attr in ("to", "type"):
        args = list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]
        return any(ast.unparse(a) in FP32 for a in args)
    return False


def _is_downcast(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    attr = node.func.attr
    if attr in ("bfloat16", "half", "type_as", "view_as"):
        return True
    if attr in ("to", "type"):
        args = list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]
        return bool(args) and not any(ast.unparse(a) in FP32 or ast.unparse(a).endswith(("device", "cuda", "cpu", '"cuda"'))
                                      for a in args)
    return False


def _fp32(node: ast.AST, tainted: set[str]) -> bool:
    """Whether an expression carries an fp32/fp64 value built by an upcast (promotion propagates)."""
    if _is_downcast(node):
        return False
    if _is_upcast(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in tainted
    if isinstance(node, ast.Call):
        if any(k.arg == "dtype" and ast.unparse(k.value) in FP32 for k in node.keywords):
            return True
        if isinstance(node.func, ast.Attribute) and _fp32(node.func.value, tainted):
            return True  # a method of an fp32 tensor: xf.pow(2), xf.mean()
        return any(_fp32(a, tainted) for a in node.args)
    if isinstance(node, ast.BinOp):
        return _fp32(node.left, tainted) or _fp32(node.right, tainted)
    if isinstance(node, ast.UnaryOp):
        return _fp32(node.operand, tainted)
    if isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _fp32(node.value, tainted)
    if isinstance(node, ast.IfExp):
        return _fp32(node.body, tainted) or _fp32(node.orelse, tainted)
    return False


def _returns_fp32(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether some returned value is still the upcast (fp32) computation, followed through assignments."""
    tainted: set[str] = set()
    statements = sorted((n for n in walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return))),
                        key=lambda n: (n.lineno, n.col_offset))
    for node in statements:
        if isinstance(node, ast.Return):
            if node.value is None:
                continue
            parts = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            if any(_fp32(p, tainted) for p in parts):
                return True
            continue
        value = node.value
        if value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {e.id for t in targets for e in walk(t) if isinstance(e, ast.Name)}
        if isinstance(node, ast.AugAssign):
            hot = _fp32(value, tainted) or bool(names & tainted)
        else:
            hot = _fp32(value, tainted)
        if hot:
            tainted |= names
        else:
            tainted -= names
    return False


@detector("test-reference-dtype-promotion")
def test_reference_dtype_promotion(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("python"):
        if not (is_test_file(f.path) or review.is_test(f.path)):
            continue
        code = review.code.get(f.path)
        added = {n for n, _ in (code.added if code else f.added)}
        if not added or not any(UPCAST_TEXT.search(t) for _, t in (code.added if code else f.added)):
            continue
        if review.facts.upcast_references_are_the_norm(f.path):
            continue  # the project's tests routinely compare against fp32 references: its policy, not a slip
        tree = review.source.python(f.path)
        if tree is None:
            continue
        text = review.source.text(f.path) or ""
        low = sorted(set(LOW_PRECISION.findall(text)))
        if not low:
            continue  # the kernel under test runs in fp32: an fp32 reference is the same precision
        functions = [n for n in index_of(tree).nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        ref_vars = _reference_callees(tree)
        compared = _compared_callees(tree)
        lines = text.splitlines()
        for func in functions:
            if not (REF_NAME.search(func.name) or func.name in ref_vars) or func.name.startswith("test"):
                continue
            if func.name not in compared:
                continue  # not compared against an upcast kernel output: nothing shows a precision mismatch
            upcasts = [n for n in walk(func) if _is_upcast(n) and n.lineno in added]
            if not upcasts:
                continue
            if not _returns_fp32(func):
                continue
            if _cast_at_call_sites(tree, func.name):
                continue
            first = upcasts[0]
            if _documents_kernel_precision(lines, func, first.lineno):
                continue
            yield Finding(
                rule="test-reference-dtype-promotion", path=f.path, line=first.lineno,
                problem=f"Reference `{func.name}` upcasts (`{ast.unparse(first)[:80]}`) and returns its result "
                        f"without casting back; line {compared[func.name]} compares it with the kernel output upcast "
                        f"to fp32, while this test runs the kernel in {', '.join(low[:3])}.",
                impact="The kernel is compared against fp32 math instead of against the rounding it is "
                       "supposed to reproduce, so the tolerance has to absorb the whole precision gap and real "
                       "precision bugs fit inside it.",
                action="Author must cast the reference back to the kernel's dtype where the kernel rounds "
                       "(at least before the comparison), then tighten the tolerance.",
                tag="verified",
                evidence=[Evidence(f.path, n.lineno, ast.unparse(n)[:100]) for n in upcasts[:3]],
            )


COMPARE_NAMES = {"assert_close", "assert_allclose", "allclose", "isclose", "checkAllclose", "check_allclose",
                 "assertAllClose", "assert_equal", "assert_array_almost_equal", "assert_almost_equal", "equal",
                 "cosine_similarity", "calc_diff", "get_err", "compare", "check"}
KERNEL_PRECISION = lazy_re(r"kernel[^\n]{0,60}\b(fp32|float32|f32|fp64|float)\b|\b(fp32|float32|f32)\b[^\n]{0,40}"
                              r"(like|as|matches|mirrors) (the )?kernel|kernel (accumulates|computes|keeps)",
                              re.IGNORECASE)


def _compared_callees(tree: ast.Module) -> dict[str, int]:
    """Functions whose result is compared against an explicitly upcast value — `cmp(out.float(), ref(...))`
    or `r = ref(...)` … `cmp(r, out.to(torch.float32))` — with the line of that comparison. Upcasting the
    other side shows it is the low-precision kernel output being measured against fp32 math."""
    results: dict[str, str] = {}
    for node in index_of(tree).of_type(ast.Assign):
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            for t in node.targets:
                for e in walk(t):
                    if isinstance(e, ast.Name):
                        results[e.id] = node.value.func.id
    out: dict[str, int] = {}
    for node in index_of(tree).of_type(ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if not (name in COMPARE_NAMES or name.startswith(("assert", "check", "compare", "verify"))):
            continue
        args = list(node.args[:2])
        if len(args) < 2 or not any(_is_upcast(a) for a in args):
            continue
        for arg in args:
            if _is_upcast(arg):
                continue
            callee = ""
            if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
                callee = arg.func.id
            elif isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Call) and isinstance(arg.value.func, ast.Name):
                callee = arg.value.func.id
            elif isinstance(arg, ast.Name):
                callee = results.get(arg.id, "")
            if callee:
                out.setdefault(callee, node.lineno)
    return out


def _documents_kernel_precision(lines: list[str], func: ast.AST, line: int) -> bool:
    """A comment or docstring of the reference says the kernel itself computes in fp32 there."""
    doc = ast.get_docstring(func) or ""  # type: ignore[arg-type]
    near = "\n".join(lines[max(0, line - 3):line])
    return bool(KERNEL_PRECISION.search(doc) or KERNEL_PRECISION.search(near))


def _reference_callees(tree: ast.Module) -> set[str]:
    """Functions whose result is stored in a reference-named variable (`ref_out = my_impl(...)`)."""
    out: set[str] = set()
    for node in index_of(tree).of_type(ast.Assign):
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            names += [e.id for t in node.targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)]
            if any(REF_VAR.search(n) for n in names):
                out.add(node.value.func.id)
    return out


def _cast_at_call_sites(tree: ast.Module, name: str) -> bool:
    """The caller casts the reference back: `f(...).to(dtype)` or `ref = f(...)` later used as `ref.to(dtype)`."""
    results: set[str] = set()
    for node in index_of(tree).of_type((ast.Call, ast.Assign)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_downcast(node) \
                and isinstance(node.func.value, ast.Call) and getattr(node.func.value.func, "id", "") == name:
            return True
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == name:
            for t in node.targets:
                results.update(e.id for e in walk(t) if isinstance(e, ast.Name))
    if not results:
        return False
    for node in index_of(tree).of_type(ast.Call):
        if _is_downcast(node) and isinstance(node.func.value, ast.Name) and node.func.value.id in results:
            return True
    return False


# ----------------------------------------------------------------------------- uncollectable-test (HK12b)

PYTEST_CONFIGS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")


def _new_test_files(review: ReviewInput) -> list[ChangedFile]:
    return [f for f in review.changed("python") if f.is_new and is_test_file(f.path)]


def _new_test_modules(review: ReviewInput) -> list[str]:
    """The module names whose importers the check may look up: planned into the review's one search of
    the head tree's Python files, instead of a search of its own (~0.1 s on aiter)."""
    return [_module_name(f.path) for f in _new_test_files(review)]


def _module_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".py")


@detector("uncollectable-test", searches=_new_test_modules)
def uncollectable_test(review: ReviewInput) -> Iterable[Finding]:
    new = _new_test_files(review)
    if not new:
        return
    prefixes, class_prefixes = _pytest_prefixes(review)
    reach = {t.path: t for t in getattr(review.evidence.get("ci_coverage"), "tests", [])}
    candidates = []
    for f in new:
        known = reach.get(f.path)
        if known is not None and known.status != "run":
            continue  # nothing in CI runs it at all: test-never-run's case
        tree = review.source.python(f.path)
        if tree is None:
            continue
        if collectable_tests(tree, prefixes, class_prefixes):
            continue
        if sum(len(t) for _, t in f.added) < 300:
            continue
        candidates.append((f, tree))
    if not candidates or _pr_adds_collectable(review, prefixes, class_prefixes):
        return
    for f, tree in candidates:
        module = _module_name(f.path)
        importers = [p for p, _, _ in review.source.grep(rf"(import|from)\s+([\w.]*\.)?{re.escape(module)}\b",
                                                         "head", ("*.py",), files_only=True) if p != f.path]
        if importers:
            continue  # a helper module other tests import, not a standalone test
        line, anchor = _entry_point(tree)
        runner = reach.get(f.path)
        if runner is not None and runner.runner in ("script", "unittest"):
            # CI runs the file itself (`python3 $file`), so its checks do run there: a note, not a gap
            yield Finding(
                rule="uncollectable-test", path=f.path, line=line, severity="low", tag="inferred",
                problem=f"`{f.path}` defines no `test*` function or `Test*` class; its checks run through {anchor}, "
                        f"which CI executes as a script ({runner.reason}), so pytest selection and reports do not see them.",
                impact="The checks run in that CI job only; a pytest run or a `-k` selection reports nothing for this file.",
                action="Reviewer may ask for `test_` functions if the project is moving its tests to pytest.",
            )
            continue
        if runner is None or runner.runner != "pytest":
            # Nothing shows pytest runs this file: CI's runner is unknown (a profile directory, no workflow read)
            # or no job reaches it. A script named test_* in aiter's csrc/ or aot/ trees is run by hand, so
            # "pytest collects nothing" has no consequence there.
            continue
        yield Finding(
            rule="uncollectable-test", path=f.path, line=line,
            problem=f"`{f.path}` is named like a test but defines no `test*` function or `Test*` class, so the "
                    f"pytest run of CI ({runner.reason}) collects nothing from it; its checks run only through {anchor}.",
            impact="A pytest run reports this file as passing without executing any of its checks, and the PR "
                   "reads as tested while no collected test covers the new code.",
            action="Author must turn the checks into `test_` functions (parametrised over the shapes) or say in "
                   "the PR that the code is only tested by running this script by hand.",
            tag="verified",
        )


def _pytest_prefixes(review: ReviewInput) -> tuple[tuple[str, ...], tuple[str, ...]]:
    functions: tuple[str, ...] = ("test",)
    classes: tuple[str, ...] = ("Test",)
    for path in PYTEST_CONFIGS:
        text = review.source.text(path)
        if not text:
            continue
        m = re.search(r"^\s*python_functions\s*=\s*(.+)$", text, re.MULTILINE)
        if m:
            functions = tuple(p.rstrip("*") for p in re.findall(r"[\w*]+", m.group(1)))
        m = re.search(r"^\s*python_classes\s*=\s*(.+)$", text, re.MULTILINE)
        if m:
            classes = tuple(p.rstrip("*") for p in re.findall(r"[\w*]+", m.group(1)))
    return functions, classes


def _pr_adds_collectable(review: ReviewInput, prefixes: tuple[str, ...], class_prefixes: tuple[str, ...]) -> bool:
    for f in review.changed("python"):
        if not is_test_file(f.path):
            continue
        tree = review.source.python(f.path)
        if tree is None:
            continue
        added = f.added_lines
        if any(node.lineno in added for node in collectable_tests(tree, prefixes, class_prefixes)):
            return True
    return False


def _entry_point(tree: ast.Module) -> tuple[int, str]:
    """Where to annotate: the function the `__main__` block runs, else that block, else line 1."""
    main_block = next((s for s in tree.body if isinstance(s, ast.If) and "__main__" in ast.unparse(s.test)), None)
    functions = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if main_block is not None:
        called = [c.func.id for c in walk(main_block) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                  and c.func.id in functions]
        if "main" in called or (not called and "main" in functions):
            return functions["main"].lineno, "`main()` under `if __name__ == \"__main__\"`"
        if len(called) == 1:
            return functions[called[0]].lineno, f"`{called[0]}()` under `if __name__ == \"__main__\"`"
        return main_block.lineno, "the `if __name__ == \"__main__\"` block"
    if "main" in functions:
        return functions["main"].lineno, "`main()`"
    return 1, "module-level code"


# ----------------------------------------------------------------------------- test-never-run (HK12)

@detector("test-never-run")
def test_never_run(review: ReviewInput) -> Iterable[Finding]:
    data = review.evidence.get("ci_coverage")
    if data is None or not getattr(data, "checked", False):
        return
    by_dir: dict[tuple[str, str], list] = {}
    for reach in data.tests:
        # an explicit CI exclusion is the repository's decision; a list CI computes at run time is undecided
        if reach.status not in ("run", "excluded", "computed"):
            directory = reach.path.rsplit("/", 1)[0] if "/" in reach.path else "."
            by_dir.setdefault((directory, reach.status), []).append(reach)
    for (directory, status), reaches in by_dir.items():
        first = reaches[0]
        tree = review.source.python(first.path)
        line = 1
        if tree is not None:
            tests = collectable_tests(tree)
            line = tests[0].lineno if tests else 1
        others = f" (and {len(reaches) - 1} more new test file(s) there)" if len(reaches) > 1 else ""
        if status == "unrun" and first.reason.startswith("CI runs"):
            problem = f"New test `{first.path}`{others} is never run: {first.reason}."
        elif status == "unrun":
            problem = (f"New test `{first.path}`{others}: no workflow in .github/workflows runs tests in "
                       f"`{directory}/` (read from the pytest, python and test-split commands the workflows execute).")
        else:
            problem = f"New test `{first.path}`{others} is in `{directory}/`, which {first.reason}."
        yield Finding(
            rule="test-never-run", path=first.path, line=line,
            problem=problem,
            impact="CI stays green whatever the test would say: the new code is not exercised before merge.",
            action="Author must move the test into a directory CI runs, or add it to a workflow in this PR.",
            tag="verified",
            evidence=[Evidence(r.path, None, r.reason) for r in reaches[:5]],
        )
