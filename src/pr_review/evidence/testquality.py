"""test_quality: what the PR's added tests check — assertions, tolerances, shapes, self-comparison.

Read with `ast` on the head side (and the base side, to see a tolerance loosened). Per touched test
file: the test functions the PR adds or edits, the assertion primitives they reach (directly or
through a helper of the same file that asserts), their atol/rtol, and the shape values they exercise
(M/N/K, tokens, batch, heads). A test that can never fail — no assertion reachable at all, or a
comparison of a value with itself / with the kernel under test — is recorded for the finding; the
rest are facts for the reviewer.
"""
from __future__ import annotations

import ast
import re

from ..detectors.base import ReviewInput
from ..lang.index import index_of
from ..lang.python import dotted_name, walk
from ..lang.regex import lazy_re
from . import Artifact, collector
from ._util import is_test_file, short
from ..model import field, record

ASSERT_CALLS = {
    "assert_close", "assert_allclose", "assert_equal", "assert_array_equal", "assert_array_almost_equal",
    "assert_almost_equal", "checkAllclose", "check_allclose", "assertAllClose", "raises", "approx", "fail",
    "assert_verify", "assert_has_calls", "assert_called", "assert_called_once", "assert_called_with",
    "assert_called_once_with", "assert_not_called", "assert_any_call",
    "opcheck", "gradcheck", "gradgradcheck",  # torch.library.opcheck / torch.autograd.gradcheck raise on a failure
}
ASSERT_PREFIX = lazy_re(r"^(assert|check|verify|validate|compare|expect|ensure)", re.IGNORECASE)
COMPARE_CALLS = {"assert_close", "assert_allclose", "allclose", "isclose", "checkAllclose", "check_allclose",
                 "assert_equal", "assert_array_equal", "equal", "assertEqual", "assertAllClose"}
DETERMINISM = lazy_re(r"determin|invarian|consisten|reproduc|idempot|stable|same_result|repeat|twice|cache|"
                         r"shared|across|reuse|memo|equivalen|symmetr|commut",
                         re.IGNORECASE)
SHAPE_NAMES = {
    "m": "M", "n": "N", "k": "K", "batch": "batch", "batch_size": "batch", "bs": "batch", "b": "batch",
    "num_tokens": "tokens", "tokens": "tokens", "token_num": "tokens", "ntokens": "tokens", "seqlen": "seqlen",
    "seq_len": "seqlen", "seqlens": "seqlen", "ctx_len": "seqlen", "num_heads": "heads", "nhead": "heads",
    "nheads": "heads", "heads": "heads", "head_num": "heads", "num_q_heads": "heads", "num_heads_q": "heads",
    "h": "heads", "hq": "heads",
}
NO_RAISE_TEST = lazy_re(r"accept|smoke|noop|no_op|tolerat|handles?_|survives?|skips?_|(^|_)empty|edge_?case|graceful|(^|_)runs?(_|$)|import|compile|no_?crash|does_?n[o']?t_?(raise|fail|crash)|"
                           r"no_?(raise|error|exception)|works|(^|_)loads?(_|$)|build|construct|(^|_)init|instantiat|"
                           r"regist|(^|_)api(_|$)|signature|callable|exists|available", re.IGNORECASE)
TOL_NAMES = lazy_re(r"^(atol|rtol|tol|tolerance|abs_tol|rel_tol|eps)$|_(atol|rtol|tol)$|^(atol|rtol)_", re.IGNORECASE)


@record
class CannotFail:
    path: str
    line: int
    function: str
    reason: str
    kind: str  # no-assertion | self-comparison


@record
class TestFileFacts:
    path: str
    new: bool
    tests: list[str] = field(default_factory=list)
    assertions: int = 0
    tolerances: list[tuple[str, float, int]] = field(default_factory=list)  # (name, value, line)
    loosened: list[str] = field(default_factory=list)
    shapes: dict[str, set[int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@record
class TestQuality:
    files: list[TestFileFacts] = field(default_factory=list)
    cannot_fail: list[CannotFail] = field(default_factory=list)


def _is_benchmark(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.startswith(("bench", "profile")) or bool(re.search(r"(^|/)(benchmarks?|op_benchmarks|perf)/", path))


def _call_name(call: ast.Call) -> str:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return ""


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.setdefault(sub.name, sub)
                    out[f"{node.name}.{sub.name}"] = sub
    return out


def _direct_checks(func: ast.AST) -> int:
    count = 0
    for node in walk(func):
        if isinstance(node, (ast.Assert, ast.Raise)):
            count += 1
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            if name in ASSERT_CALLS or name.startswith("assert"):
                count += 1
        elif isinstance(node, ast.With):
            for item in node.items:
                if isinstance(item.context_expr, ast.Call) and _call_name(item.context_expr) in ("raises", "assertRaises", "warns"):
                    count += 1
    return count


def _handed(call: ast.Call) -> set[str]:
    """Names handed to a call as a value: `mp.spawn(worker, ...)`, `Process(target=worker)`,
    `partial(worker, x)`. A function handed to a process launcher runs there, and its failed assert
    fails the join (and so the test)."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return {n.id for v in values for n in walk(v) if isinstance(n, ast.Name)}


def _reached(fn: ast.AST) -> set[str]:
    """Names a function calls or hands to a call."""
    out: set[str] = set()
    for c in walk(fn):
        if isinstance(c, ast.Call):
            out.add(_call_name(c))
            out |= _handed(c)
    return out


def _asserting_helpers(functions: dict[str, ast.AST]) -> set[str]:
    """Names of functions of this file that assert, directly or through each other (called, or handed
    to a launcher that runs them)."""
    read: dict[int, tuple[int, set[str]]] = {}  # one walk per def (a method is listed by two names)
    for fn in functions.values():
        if id(fn) not in read:
            read[id(fn)] = (_direct_checks(fn), _reached(fn))
    direct = {name for name, fn in functions.items() if read[id(fn)][0]}
    calls = {name: read[id(fn)][1] for name, fn in functions.items()}
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in direct and called & direct:
                direct.add(name)
                changed = True
    return direct


def _reaches_check(func: ast.AST, helpers: set[str], imported: set[str]) -> int:
    count = _direct_checks(func)
    for node in walk(func):
        if isinstance(node, ast.Call):
            name = _call_name(node)
            delegated = isinstance(node.func, ast.Attribute) or name in imported
            if name in helpers or (delegated and (ASSERT_PREFIX.match(name) or "test" in name.lower())):
                count += 1
            elif _handed(node) & helpers:
                count += 1  # mp.spawn(worker, ...): the worker's assert fails the spawned process, and the join
            elif name == "run" and any(k.arg == "check" for k in node.keywords):
                count += 1  # subprocess.run(..., check=True)
    return count


def _touched(func: ast.AST, added: set[int]) -> bool:
    return any(n in added for n in range(func.lineno, (func.end_lineno or func.lineno) + 1))


def _imported_names(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in index_of(tree).of_type(ast.ImportFrom):
        out.update(a.asname or a.name for a in node.names)
    return out


def _tolerances(node: ast.AST) -> list[tuple[str, float, int]]:
    out: list[tuple[str, float, int]] = []
    for sub in walk(node):
        if isinstance(sub, ast.keyword) and sub.arg and TOL_NAMES.search(sub.arg):
            value = _number(sub.value)
            if value is not None:
                out.append((sub.arg, value, sub.value.lineno))
        elif isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name) \
                and TOL_NAMES.search(sub.targets[0].id):
            value = _number(sub.value)
            if value is not None:
                out.append((sub.targets[0].id, value, sub.lineno))
    return out


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    return None


def _ints(node: ast.AST) -> list[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out: list[int] = []
        for elt in node.elts:
            out += _ints(elt)
        return out
    return []


def _shape_key(name: str) -> str | None:
    low = name.lower()
    for prefix in ("l_", "list_", "test_"):
        low = low.removeprefix(prefix)
    for suffix in ("_list", "_lst", "s_list", "_values", "_vals"):
        low = low.removesuffix(suffix)
    if low in SHAPE_NAMES:
        return SHAPE_NAMES[low]
    if low.endswith("s") and low[:-1] in SHAPE_NAMES and len(low) > 2:
        return SHAPE_NAMES[low[:-1]]
    return None


def _shapes(node: ast.AST) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}

    def add(name: str, values: list[int]) -> None:
        key = _shape_key(name)
        if key and values:
            out.setdefault(key, set()).update(values)

    for sub in walk(node):
        if isinstance(sub, ast.Call) and _call_name(sub) == "parametrize" and len(sub.args) >= 2:
            names = sub.args[0].value if isinstance(sub.args[0], ast.Constant) else ""
            if not isinstance(names, str):
                continue
            params = [p.strip() for p in names.split(",")]
            values = sub.args[1]
            if len(params) == 1:
                add(params[0], _ints(values))
            elif isinstance(values, (ast.List, ast.Tuple)):
                for row in values.elts:
                    if isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == len(params):
                        for p, v in zip(params, row.elts):
                            add(p, _ints(v))
        elif isinstance(sub, ast.Call) and _call_name(sub) == "add_argument" and sub.args \
                and isinstance(sub.args[-1], ast.Constant) and isinstance(sub.args[-1].value, str):
            default = next((k.value for k in sub.keywords if k.arg == "default"), None)
            if default is not None:  # parser.add_argument("-m", nargs="*", default=[1, 32, 128])
                add(sub.args[-1].value.lstrip("-"), _ints(default))
        elif isinstance(sub, ast.For) and isinstance(sub.target, ast.Name):
            add(sub.target.id, _ints(sub.iter))
        elif isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
            add(sub.targets[0].id, _ints(sub.value))
        elif isinstance(sub, ast.keyword) and sub.arg:
            add(sub.arg, _ints(sub.value))
    return out


ALLOCATORS = lazy_re(r"(^|\.)(zeros|ones|empty|full|zeros_like|ones_like|empty_like|full_like|rand\w*|arange|"
                        r"tensor|clone|copy|deepcopy|array|list|dict|tuple|set|range|MagicMock|Mock)$")
TEMPORAL = lazy_re(r"before|after|first|second|prev|next|old|new|again|cached|warm|cold|\d$", re.IGNORECASE)


def _self_comparison(func: ast.AST) -> str:
    """A comparison of a value with itself, or of two back-to-back results of the same call on the same inputs."""
    assigned: dict[str, tuple[str, ast.stmt]] = {}
    siblings: dict[int, tuple[list[ast.stmt], int]] = {}
    for node in walk(func):
        for field_name in ("body", "orelse", "finalbody"):
            block = getattr(node, field_name, None)
            if isinstance(block, list):
                for i, stmt in enumerate(block):
                    siblings[id(stmt)] = (block, i)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            assigned[node.targets[0].id] = (ast.unparse(node.value), node)
    for node in walk(func):
        pair: tuple[ast.AST, ast.AST] | None = None
        if isinstance(node, ast.Call) and _call_name(node) in COMPARE_CALLS and len(node.args) >= 2:
            pair = (node.args[0], node.args[1])
        elif isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                and isinstance(node.test.ops[0], ast.Eq):
            pair = (node.test.left, node.test.comparators[0])
        if pair is None:
            continue
        a, b = (ast.unparse(x) for x in pair)
        if a == b and not isinstance(pair[0], ast.Constant):
            return f"`{short(ast.unparse(node), 90)}` compares `{a}` with itself"
        if not (isinstance(pair[0], ast.Name) and isinstance(pair[1], ast.Name)):
            continue
        if TEMPORAL.search(pair[0].id) or TEMPORAL.search(pair[1].id):
            continue
        first, second = assigned.get(pair[0].id), assigned.get(pair[1].id)
        if not first or not second or first[0] != second[0]:
            continue
        call = first[1].value
        if ALLOCATORS.search(dotted_name(call.func) or _call_name(call)):  # type: ignore[attr-defined]
            continue  # two buffers allocated alike and filled by different code
        s1, s2 = siblings.get(id(first[1])), siblings.get(id(second[1]))
        if s1 and s2 and s1[0] is s2[0] and abs(s1[1] - s2[1]) == 1:
            return (f"`{pair[0].id}` and `{pair[1].id}` are both `{short(first[0], 70)}`, computed back to back: "
                    "the reference is the code under test")
    return ""


@collector("test_quality")
def collect_test_quality(review: ReviewInput) -> Artifact:
    data = TestQuality()
    for f in review.changed("python"):
        if not (is_test_file(f.path) or review.is_test(f.path)) or _is_benchmark(f.path):
            continue
        if f.path.rsplit("/", 1)[-1] in ("conftest.py", "__init__.py"):
            continue
        code = review.code.get(f.path)
        added = {n for n, _ in (code.added if code else f.added)}
        if not added:
            continue
        tree = review.source.python(f.path)
        if tree is None:
            continue
        facts = TestFileFacts(f.path, f.is_new)
        source_lines = (review.source.text(f.path) or "").splitlines()
        functions = _functions(tree)
        helpers = _asserting_helpers(functions)
        imported = _imported_names(tree)
        touched = {name: fn for name, fn in functions.items() if f.is_new or _touched(fn, added)}
        base_tree = review.base_python(f)
        base_funcs = _functions(base_tree) if base_tree is not None else {}
        seen_nodes: set[int] = set()
        for name, fn in touched.items():
            if id(fn) in seen_nodes:
                continue
            seen_nodes.add(id(fn))
            short_name = name.rsplit(".", 1)[-1]
            is_test = short_name.startswith("test")
            if is_test:
                facts.tests.append(short_name)
            facts.assertions += _direct_checks(fn)
            tols = [t for t in _tolerances(fn) if t[2] in added or f.is_new]
            facts.tolerances += tols
            if name in base_funcs and tols:
                base_max = max((v for _, v, _ in _tolerances(base_funcs[name])), default=None)
                head_max = max(v for _, v, _ in tols)
                if base_max is not None and head_max > base_max:
                    facts.loosened.append(f"{short_name}: tolerance {_fmt(base_max)} → {_fmt(head_max)} "
                                          f"(line {max(tols, key=lambda t: t[1])[2]})")
            for key, values in _shapes(fn).items():
                facts.shapes.setdefault(key, set()).update(values)
            if not is_test or fn.lineno not in added:
                continue
            if _skipped(fn):
                continue
            if not _reaches_check(fn, helpers, imported) and not NO_RAISE_TEST.search(short_name) \
                    and not _returns_result(fn) and not _says_no_raise(source_lines, fn):
                data.cannot_fail.append(CannotFail(f.path, fn.lineno, short_name,
                                                   "no assertion, no raise and no asserting helper is reachable: "
                                                   "it fails only if the code under test throws", "no-assertion"))
                continue
            same = _self_comparison(fn)
            if same and not DETERMINISM.search(short_name) and not DETERMINISM.search(ast.get_docstring(fn) or ""):
                data.cannot_fail.append(CannotFail(f.path, fn.lineno, short_name, same, "self-comparison"))
        # module-level shape tables and argparse defaults count for a new file
        if f.is_new:
            for key, values in _shapes(ast.Module(body=[s for s in tree.body if not isinstance(
                    s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))], type_ignores=[])).items():
                facts.shapes.setdefault(key, set()).update(values)
        _notes(facts)
        if facts.tests or facts.assertions or facts.tolerances or facts.shapes:
            data.files.append(facts)
    return Artifact("test_quality", _lines(data), data)


NO_RAISE_COMMENT = lazy_re(r"#.*\b(must not|should not|shouldn't|does not|doesn't|never)\b.*"
                              r"(raise|error|crash|fail|throw|hang)|#.*\bno (error|exception|crash)", re.IGNORECASE)


def _says_no_raise(lines: list[str], fn: ast.AST) -> bool:
    """A comment in the test says its point is that the call does not raise (`# must not IndexError`)."""
    body = lines[fn.lineno - 1:(fn.end_lineno or fn.lineno)]
    return any(NO_RAISE_COMMENT.search(line) for line in body) or \
        bool(NO_RAISE_COMMENT.search("# " + (ast.get_docstring(fn) or "")))  # type: ignore[arg-type]


def _returns_result(fn: ast.AST) -> bool:
    """A script-style test that reports pass/fail through its return value (a count, a bool, a metrics dict)."""
    return any(isinstance(n, ast.Return) and n.value is not None
               and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in walk(fn))


def _skipped(fn: ast.AST) -> bool:
    for dec in getattr(fn, "decorator_list", []):
        text = ast.unparse(dec)
        if re.search(r"\bskip\b|\bxfail\b|benchmark", text):
            return True
    return False


def _fmt(value: float) -> str:
    return f"{value:g}"


def _notes(facts: TestFileFacts) -> None:
    m = facts.shapes.get("M") or facts.shapes.get("tokens")
    if m and max(m) <= 16:
        facts.notes.append(f"covers only M/tokens ≤ 16 ({', '.join(map(str, sorted(m)))}): decode-size toy shapes")
    heads = facts.shapes.get("heads")
    if heads and len(heads) == 1:
        facts.notes.append(f"one head count only (H={next(iter(heads))}): TP-split head counts are not exercised")
    if facts.tolerances and max(v for _, v, _ in facts.tolerances) >= 0.1:
        worst = max(facts.tolerances, key=lambda t: t[1])
        facts.notes.append(f"loose tolerance {worst[0]}={_fmt(worst[1])} (line {worst[2]})")


def _lines(data: TestQuality) -> list[str]:
    if not data.files and not data.cannot_fail:
        return ["The PR adds or edits no test function (benchmarks and conftest excluded)."]
    out: list[str] = []
    for facts in data.files:
        head = f"{facts.path} ({'new file' if facts.new else 'modified'}): "
        parts = [f"{len(facts.tests)} test function(s)" + (f" [{', '.join(facts.tests[:6])}"
                                                            + (", …" if len(facts.tests) > 6 else "") + "]"
                                                            if facts.tests else ""),
                 f"{facts.assertions} assertion primitive(s)"]
        if facts.tolerances:
            vals = sorted({f"{n}={_fmt(v)}" for n, v, _ in facts.tolerances})
            parts.append("tolerances " + ", ".join(vals[:6]) + (" …" if len(vals) > 6 else ""))
        if facts.shapes:
            parts.append("shapes " + "; ".join(f"{k}∈{{{', '.join(map(str, sorted(v)[:8]))}"
                                              + (", …" if len(v) > 8 else "") + "}" for k, v in sorted(facts.shapes.items())))
        out.append(head + "; ".join(parts))
        out.extend(f"  note: {n}" for n in facts.notes)
        out.extend(f"  loosened: {item}" for item in facts.loosened)
    for item in data.cannot_fail:
        out.append(f"CANNOT FAIL: {item.path}:{item.line} {item.function} — {item.reason}")
    return out
