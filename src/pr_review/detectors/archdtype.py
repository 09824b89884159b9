"""Hardcoded arch / dtype assumptions (aiter C1–C4, ATOM C1–C3), decided from Python's `ast`
and from tree-sitter's C++/HIP/CUDA syntax tree, so the guard around a constant — an enclosing
`if dtype == ...`, `if constexpr (std::is_same_v<T, fp8_e4m3fnuz>)`, `#if defined(__gfx942__)`,
a ternary or a per-dtype table — is read from the tree, not guessed from the line.

Each rule reports only what the PR introduced: a construct on an added line whose text (or, for
arch literals, whose kind) the base side of the same file did not already have.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from ..git.diff import ChangedFile
from ..lang import cpp, one_line
from ..lang.index import index_of
from ..lang.python import dotted_name, node_lines, walk
from ..lang.regex import lazy_re
from ..model import Evidence, Finding, record
from . import detector
from .base import ReviewInput

ARCH_LITERAL = lazy_re(r"^gfx[0-9]{2,4}[a-z]?$")
# Tuning code RepoFacts does not name as tooling by its directory (`gemm_tune/`, `*_tune_utils.py`): its
# arch and dtype literals pick what to sweep, not what users run.
TUNING_PATH = lazy_re(r"(^|/)(\w*_)?tun(e|ing)(_\w*)?/|(^|/|_)tun(e|ing)(_utils?)?\.py$|_tune_\w*\.py$")
# A name, condition or function that pins one fp8 flavour (or an MX format, which is OCP by spec).
# a flavour or arch check; arch also by product name (`#ifdef __HIP__MI300__`, `is_mi300()`, CDNA3)
FLAVOUR = lazy_re(r"fnuz|e4m3|e5m2|ocp|float8|fp8_?t\b|gfx\d|__gfx|(^|[^a-z])mx(fp)?\d?([^a-z]|$)|mxfp|is_same|dtype|"
                     r"scalar_type|arch|FNUZ|Fp8|FP8|(^|[^a-z])mi[23]\d\d|cdna\d", re.IGNORECASE)
FLAVOUR_NAME = lazy_re(r"fnuz|e4m3|e5m2|ocp|(^|_)mx(fp\d+)?(_|$)|mxfp|gfx\d", re.IGNORECASE)


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _touched(node: ast.AST, added: set[int]) -> bool:
    return any(n in added for n in node_lines(node))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of string constants that are docstrings or bare string statements."""
    out = set()
    for node in index_of(tree).of_type(ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.add(id(node.value))
    return out


def _runtime_files(review: ReviewInput, language: str, token: re.Pattern[str] | None = None) -> Iterator[ChangedFile]:
    """Changed non-test, non-benchmark files of `language` whose added text matches `token` (a
    cheap prefilter: a file whose added lines cannot hold the construct is not parsed)."""
    for f in review.changed(language, include_tests=False):
        if not f.added or review.facts.is_tooling(f.path) or TUNING_PATH.search(f.path):
            continue
        if token is not None and not any(token.search(text) for _, text in f.added):
            continue
        yield f


ARCH_TOKEN = lazy_re(r"gfx[0-9]")
FNUZ_TOKEN = lazy_re(r"fnuz", re.IGNORECASE)
FP8_TOKEN = lazy_re(r"(?<![\w.])(240|448|57344)(?![\w])|(?<![\w.])(240|448|57344)\.|\b(240|448|57344)[ulf]\b", re.IGNORECASE)


# =============================================================================================
# Python: arch comparisons

def _arch_strings(node: ast.AST) -> list[str]:
    """Arch literals that are an operand of `node` (itself, or in a tuple/list/set operand)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and ARCH_LITERAL.match(node.value):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and ARCH_LITERAL.match(e.value)]
    return []


def _arch_comparisons(tree: ast.AST) -> Iterator[tuple[ast.AST, list[str]]]:
    """`arch == "gfx950"`, `"gfx942" in arch`, `arch in ("gfx942", "gfx950")`,
    `arch.startswith("gfx95")`: (node, literals)."""
    for node in index_of(tree).of_type((ast.Compare, ast.Call)):
        if isinstance(node, ast.Compare):
            lits = [s for operand in [node.left, *node.comparators] for s in _arch_strings(operand)]
            if lits:
                yield node, lits
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("startswith", "endswith") and node.args:
            lits = _arch_strings(node.args[0]) or [
                node.args[0].value for _ in [0] if isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str) and re.match(r"^gfx[0-9]{1,4}", node.args[0].value)]
            if lits:
                yield node, lits


def _python_arch_literals(tree: ast.Module | None) -> set[str]:
    if tree is None:
        return set()
    docs = _docstrings(tree)
    return {n.value for n in index_of(tree).of_type(ast.Constant)
            if isinstance(n.value, str) and id(n) not in docs
            and re.match(r"^gfx[0-9]{2,4}", n.value)}


BACKEND_TOKEN = lazy_re(r"flydsl|gluon|asm|(^|_)ck(_|$)|cktile|triton|hip|opus|kernel|_impl$|_launch", re.IGNORECASE)
CAPABILITY_NAME = lazy_re(r"support|availab|enabled|usable|(^|_)(can|has|is|should|prefer)_|(^|_)use_", re.IGNORECASE)


def _early_exit(body: list[ast.stmt]) -> bool:
    """A branch that only bails out: raise / return / assert / a warning or log call."""
    for stmt in body:
        if isinstance(stmt, (ast.Raise, ast.Return, ast.Assert, ast.Pass, ast.Continue, ast.Break)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            name = dotted_name(stmt.value.func)
            if re.search(r"warn|log|print|skip", name):
                continue
        if isinstance(stmt, ast.If) and _early_exit(stmt.body) and _early_exit(stmt.orelse):
            continue  # `if warn: logger.warning(...)`
        return False
    return True


def _enclosing_function(node: ast.AST, parents: dict) -> ast.FunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node  # type: ignore[return-value]
    return None


KERNEL_PATH = lazy_re(r"(^|/)(flydsl|_triton_kernels|_gluon_kernels|gluon|kernels?|asm|ck\w*)/|gfx\d+", re.IGNORECASE)
# Kernel-specific code (kernel builders, launchers, generated-kernel tooling, arch-specific files):
# an arch test there picks an instruction variant or guards one kernel's availability — the
# capability-guard case the rule exempts (aiter#3870) — not the central dispatch layer.
KERNEL_SPECIFIC_FILE = lazy_re(r"(^|/)(flydsl/kernels|_triton_kernels|_gluon_kernels|csrc/(kernels|include|opus\w*|ck\w*|asm\w*))/"
                                  r"|(^|/)[^/]*gfx\d+[^/]*(/|$)", re.IGNORECASE)
HELPER_NAME = lazy_re(r"detect|(^|_)arch|gfx\d*|(^|_)(is|has|supports?)_", re.IGNORECASE)


def _named_helper(func: ast.AST) -> bool:
    """A small function whose body is the arch decision itself (`def native_fp8_format(): return
    X if get_gfx() == "gfx942" else Y`): the named helper the rule asks for, not a scattered check."""
    body = [s for s in getattr(func, "body", []) if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return 0 < len(body) <= 2 and isinstance(body[-1], ast.Return)


def _named_flag(node: ast.AST, parents: dict) -> bool:
    """`_IS_GFX942 = get_arch().startswith("gfx942")` at module level: the comparison is made once,
    into a named flag — the named constant the rule asks for."""
    parent = parents.get(node)
    while isinstance(parent, (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Attribute)):
        parent = parents.get(parent)
    return isinstance(parent, (ast.Assign, ast.AnnAssign))


def _capability_guard(node: ast.AST, parents: dict, path: str = "") -> bool:
    """The comparison decides only whether one kernel may run (bail-out / predicate), inside a
    kernel-specific wrapper or a capability predicate (aiter#3870's shape), or is the whole body
    of a named arch helper."""
    func = _enclosing_function(node, parents)
    if func is None:
        return _named_flag(node, parents)
    if _named_helper(func) or HELPER_NAME.search(func.name) or CAPABILITY_NAME.search(func.name):
        return True  # the named arch / capability helper itself (`_detect_gfx1250`, `fp4_indexer_enabled`)
    child, parent = node, parents.get(node)
    while isinstance(parent, (ast.BoolOp, ast.UnaryOp)):
        child, parent = parent, parents.get(parent)
    guard = False
    if isinstance(parent, ast.Assert):
        return True  # an assertion selects nothing: not a dispatch condition
    elif isinstance(parent, ast.If) and parent.test is child and _early_exit(parent.body) \
            and (not parent.orelse or _early_exit(parent.orelse)):
        if all(isinstance(s, (ast.Raise, ast.Expr)) for s in parent.body):
            return True  # `if arch != X: raise ...`: refuses unsupported archs, selects nothing
        guard = True
    elif isinstance(parent, ast.Return):
        guard = True
    elif isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        guard = any(isinstance(t, ast.Name) and CAPABILITY_NAME.search(t.id) and not re.search(r"use_", t.id)
                    for t in targets)
    if not guard:
        return False
    return bool(BACKEND_TOKEN.search(func.name) or CAPABILITY_NAME.search(func.name) or KERNEL_PATH.search(path))


@detector("arch-literal-in-dispatch")
def arch_literal_in_dispatch(review: ReviewInput) -> Iterable[Finding]:
    for f in _runtime_files(review, "python", ARCH_TOKEN):
        tree = review.source.python(f.path)
        if tree is None:
            continue
        base = review.base_python(f)
        if KERNEL_SPECIFIC_FILE.search(f.path) or _python_arch_literals(base):
            continue  # kernel-specific code, or a file that already compares arch literals (aiter#3956)
        added = f.added_lines
        parents = index_of(tree).parents
        kernel_archs = _arch_specific_imports(review, tree)
        hits: list[tuple[int, list[str], str, str]] = []
        family_gates: list[tuple[int, list[str], str, str]] = []
        for node, lits in _arch_comparisons(tree):
            if not _touched(node, added) or _capability_guard(node, parents, f.path):
                continue
            func = _enclosing_function(node, parents)
            hit = (node.lineno, lits, ast.unparse(node), f"`{func.name}`" if func else "module level")
            # a gate that selects a kernel family existing only for that arch (`…/gfx1250/…`) is correct dispatch
            (family_gates if set(lits) <= kernel_archs else hits).append(hit)
        if hits:
            yield _arch_finding(f.path, sorted(hits))
        elif family_gates:
            yield _family_gate_note(f.path, sorted(family_gates))


def _arch_specific_imports(review: ReviewInput, tree: ast.Module) -> set[str]:
    """Archs of the arch-specific kernel modules a file imports (`_gluon_kernels.gfx1250.moe…`)."""
    archs: set[str] = set()
    index = index_of(tree)
    for node in [*index.of_type(ast.Import), *index.of_type(ast.ImportFrom)]:
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        for name in names:
            arch = review.facts.arch_of(name.replace(".", "/") + ".py")
            if arch:
                archs.add(arch)
    return archs


def _arch_finding(path: str, hits: list[tuple[int, list[str], str, str]]) -> Finding:
    """One finding per file: the first new arch comparison, with the others as evidence."""
    line, _, cond, where = hits[0]
    names: list[str] = []
    for _, lits, _, _ in hits:
        names += [x for x in lits if x not in names]
    lits = ", ".join(f"'{x}'" for x in names)
    more = f" (and {len(hits) - 1} more comparison(s) in this file)" if len(hits) > 1 else ""
    return Finding(
        rule="arch-literal-in-dispatch", path=path, line=line,
        problem=(f"New arch string(s) {lits} hard-coded in the dispatch condition `{one_line(cond, 80)}` in {where} "
                 f"({path}:{line}){more}; the base version of this file compared no arch literal."),
        impact=("Arch support is now decided by a string scattered in this file: the next arch (or a variant such as "
                "a gfx95x sibling) silently takes the other branch, and nobody updating the central arch registry "
                "will find this check."),
        action=("Author must route the decision through the arch registry / a named capability helper "
                "(e.g. a `supports_<feature>()` predicate) instead of comparing a raw gfx string here."),
        tag="verified",
        evidence=[Evidence(path, ln, one_line(c, 120)) for ln, _, c, _ in hits[:10]],
    )


def _family_gate_note(path: str, hits: list[tuple[int, list[str], str, str]]) -> Finding:
    """The gate picks kernels that exist only for the arch it names, with a fallback: right today, a
    question only for the next arch sharing that ISA."""
    line, lits, cond, where = hits[0]
    return Finding(
        rule="arch-literal-in-dispatch", path=path, line=line, severity="low", tag="inferred",
        problem=(f"`{one_line(cond, 80)}` in {where} selects kernels this file imports from a "
                 f"{'/'.join(lits)}-only directory, with a fallback on other archs."),
        impact="Correct for the archs that exist; a later arch with the same ISA takes the fallback until the "
               "string is extended.",
        action="Reviewer may suggest a named capability helper shared with the kernel directory.",
        evidence=[Evidence(path, ln, one_line(c, 120)) for ln, _, c, _ in hits[:10]],
    )


# =============================================================================================
# C++: arch string comparisons

CPP_ARCH_STRING = lazy_re(r'"gfx[0-9]{2,4}[a-z]?"')


def _cpp_arch_strings(tree) -> Iterator[tuple[object, str]]:
    for node in cpp.walk(tree.root_node):
        if node.type == "string_literal":
            value = cpp.string_value(node)
            if value is not None and re.match(r"^gfx[0-9]{2,4}[a-z]?$", value):
                yield node, value


CPP_CHECK = lazy_re(r"CHECK|ASSERT|assert|static_assert|ENFORCE", re.IGNORECASE)


def _cpp_in_check(node) -> bool:
    """Inside `TORCH_CHECK(...)` / `AITER_CHECK(...)` / `assert(...)`: a capability guard."""
    for a in cpp.ancestors(node):
        if a.type == "call_expression" and CPP_CHECK.search(cpp.text_of(a.child_by_field_name("function"))):
            return True
        if a.type in ("compound_statement", "function_definition"):
            return False
    return False


def _cpp_small_helper(node) -> bool:
    func = cpp.enclosing_function(node)
    if func is None:
        return False
    body = func.child_by_field_name("body")
    return body is not None and body.named_child_count <= 2 and any(
        c.type == "return_statement" for c in body.named_children)


def _cpp_in_comparison(node) -> bool:
    for a in cpp.ancestors(node):
        if a.type == "binary_expression":
            op = a.child_by_field_name("operator")
            if op is not None and cpp.text_of(op) in ("==", "!="):
                return True
        if a.type == "call_expression":
            fn = cpp.text_of(a.child_by_field_name("function"))
            if re.search(r"(find|compare|strcmp|strncmp|starts_with|rfind|count|contains)$", fn):
                return True
        if a.type in ("expression_statement", "declaration", "compound_statement", "condition_clause"):
            return False
    return False


@detector("arch-literal-in-dispatch")
def arch_literal_in_dispatch_cpp(review: ReviewInput) -> Iterable[Finding]:
    for f in _runtime_files(review, "cpp", ARCH_TOKEN):
        text = review.source.text(f.path)
        if text is None:
            continue
        base_text = review.base_text(f)
        if KERNEL_SPECIFIC_FILE.search(f.path) or (base_text is not None and CPP_ARCH_STRING.search(base_text)):
            continue  # kernel-specific code, or a file that already compares arch strings
        added = f.added_lines
        hits: list[tuple[int, list[str], str, str]] = []
        for node in cpp.nodes_on_lines(cpp.parse(text).root_node, added, ("string_literal",)):
            value = cpp.string_value(node)
            if not value or not re.match(r"^gfx[0-9]{2,4}[a-z]?$", value) or not _cpp_in_comparison(node):
                continue
            names = cpp.enclosing_names(node)
            if _cpp_in_check(node) or _cpp_small_helper(node) or (names and HELPER_NAME.search(names[0])):
                continue  # a capability check, or the named arch helper itself
            hits.append((cpp.line_of(node), [value], cpp.text_of(_cpp_statement(node)),
                         f"`{names[0]}`" if names else "file scope"))
        if hits:
            yield _arch_finding(f.path, sorted(hits))


def _cpp_statement(node):
    for a in cpp.ancestors(node):
        if a.type in ("condition_clause", "expression_statement", "declaration", "return_statement"):
            return a
    return node


# =============================================================================================
# C1 — fnuz-ness inferred from an arch name

FNUZ_NAME = lazy_re(r"fnuz", re.IGNORECASE)
DTYPE_CHECK = lazy_re(r"\.dtype\b|dtype\(\)|scalar_type|float8_|is_same")


@detector("fnuz-by-arch-name")
def fnuz_by_arch_name(review: ReviewInput) -> Iterable[Finding]:
    for f in _runtime_files(review, "python", FNUZ_TOKEN):
        tree = review.source.python(f.path)
        if tree is None:
            continue
        base = review.base_python(f)
        base_texts = {_norm(ast.unparse(n)) for n in index_of(base).of_type(ast.stmt)} if base else set()
        added = f.added_lines
        for stmt, name, cond in _python_fnuz_by_arch(tree):
            if not _touched(stmt, added) or _norm(ast.unparse(stmt)) in base_texts:
                continue
            yield _fnuz_finding(f.path, stmt.lineno, name, ast.unparse(cond))
    for f in _runtime_files(review, "cpp", FNUZ_TOKEN):
        text = review.source.text(f.path)
        if text is None:
            continue
        base_text = review.base_text(f, "")
        base_lines = {_norm(x) for x in (base_text or "").splitlines()}
        added = f.added_lines
        for node, name in _cpp_fnuz_by_arch(cpp.parse(text), added):
            line = cpp.line_of(node)
            if line not in added or _norm(cpp.text_of(node)) in base_lines:
                continue
            yield _fnuz_finding(f.path, line, name, cpp.text_of(node))


def _python_fnuz_by_arch(tree: ast.Module) -> Iterator[tuple[ast.stmt, str, ast.AST]]:
    arch_nodes = {id(n) for n, _ in _arch_comparisons(tree)}

    def arch_cond(expr: ast.AST) -> bool:
        text = ast.unparse(expr)
        return any(id(n) in arch_nodes for n in walk(expr)) and not DTYPE_CHECK.search(text)

    for node in index_of(tree).of_type((ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.If)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id if isinstance(t, ast.Name) else t.attr for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
            fnuz = [n for n in names if FNUZ_NAME.search(n)]
            if fnuz and node.value is not None and arch_cond(node.value) and _is_boolean(node.value):
                yield node, fnuz[0], node.value
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and FNUZ_NAME.search(node.name):
            for ret in walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None and arch_cond(ret.value) and _is_boolean(ret.value):
                    yield ret, node.name, ret.value
        elif isinstance(node, ast.If) and arch_cond(node.test):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, bool):
                    for t in stmt.targets:
                        if isinstance(t, (ast.Name, ast.Attribute)) and FNUZ_NAME.search(getattr(t, "id", "") or getattr(t, "attr", "")):
                            yield node, ast.unparse(t), node.test


def _is_boolean(expr: ast.AST) -> bool:
    """A predicate (comparison / boolean combination), not a dtype chosen by arch (conversion is fine)."""
    return isinstance(expr, (ast.Compare, ast.BoolOp, ast.UnaryOp)) or (
        isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("startswith", "endswith"))


def _cpp_fnuz_by_arch(tree, lines: set[int]) -> Iterator[tuple[object, str]]:
    for node in cpp.nodes_on_lines(tree.root_node, lines, ("init_declarator", "assignment_expression")):
        if node.type == "init_declarator":
            name = cpp.text_of(node.child_by_field_name("declarator"))
            value = node.child_by_field_name("value")
        elif node.type == "assignment_expression":
            name = cpp.text_of(node.child_by_field_name("left"))
            value = node.child_by_field_name("right")
        else:
            continue
        if value is None or not FNUZ_NAME.search(name):
            continue
        vtext = cpp.text_of(value)
        if DTYPE_CHECK.search(vtext) or "?" in vtext:
            continue
        if any(s for s, _ in _cpp_arch_strings_in(value)) and value.type in ("binary_expression", "parenthesized_expression", "call_expression", "unary_expression"):
            yield node, name


def _cpp_arch_strings_in(node) -> Iterator[tuple[object, str]]:
    for n in cpp.walk(node):
        if n.type == "string_literal":
            value = cpp.string_value(n)
            if value and re.match(r"^gfx[0-9]{2,4}", value):
                yield n, value


def _fnuz_finding(path: str, line: int, name: str, cond: str) -> Finding:
    return Finding(
        rule="fnuz-by-arch-name", path=path, line=line,
        problem=f"`{name}` decides whether fp8 data is fnuz from the arch name (`{one_line(cond, 80)}`) at {path}:{line}.",
        impact=("fnuz-ness is a property of the tensor, not of the GPU: gfx942 can hold OCP e4m3fn tensors "
                "(checkpoints, another kernel's output) and gfx950 can be handed fnuz data, so the flag is wrong "
                "for those inputs and their values are read with the wrong exponent bias (off by 2x, NaN on 0x80)."),
        action=("Author must test the dtype (`x.dtype == torch.float8_e4m3fnuz`) when inspecting data; gate only the "
                "conversion target by arch."),
        trigger="an e4m3fn tensor reaching this code on the arch the check names (or fnuz data on another arch)",
        tag="verified",
        evidence=[Evidence(path, line, one_line(cond, 120))],
    )


# =============================================================================================
# C2 — fp8 max (240 / 448 / 57344) hard-coded on a path that handles several fp8 flavours

FP8_MAX = {240.0: "e4m3fnuz", 448.0: "e4m3fn (OCP)", 57344.0: "e5m2"}
NOT_A_MAX = lazy_re(r"dim|size|rank|nope|rope|len|tile|block|num|head|width|chunk|(^|_)cu|count|pad|off|"
                       r"stride|byte|idx|index|seq|batch|token|lds|smem|shape|col|row|lane|warp|thread|persist|"
                       r"base|addr|elem", re.IGNORECASE)
MAX_NAME = lazy_re(r"max|fp8|e4m3|e5m2|fnuz|qmax|finfo|clip|clamp|bound|range|limit|scale|amax", re.IGNORECASE)


def _impact_c2(value: float) -> tuple[str, str]:
    if value == 448.0:
        return (("On gfx942 (MI300) aiter's fp8 is e4m3fnuz, whose max is 240: a scale derived from 448 maps the "
                 "largest |x| to 448, beyond the fnuz range, so the top 1.87x of the range saturates (or becomes NaN)."),
                ("gfx942, where the fp8 tensor is e4m3fnuz (max 240): amax/448 under-scales by 1.87x and the "
                 "largest values overflow the fnuz range"))
    if value == 240.0:
        return (("On gfx950 (MI350) and newer aiter's fp8 is OCP e4m3fn, whose max is 448: clamping/scaling to 240 "
                 "throws away 1.87x of the range (about one bit of precision) and disagrees with scales other "
                 "kernels compute from the real dtype max."),
                "gfx950, where the fp8 tensor is OCP e4m3fn (max 448): scaling to 240 uses only 54% of the range")
    return (("57344 is the e5m2 max; on a path that also carries e4m3 data (max 448 / 240) the bound is off by two "
             "orders of magnitude."), "an e4m3 tensor on this path: 57344 is 128x its max")


def _python_literal_value(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        v = abs(float(node.value))
        return v if v in FP8_MAX else None
    return None


def _python_max_context(node: ast.Constant, parents: dict) -> str | None:
    """Why this literal reads as an fp8 max (a name, a division of an amax, a clamp), or None."""
    child, parent = node, parents.get(node)
    if isinstance(parent, ast.UnaryOp):
        child, parent = parent, parents.get(parent)
    is_float = isinstance(node.value, float)
    reason = None
    steps = 0
    while parent is not None and steps < 4:
        steps += 1
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            names = [getattr(t, "id", "") or getattr(t, "attr", "") for t in targets]
            strong = any(STRONG_MAX_NAME.search(n) for n in names if n)
            if any(NOT_A_MAX.search(n) for n in names if n) and not strong:
                return None
            if strong or (is_float and any(MAX_NAME.search(n) for n in names if n)):
                return f"assigned to `{names[0]}`"
            break
        if isinstance(parent, ast.keyword):
            if parent.arg and NOT_A_MAX.search(parent.arg) and not STRONG_MAX_NAME.search(parent.arg):
                return None
            if parent.arg and (STRONG_MAX_NAME.search(parent.arg) or (is_float and MAX_NAME.search(parent.arg))):
                return f"passed as `{parent.arg}=`"
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Div, ast.Mult)):
            other = parent.left if parent.right is child else parent.right
            text = ast.unparse(other)
            if re.search(r"amax|absmax|max|scale", text, re.IGNORECASE):
                reason = f"scales `{one_line(text, 40)}`"
        if isinstance(parent, ast.Call):
            fname = dotted_name(parent.func).rsplit(".", 1)[-1]
            if re.search(r"clamp|clip|minimum|maximum|^min$|^max$|fmed3", fname):
                return f"bounds `{fname}(...)`"
            if fname in ("range", "zeros", "empty", "ones", "full", "arange", "view", "reshape"):
                return None
        if isinstance(parent, (ast.Subscript, ast.Slice)):
            return None
        if isinstance(parent, ast.stmt):
            break
        child, parent = parent, parents.get(parent)
    if reason:
        return reason
    return "a float literal with an fp8 max value" if is_float else None


def _python_flavour_guard(node: ast.AST, parents: dict) -> str | None:
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.IfExp) and child is not parent.test:
            return f"selected by `{one_line(ast.unparse(parent.test), 50)}`"
        if isinstance(parent, (ast.If, ast.While)) and child is not parent.test and FLAVOUR.search(ast.unparse(parent.test)):
            return f"inside `if {one_line(ast.unparse(parent.test), 50)}`"
        if isinstance(parent, ast.Dict):
            return "an entry of a per-dtype table"
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and FLAVOUR_NAME.search(parent.name):
            return f"inside `{parent.name}`"
        child = parent
    return None


def _both_flavours(scope: ast.AST) -> bool:
    """The scope names both e4m3 maxima: it distinguishes the flavours itself."""
    values = {_python_literal_value(n) for n in walk(scope)}
    return 240.0 in values and 448.0 in values


@record
class _Site:
    line: int
    value: float
    text: str
    context: str
    where: str


@detector("fp8-max-hardcoded")
def fp8_max_hardcoded(review: ReviewInput) -> Iterable[Finding]:
    for f in _runtime_files(review, "python", FP8_TOKEN):
        tree = review.source.python(f.path)
        if tree is None or FLAVOUR_NAME.search(f.path.rsplit("/", 1)[-1]):
            continue
        base = review.base_python(f)
        base_texts = {_norm(ast.unparse(n)) for n in index_of(base).of_type(ast.stmt)} if base else set()
        parents = index_of(tree).parents
        added = f.added_lines
        docs = _docstrings(tree)
        for node in index_of(tree).of_type(ast.Constant):
            value = _python_literal_value(node)
            if value is None or id(node) in docs or node.lineno not in added:
                continue
            context = _python_max_context(node, parents)
            if context is None or _python_flavour_guard(node, parents):
                continue
            func = _enclosing_function(node, parents)
            if _both_flavours(func or tree):
                continue
            if func is not None and _matches_fixed_flavour(ast.unparse(func), value):
                continue  # the function converts to the one fp8 dtype this bound belongs to
            stmt = _statement(node, parents)
            if _norm(ast.unparse(stmt)) in base_texts:
                continue  # the same statement was already on the base side (moved or re-indented)
            yield _fp8_finding(f.path, _Site(node.lineno, value, ast.unparse(stmt), context,
                                             f"`{func.name}`" if func else "module level"))
    for f in _runtime_files(review, "cpp", FP8_TOKEN):
        if FLAVOUR_NAME.search(f.path.rsplit("/", 1)[-1]):
            continue
        text = review.source.text(f.path)
        if text is None:
            continue
        base_text = review.base_text(f, "")
        base_lines = {_norm(x) for x in (base_text or "").splitlines()}
        lines = text.splitlines()
        added = f.added_lines
        tree = cpp.parse(text)
        for node in cpp.nodes_on_lines(tree.root_node, added, ("number_literal",)):
            value = cpp.number_value(node)
            if value is None or value not in FP8_MAX:
                continue
            line = cpp.line_of(node)
            if _norm(lines[line - 1]) in base_lines:
                continue
            context = _cpp_max_context(node)
            if context is None or _cpp_flavour_guard(node):
                continue
            func = cpp.enclosing_function(node)
            scope = cpp.text_of(func) if func is not None else text
            if E4M3_FNUZ_MAX.search(scope) and E4M3_OCP_MAX.search(scope):
                continue  # the scope names both e4m3 maxima: it distinguishes the flavours itself
            if func is not None and _matches_fixed_flavour(scope, value):
                continue  # the function converts to the one fp8 dtype this bound belongs to
            names = cpp.enclosing_names(node)
            yield _fp8_finding(f.path, _Site(line, value, lines[line - 1], context,
                                             f"`{names[0]}`" if names else "file scope"))


FIXED_FLAVOUR = {
    # `hip_fp8`: the hip_float8.h struct aiter and vLLM carry, e4m3 with negative-zero NaN, i.e. fnuz
    240.0: lazy_re(r"e4m3_?fnuz|\bhip_fp8\b", re.IGNORECASE),
    # e8m0 block scales are the MX format, whose fp8 elements are OCP e4m3 by its spec
    448.0: lazy_re(r"e4m3_?fn(?!uz)|\bocp\b|__hip_fp8_e4m3(?!_fnuz)|e8m0", re.IGNORECASE),
    57344.0: lazy_re(r"e5m2|bf8", re.IGNORECASE),  # AMD names e5m2 bf8; its max is 57344 in both flavours
}


def _matches_fixed_flavour(scope: str, value: float) -> bool:
    """The scope names exactly the fp8 flavour whose max `value` is, and not the other e4m3 one."""
    other = {240.0: 448.0, 448.0: 240.0}.get(value)
    return bool(FIXED_FLAVOUR[value].search(scope)) and not (other and FIXED_FLAVOUR[other].search(scope))


def _statement(node: ast.AST, parents: dict) -> ast.AST:
    while node in parents and not isinstance(node, ast.stmt):
        node = parents[node]
    return node


def _fp8_finding(path: str, site: _Site) -> Finding:
    impact, trigger = _impact_c2(site.value)
    shown = int(site.value) if site.value.is_integer() else site.value
    return Finding(
        rule="fp8-max-hardcoded", path=path, line=site.line,
        problem=(f"fp8 max {shown} (the {FP8_MAX[site.value]} bound) hard-coded in {site.where} at {path}:{site.line} "
                 f"— {site.context} — with no dtype or arch guard around it: `{one_line(site.text, 80)}`."),
        impact=impact,
        action=("Author must derive the bound from the tensor's dtype (`torch.finfo(dtype).max`, aiter's "
                "`get_dtype_max(dtype)`, `opus::finfo<T>::max()`), or guard this path to the single fp8 flavour it "
                "is correct for."),
        trigger=trigger, tag="verified",
        evidence=[Evidence(path, site.line, one_line(site.text, 120))],
    )


E4M3_FNUZ_MAX = lazy_re(r"(?<![\w.])240(\.0*)?f?(?![\w.])")
E4M3_OCP_MAX = lazy_re(r"(?<![\w.])448(\.0*)?f?(?![\w.])")
INTEGRAL_TYPE = lazy_re(r"\b(u?int(8|16|32|64)?(_t)?|index_t|size_t|unsigned|long|short|char|bool|auto)\b")
STRONG_MAX_NAME = lazy_re(r"max|fp8|e4m3|e5m2|fnuz|finfo|amax", re.IGNORECASE)


def _cpp_max_context(node) -> str | None:
    is_float = cpp.is_float_literal(node)
    parent = node.parent
    child = node
    reason = None
    for _ in range(5):
        if parent is None:
            break
        if parent.type in ("unary_expression", "parenthesized_expression", "cast_expression"):
            child, parent = parent, parent.parent
            continue
        if parent.type in ("init_declarator", "assignment_expression", "field_declaration"):
            target = parent.child_by_field_name("declarator") or parent.child_by_field_name("left")
            name = cpp.text_of(target)
            declaration = parent.parent if parent.type == "init_declarator" else parent
            declared = cpp.text_of(declaration.child_by_field_name("type")) if declaration is not None else ""
            if INTEGRAL_TYPE.search(declared) and not is_float:
                return None  # an integer constant (a size, an offset), not a float bound
            if NOT_A_MAX.search(name) and not STRONG_MAX_NAME.search(name):
                return None
            if STRONG_MAX_NAME.search(name) or (is_float and MAX_NAME.search(name)):
                return f"assigned to `{name}`"
            break
        if parent.type == "binary_expression":
            op = cpp.text_of(parent.child_by_field_name("operator"))
            other = parent.child_by_field_name("left") if parent.child_by_field_name("right") == child \
                else parent.child_by_field_name("right")
            if op in ("/", "*") and re.search(r"amax|absmax|max|scale", cpp.text_of(other), re.IGNORECASE):
                reason = f"scales `{one_line(cpp.text_of(other), 40)}`"
        if parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call_expression":
            fn = cpp.text_of(parent.parent.child_by_field_name("function"))
            if re.search(r"clamp|clip|min|max|fmed3|med3", fn.rsplit("::", 1)[-1], re.IGNORECASE):
                return f"bounds `{one_line(fn, 40)}(...)`"
            break
        if parent.type in ("template_argument_list", "subscript_expression", "array_declarator", "case_statement",
                           "subscript_argument_list", "enumerator", "preproc_arg"):
            return None
        if parent.type.endswith("_statement") or parent.type in ("declaration", "compound_statement"):
            break
        child, parent = parent, parent.parent
    if reason:
        return reason
    return "a float literal with an fp8 max value" if is_float else None


def _cpp_flavour_guard(node) -> str | None:
    for kind, cond in cpp.guards(node):
        if kind in ("ternary", "case", "specialization"):
            return f"{kind} `{one_line(cond, 50)}`"
        if FLAVOUR.search(cond):
            return f"{kind} `{one_line(cond, 50)}`"
    for name in cpp.enclosing_names(node):
        if FLAVOUR_NAME.search(name):
            return f"inside `{name}`"
    return None


# =============================================================================================
# C3 — a fixed dtype in a path that otherwise follows its inputs' dtype

PY_FIXED_DTYPES = {
    "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "float8_e8m0fnu": "fp8_e8m0", "fp8_e8m0": "fp8_e8m0", "float8_e4m3fn": "fp8 e4m3fn",
    "float8_e4m3fnuz": "fp8 e4m3fnuz", "float8_e5m2": "fp8 e5m2", "float8_e5m2fnuz": "fp8 e5m2fnuz",
}
DTYPE_MODULES = {"torch", "dtypes", "aiter.dtypes", "aiter.utility.dtypes"}
DTYPE_SINKS = ("to", "type")  # not `.view(dtype)`: that reinterprets bits of packed data, it converts nothing


def _fixed_dtype(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        name = dotted_name(node)
        head, _, tail = name.rpartition(".")
        if head in DTYPE_MODULES and tail in PY_FIXED_DTYPES:
            return name
    return None


def _dtype_use(node: ast.AST, parents: dict) -> str | None:
    """How a fixed dtype is used: `dtype=` of an allocation, `.to(...)`, `.view(...)`, or bound to a
    `*dtype` name. None for comparisons, defaults of parameters and anything else."""
    parent = parents.get(node)
    if isinstance(parent, ast.keyword) and parent.arg in ("dtype", "out_dtype"):
        return f"`{parent.arg}=`"
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr in DTYPE_SINKS \
            and node in parent.args:
        return f"`.{parent.func.attr}(...)`"
    if isinstance(parent, ast.Assign) and any(isinstance(t, ast.Name) and t.id.lower().endswith("dtype") for t in parent.targets):
        return f"`{next(t.id for t in parent.targets if isinstance(t, ast.Name))} =`"
    return None


def _dtype_guarded(node: ast.AST, parents: dict, stop: ast.AST | None) -> bool:
    child = node
    while child in parents:
        parent = parents[child]
        if parent is stop:
            return False
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test \
                and re.search(r"dtype|fp8|bf16|fp16|float8|bfloat16|float16|quant|is_|use_|arch|gfx", ast.unparse(parent.test)):
            return True
        if isinstance(parent, ast.Dict):
            return True
        child = parent
    return False


def _follows_input_dtype(func: ast.FunctionDef) -> str | None:
    """Evidence the function handles more than one dtype: a `*dtype*` parameter or a read of
    some tensor's `.dtype`."""
    for arg in func.args.args + func.args.kwonlyargs:
        if "dtype" in arg.arg.lower():
            return f"parameter `{arg.arg}`"
    for n in walk(func):
        if isinstance(n, ast.Attribute) and n.attr == "dtype" and isinstance(n.ctx, ast.Load) \
                and dotted_name(n) not in ("torch.dtype", "np.dtype", "numpy.dtype"):
            return f"reads `{one_line(ast.unparse(n), 40)}`"
    return None


# Construction and weight handling fix parameter dtypes by design; the rule is about forward paths.
NOT_FORWARD = lazy_re(r"^__\w+__$|weight|load|init|create|setup|build|register|^test_|_ref$|reference", re.IGNORECASE)


def _label(name: str) -> str:
    """`torch.bfloat16` / `dtypes.bf16` → `bf16`: one spelling per dtype."""
    return PY_FIXED_DTYPES.get(name.rsplit(".", 1)[-1], name)


def _pinned(func: ast.AST, label: str) -> bool:
    """`x.dtype != torch.bfloat16 → raise` / `assert x.dtype == dtypes.bf16`: the path is pinned to
    that dtype by contract."""
    for n in walk(func):
        if isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
            has_dtype = any(isinstance(o, ast.Attribute) and o.attr == "dtype" for o in operands)
            fixed = {_label(name) for o in operands for x in walk(o) if (name := _fixed_dtype(x))}
            if has_dtype and label in fixed:
                return True
    return False


def _function_dtypes(tree: ast.Module | None) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Per function name on one side: the fixed dtypes it names, and its evidence of following
    the input dtype."""
    out: dict[str, set[str]] = {}
    follows: dict[str, str] = {}
    if tree is None:
        return out, follows
    for func in index_of(tree).of_type((ast.FunctionDef, ast.AsyncFunctionDef)):
        out.setdefault(func.name, set()).update(
            _label(name) for n in walk(func) if (name := _fixed_dtype(n) or ""))
        why = _follows_input_dtype(func)
        if why:
            follows.setdefault(func.name, why)
    return out, follows


DTYPE_TOKEN = lazy_re(r"bfloat16|bf16|float16|half|fp16|float8_|fp8_e8m0")


@detector("dtype-hardcoded")
def dtype_hardcoded(review: ReviewInput) -> Iterable[Finding]:
    for f in _runtime_files(review, "python", DTYPE_TOKEN):
        tree = review.source.python(f.path)
        if tree is None:
            continue
        base = review.base_python(f)
        base_dtypes: tuple[dict[str, set[str]], dict[str, str]] | None = None  # read on first need
        added = f.added_lines
        reported: set[tuple[str, str]] = set()
        for node in index_of(tree).of_type(ast.Attribute):
            name = _fixed_dtype(node)
            if name is None or node.lineno not in added:
                continue
            parents = index_of(tree).parents
            use = _dtype_use(node, parents)
            func = _enclosing_function(node, parents)
            if use is None or func is None or FLAVOUR_NAME.search(func.name) or NOT_FORWARD.search(func.name):
                continue
            short = name.rsplit(".", 1)[-1]
            label = PY_FIXED_DTYPES[short]
            if base_dtypes is None:
                base_dtypes = _function_dtypes(base)
            base_funcs, base_follows = base_dtypes
            if label in base_funcs.get(func.name, set()):
                continue  # the same hardcode already existed on this path
            if _pinned(func, label):
                continue  # the function checks its inputs against this very dtype: one-dtype path by contract
            stmt_text = ast.unparse(_statement(node, parents))
            if label == "fp8_e8m0" and re.search(r"mx|microscal", stmt_text + func.name, re.IGNORECASE):
                continue  # MX block scales are E8M0 by definition
            follows = _follows_input_dtype(func)
            if follows is None and func.name in base_follows:
                follows = f"the base version {base_follows[func.name]}"
            if follows is None or _dtype_guarded(node, parents, func):
                continue
            if (func.name, label) in reported:
                continue
            reported.add((func.name, label))
            yield _dtype_finding(f.path, node.lineno, name, PY_FIXED_DTYPES[short], use, func.name, follows,  # type: ignore[attr-defined]
                                 ast.unparse(_statement(node, parents)))
    yield from _dtype_hardcoded_cpp(review)


CPP_FIXED = lazy_re(r"\b(?:torch|at|c10)::(?:ScalarType::)?k?(BFloat16|Half|Float8_e4m3fnuz|Float8_e4m3fn|"
                       r"Float8_e5m2|Float8_e8m0fnu)\b")
CPP_FOLLOWS = lazy_re(r"\.(scalar_type|dtype)\(\)")


def _dtype_hardcoded_cpp(review: ReviewInput) -> Iterable[Finding]:
    for f in _runtime_files(review, "cpp", CPP_FIXED):
        text = review.source.text(f.path)
        if text is None:
            continue
        base_text = review.base_text(f)
        base_funcs: dict[str, set[str]] | None = None
        added = f.added_lines
        tree = cpp.parse(text)
        reported: set[tuple[str, str]] = set()
        for node in cpp.nodes_on_lines(tree.root_node, added, ("qualified_identifier",)):
            if node.parent is None or node.parent.type == "qualified_identifier":
                continue
            match = CPP_FIXED.fullmatch(cpp.text_of(node))
            line = cpp.line_of(node)
            if match is None or line not in added:
                continue
            kind = match.group(1)
            use = _cpp_dtype_use(node)
            func = cpp.enclosing_function(node)
            if use is None or func is None:
                continue
            fname = cpp.function_name(func)
            if base_funcs is None:
                base_funcs = _cpp_function_dtypes(base_text)
            if kind in base_funcs.get(fname, set()) or FLAVOUR_NAME.search(fname):
                continue
            body = cpp.text_of(func)
            follows = CPP_FOLLOWS.search(body)
            if follows is None:
                continue
            if any(k in ("if", "if constexpr", "ternary", "case") and re.search(r"dtype|scalar_type|Float8|BFloat16|Half|fp8|bf16", c)
                   for k, c in cpp.guards(node, stop=func)):
                continue
            if (fname, kind) in reported:
                continue
            reported.add((fname, kind))
            label = {"BFloat16": "bf16", "Half": "fp16"}.get(kind, kind)
            yield _dtype_finding(f.path, line, cpp.text_of(node), label, use, fname,
                                 f"reads `{follows.group(0)}`", cpp.text_of(_cpp_statement(node)))


def _cpp_function_dtypes(text: str | None) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    if not text:
        return out
    for func in cpp.nodes_of_type(cpp.parse(text), "function_definition"):  # the tree's one shared walk
        out.setdefault(cpp.function_name(func), set()).update(CPP_FIXED.findall(cpp.text_of(func)))
    return out


def _cpp_dtype_use(node) -> str | None:
    for a in cpp.ancestors(node):
        if a.type == "binary_expression":
            op = cpp.text_of(a.child_by_field_name("operator"))
            if op in ("==", "!="):
                return None
        if a.type == "call_expression":
            fn = cpp.text_of(a.child_by_field_name("function"))
            tail = re.split(r"\.|->|::", fn)[-1]
            if tail in ("dtype", "to", "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "options"):
                return f"`{tail}(...)`"
            if re.search(r"CHECK|assert|check", fn):
                return None
        if a.type in ("expression_statement", "declaration", "return_statement", "compound_statement"):
            return None
    return None


def _dtype_finding(path: str, line: int, name: str, label: str, use: str, func: str, follows: str, stmt: str) -> Finding:
    return Finding(
        rule="dtype-hardcoded", path=path, line=line,
        problem=(f"`{name}` is hard-coded ({use}) in `{func}` at {path}:{line}, a path that otherwise follows its "
                 f"inputs' dtype ({follows}): `{one_line(stmt, 80)}`."),
        impact=(f"Callers that run this path with another dtype (fp16 vs bf16, an fp8 flavour, a different scale "
                f"format) get a {label} tensor regardless: a silent cast, a dtype mismatch in the next kernel, or a "
                "wrong result on the configurations nobody tested."),
        action=f"Author must derive the dtype from the input tensor or config instead of fixing it to {label}, or "
               "assert the single dtype this path supports.",
        tag="inferred",
        evidence=[Evidence(path, line, one_line(stmt, 120))],
    )
