"""Dispatch rules decided from Python/Triton syntax: which branch an input really reaches.

- string-dispatch-unnormalized (B3 aiter): a new raw string comparison of a dispatch variable that the
  same file also compares with an enum member or with an alias spelling of the same string.
- phase-size-proxy (B2 ATOM): decode vs prefill decided from a size (`max_q == 1`, `q.shape[0] == 1`).
- cudagraph-capture-break (B3 ATOM): host syncs, tensor-valued branches or host-built tensors added to a
  forward path that runs under graph capture.
- constexpr-check-disabled (B5 aiter / B4 ATOM): a new `tl.constexpr` flag that switches a bounds or
  sentinel check off, with a caller that can pass False and no stated invariant.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from ..git.diff import ChangedFile
from ..lang.index import index_of
from ..lang.python import (
    FUNCTION_TYPES, comments, decorator_name, dotted_name, innermost_function, qualified_functions, walk
)
from ..lang.regex import lazy_re
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput

Func = ast.FunctionDef | ast.AsyncFunctionDef


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _compare_texts(tree: ast.AST | None) -> set[str]:
    """Every comparison of a (base) tree, normalised, to tell a moved or re-indented one from a new one."""
    return {_flat(ast.unparse(n)) for n in index_of(tree).of_type(ast.Compare)} if tree is not None else set()


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Func | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, FUNCTION_TYPES):
            return node
    return None


# --------------------------------------------------------------------------------------------
# string-dispatch-unnormalized
# --------------------------------------------------------------------------------------------

DISPATCH_NAME = lazy_re(r"(type|mode|kind|backend|dtype|layout|quant\w*|arch|impl|method|format|variant|"
                           r"activation|act|policy|strategy|scheme|algo\w*|kernel|provider|recipe|granularity)$",
                           re.IGNORECASE)
NORMALIZERS = {"lower", "upper", "casefold", "strip", "replace", "lstrip", "rstrip", "removeprefix", "removesuffix"}
ENUM_OWNER = lazy_re(r"^[A-Z][A-Za-z0-9]*$")


def _canon(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _tokens(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def _aliases(a: str, b: str) -> bool:
    """Two spellings of one value: `per_token` / `per-token` / `PerToken` / `per token`. A qualifier word
    (`prefill_single_node` vs `single_node`) or a different word (`bfloat16` / `float16`) names a different
    value, so it is not an alias."""
    if a == b:
        return False
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return False
    return "".join(ta) == "".join(tb)


def _abbreviates(a: str, b: str) -> bool:
    """`bf16` is `bfloat16` with letters dropped (a subsequence)."""
    short, long = sorted((_canon(a), _canon(b)), key=len)
    it = iter(long)
    return len(short) >= 2 and short != long and all(ch in it for ch in short)


def _string_compares(tree: ast.AST) -> Iterable[tuple[ast.Compare, str, list[str]]]:
    """(compare, variable text, literals) for `var ==/!=/in/not in "literal"(s)`, either operand order."""
    for node in index_of(tree).of_type(ast.Compare):
        if len(node.ops) != 1:
            continue
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if isinstance(op, (ast.Eq, ast.NotEq)):
            if isinstance(left, ast.Constant) and isinstance(left.value, str):
                left, right = right, left
            if isinstance(right, ast.Constant) and isinstance(right.value, str):
                var = dotted_name(left)
                if var:
                    yield node, var, [right.value]
        elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            lits = [e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            var = dotted_name(left)
            if var and lits and len(lits) == len(right.elts):
                yield node, var, lits


def _enum_compares(tree: ast.AST) -> dict[str, list[tuple[int, str]]]:
    """Per variable text, the lines where it is compared with `Enum.member` (or isinstance-checked)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for node in index_of(tree).of_type(ast.Compare):
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            for var_node, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                var = dotted_name(var_node)
                member = dotted_name(other)
                parts = member.split(".")
                if var and len(parts) >= 2 and ENUM_OWNER.match(parts[-2]) and not parts[-2].isupper() \
                        and parts[-2] not in ("torch", "dtypes", "tl"):
                    out.setdefault(var, []).append((node.lineno, member))
    return out


def _normalized_before(func: ast.AST | None, var: str, line: int) -> bool:
    """`var` is re-bound from a normalising expression (lower/upper/enum ctor/mapping) before `line`."""
    if func is None:
        return False
    for node in walk(func):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.lineno >= line or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(dotted_name(t) == var for t in targets):
            continue
        if _normalizing(node.value):
            return True
    return False


def _normalizing(value: ast.AST) -> bool:
    """An expression that normalises a spelling: lower/upper/strip, an enum constructor, a parse or
    normalise helper, a mapping look-up."""
    for sub in walk(value):
        if isinstance(sub, ast.Call):
            callee = dotted_name(sub.func)
            leaf = callee.rsplit(".", 1)[-1]
            if isinstance(sub.func, ast.Attribute) and sub.func.attr in NORMALIZERS | {"get", "value", "name"}:
                return True
            if leaf and ENUM_OWNER.match(leaf) and not leaf.isupper():
                return True  # SomeEnum(x) / parse helper
            if re.search(r"normali[sz]e|canonical|parse|resolve|to_enum|from_str", leaf, re.IGNORECASE):
                return True
        if isinstance(sub, ast.Subscript):
            return True  # MAPPING[x]
    return False


def _normalized_by_callers(tree: ast.Module, func: ast.AST | None, var: str, literals: list[str]) -> bool:
    """`var` is a parameter of `func` and every call of `func` in the module passes it normalised, or as a
    literal spelled as this comparison spells it (the guard lives at the call sites, not in the hunk)."""
    if not isinstance(func, FUNCTION_TYPES):
        return False
    args = func.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if var not in positional and var not in {a.arg for a in args.kwonlyargs}:
        return False
    calls = [c for c in index_of(tree).calls_to(func.name) if c is not func]
    if not calls:
        return False
    for call in calls:
        offset = 1 if positional and positional[0] in ("self", "cls") and isinstance(call.func, ast.Attribute) else 0
        value = next((k.value for k in call.keywords if k.arg == var), None)
        if value is None and var in positional:
            at = positional.index(var) - offset
            value = call.args[at] if 0 <= at < len(call.args) and not any(
                isinstance(a, ast.Starred) for a in call.args[:at + 1]) else None
        if value is None:
            return False  # the default, a **kwargs or *args spread: not seen
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            if value.value not in literals and any(_aliases(value.value, x) for x in literals):
                return False  # passes another spelling of the value
            continue
        if not _normalizing(value):
            return False
    return True


@detector("string-dispatch-unnormalized")
def string_dispatch_unnormalized(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if not review.facts.is_library(f.path) \
                or not any(("==" in t or " in " in t) and ('"' in t or "'" in t) for _, t in f.added):
            continue
        added = f.added_lines
        compares = list(_string_compares(tree))
        new = [(c, v, lits) for c, v, lits in compares if c.lineno in added and DISPATCH_NAME.search(v.rsplit(".", 1)[-1])]
        if not new:
            continue
        enums = _enum_compares(tree)
        reported: set[tuple[str, int]] = set()
        base_compares = _compare_texts(review.base_python(f))
        for cmp_node, var, lits in new:
            if _flat(ast.unparse(cmp_node)) in base_compares:
                continue  # the same comparison already existed on base
            if len(lits) > 1 and any(_aliases(x, y) or _abbreviates(x, y) for x in lits for y in lits if x != y):
                continue  # the comparison already enumerates spellings (`in ("bf16", "bfloat16")`)
            other_lits = [(c.lineno, lit) for c, v, ls in compares if v == var and c is not cmp_node for lit in ls]
            alias = next(((line, lit, mine) for line, lit in other_lits for mine in lits if _aliases(mine, lit)), None)
            enum = (enums.get(var) or [None])[0]
            if alias is None and enum is None:
                continue  # nothing else spells the value: asked first, as it costs no walk of the function
            func = _enclosing_function(cmp_node, index_of(tree).parents)  # the map is built on first use
            if _normalized_before(func, var, cmp_node.lineno) or _normalized_by_callers(tree, func, var, lits):
                continue
            if (var, cmp_node.lineno) in reported:
                continue
            reported.add((var, cmp_node.lineno))
            text = ast.unparse(cmp_node)
            if alias is not None:
                line, lit, mine = alias
                why = f"{f.path}:{line} compares the same `{var}` with {lit!r}, another spelling of {mine!r}"
                evidence_line = line
            else:
                line, member = enum
                why = f"{f.path}:{line} compares the same `{var}` with the enum member `{member}`"
                evidence_line = line
            yield Finding(
                rule="string-dispatch-unnormalized", path=f.path, line=cmp_node.lineno,
                problem=f"New raw string dispatch `{text[:100]}` at {f.path}:{cmp_node.lineno}, while {why}; "
                        f"`{var}` is not normalised first.",
                impact="A caller passing the other spelling (or the enum) silently misses this branch and takes the "
                       "fallback path: wrong kernel or the slow path, with no error.",
                action=f"Author must normalise `{var}` once (e.g. `.lower()`, or convert to the enum) before "
                       "dispatching, or compare against every accepted spelling.",
                tag="inferred",
                evidence=[Evidence(f.path, evidence_line, (review.source.lines(f.path) or [""] * evidence_line)[evidence_line - 1].strip()[:120])],
            )


# --------------------------------------------------------------------------------------------
# phase-size-proxy
# --------------------------------------------------------------------------------------------

PROXY = lazy_re(r"(^|\.)(max_q\w*|max_seqlen_q\w*|max_query_len\w*|max_qo_len\w*|q_len|qo_len|query_len\w*|"
                   r"seq_len|seqlen|seq_lens?_q|num_query_tokens)$")
PROXY_SHAPE = lazy_re(r"^(q|query|\w+_q|hidden_states|input_ids|x)\.(shape\[0\]|size\(0\))$")
PHASE_FLAG = lazy_re(r"is_prefill|is_decode|is_extend|prefill_metadata|decode_metadata|forward_mode|"
                        r"num_prefills?|num_decodes?|num_decode_tokens|num_prefill_tokens|is_pure_decode|phase|"
                        r"is_decoding|is_prefilling|spec_decode|is_draft|is_spec|mtp|speculative|verify",
                        re.IGNORECASE)
PROXY_TEXT = lazy_re(r"max_q|max_seqlen_q|max_query_len|max_qo_len|q_len|qo_len|query_len|seq_len|seqlen|"
                        r"num_query_tokens|shape\[0\]|size\(0\)")
ONE_TESTS = {(ast.Eq, 1), (ast.NotEq, 1), (ast.LtE, 1), (ast.Lt, 2), (ast.Gt, 1), (ast.GtE, 2)}


def _proxy_compare(node: ast.Compare) -> str | None:
    if len(node.ops) != 1:
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
        op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(type(op), op)
    if not (isinstance(right, ast.Constant) and type(right.value) is int and (type(op), right.value) in ONE_TESTS):
        return None
    text = ast.unparse(left)
    if PROXY.search(text) or PROXY_SHAPE.match(text):
        return text
    return None


@detector("phase-size-proxy")
def phase_size_proxy(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False, added_matching=PROXY_TEXT):
        added = f.added_lines
        parents = index_of(tree).parents
        base_compares = _compare_texts(review.base_python(f))
        for node in index_of(tree).of_type(ast.Compare):
            if node.lineno not in added:
                continue
            proxy = _proxy_compare(node)
            if proxy is None or _flat(ast.unparse(node)) in base_compares:
                continue
            decision = _phase_decision(node, parents)
            if decision is None:
                continue
            stmt, what = decision
            test_text = ast.unparse(_test_of(node, parents))
            if PHASE_FLAG.search(test_text):
                continue  # the condition also reads an explicit phase flag
            yield Finding(
                rule="phase-size-proxy", path=f.path, line=node.lineno,
                problem=f"`{ast.unparse(node)}` at {f.path}:{node.lineno} decides {what} from the size `{proxy}` "
                        "instead of an explicit phase flag.",
                impact="A short or chunked prefill whose query length is 1 (or a multi-token decode/MTP step) is "
                       "classified as the wrong phase and runs the wrong kernel path.",
                action="Author must dispatch on the batch metadata's phase flag (`is_prefill`, "
                       "`attn_metadata.is_prefill`, the forward mode) rather than on a size.",
                trigger=f"a prefill chunk with a single query token reaches `{ast.unparse(node)}` and is treated as decode",
                tag="inferred",
                evidence=[Evidence(f.path, stmt.lineno, ast.unparse(stmt).splitlines()[0][:120])],
            )


def _test_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The whole boolean expression the comparison belongs to."""
    while node in parents and isinstance(parents[node], (ast.BoolOp, ast.UnaryOp)):
        node = parents[node]
    return node


def _phase_decision(node: ast.Compare, parents: dict[ast.AST, ast.AST]) -> tuple[ast.AST, str] | None:
    """When the comparison picks a phase: assigned to a decode/prefill-named variable, or the test of a
    branch whose one arm takes a decode path and the other a prefill path (an MTP-width check inside a
    decode path names decode on both sides and is not a phase decision)."""
    top = _test_of(node, parents)
    parent = parents.get(top)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        names = [dotted_name(t) for t in targets]
        if any(re.search(r"(^|_)(is_)?(decode|prefill|extend)(_only|_mode|_phase)?$", n.rsplit(".", 1)[-1]) for n in names):
            return parent, f"`{names[0]}`"
        return None
    if isinstance(parent, (ast.If, ast.IfExp)) and parent.test is top:
        body = parent.body if isinstance(parent, ast.If) else [parent.body]
        orelse = parent.orelse if isinstance(parent, ast.If) else [parent.orelse]
        if isinstance(parent, ast.If) and not orelse and body and isinstance(body[-1], (ast.Return, ast.Raise)):
            orelse = _following(parent, parents)  # `if …: return decode(…)` then the prefill path
        a, b = _phases(body), _phases(orelse)
        if a and b and a.isdisjoint(b):
            return parent, "the decode/prefill branch"
    return None


def _following(stmt: ast.stmt, parents: dict[ast.AST, ast.AST]) -> list[ast.stmt]:
    owner = parents.get(stmt)
    for field in ("body", "orelse", "finalbody"):
        seq = getattr(owner, field, None)
        if isinstance(seq, list) and stmt in seq:
            return seq[seq.index(stmt) + 1:seq.index(stmt) + 4]
    return []


def _phases(stmts: list[ast.AST]) -> set[str]:
    """Which of decode / prefill the statements name (calls, attributes, short strings)."""
    found: set[str] = set()
    for stmt in stmts:
        for n in walk(stmt):
            text = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else \
                n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 40 else ""
            low = text.lower()
            if "decode" in low:
                found.add("decode")
            if "prefill" in low or "extend" in low:
                found.add("prefill")
    return found


# --------------------------------------------------------------------------------------------
# cudagraph-capture-break
# --------------------------------------------------------------------------------------------

CAPTURED_PATH = lazy_re(r"(^|/)(models|model_ops|model_engine)/")
CAPTURED_FUNC = lazy_re(r"^(forward|_forward|forward_decode|_forward_decode|decode_forward|forward_impl|"
                           r"forward_cuda|forward_native|_decode\w*|decode_\w*)$")
# Vision/audio towers and multimodal pre-processing run once per request in eager prefill, never captured.
EAGER_CLASS = lazy_re(r"vision|visual|vit\b|vit[A-Z_]|image|patch|audio|whisper|siglip|clip|processor|"
                         r"multimodal|mm_|projector|merger|interp", re.IGNORECASE)
HAZARD_TEXT = lazy_re(r"\.(item|tolist|cpu|numpy|any|all|nonzero|count_nonzero|equal|allclose|isnan|isinf)\(|"
                         r"torch\.(tensor|as_tensor|from_numpy)\(|\b(int|float|bool)\(")
HOST_SYNC = {"item", "tolist", "cpu", "numpy"}
TENSOR_TEST = {"item", "any", "all", "tolist", "nonzero", "count_nonzero", "equal", "allclose", "isnan", "isinf"}
TENSOR_REDUCE = {"sum", "max", "min", "mean", "prod", "amax", "amin", "argmax", "argmin", "item", "count_nonzero"}
ALLOCATORS = {"empty", "zeros", "ones", "full", "arange", "empty_strided", "randn", "rand"}
HOST_TENSOR = {"torch.tensor", "torch.as_tensor", "torch.from_numpy"}
EAGER_WORDS = lazy_re(r"prefill|is_extend|eager|warmup|is_dummy|debug|profil|is_compiling|torch\.compiler",
                         re.IGNORECASE)
GRAPH_WORDS = lazy_re(r"use_cudagraph|cuda_graph|cudagraph|capturing|is_decode|decode", re.IGNORECASE)


def _captured_functions(review: ReviewInput, f: ChangedFile, tree: ast.Module) -> list[tuple[str, Func]]:
    if not CAPTURED_PATH.search(f.path):
        return []
    return [(q, fn) for q, fn in qualified_functions(tree).items()
            if "." in q and CAPTURED_FUNC.match(fn.name) and not EAGER_CLASS.search(q.rsplit(".", 1)[0]) and not any(
                decorator_name(d).rsplit(".", 1)[-1] in ("jit", "no_compile", "disable") for d in fn.decorator_list)]


def _eager_only(node: ast.AST, func: Func, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside a branch that only runs eagerly: the true arm of `if is_prefill:`/`if warmup:`, or the false
    arm of `if use_cudagraph:`/`if is_decode:`/`if torch.cuda.is_current_stream_capturing():`."""
    child = node
    while child in parents and child is not func:
        parent = parents[child]
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            test = parent.test
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            text = ast.unparse(test.operand if negated else test)
            in_body = child in (parent.body if isinstance(parent, ast.If) else [parent.body])
            truthy = in_body != negated
            if truthy and EAGER_WORDS.search(text) or not truthy and GRAPH_WORDS.search(text):
                return True
        child = parent
    return False


@detector("cudagraph-capture-break")
def cudagraph_capture_break(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if not CAPTURED_PATH.search(f.path) or not any(HAZARD_TEXT.search(t) for _, t in f.added):
            continue
        funcs = _captured_functions(review, f, tree)
        if not funcs:
            continue
        added = f.added_lines
        parents = index_of(tree).parents
        base_tree = review.base_python(f)
        base_funcs = qualified_functions(base_tree) if base_tree is not None else {}
        for qualname, func in funcs:
            seen_lines: set[int] = set()
            base_text = _flat(ast.unparse(base_funcs[qualname])) if qualname in base_funcs else ""
            for node in walk(func):
                if getattr(node, "lineno", None) not in added or node.lineno in seen_lines:
                    continue
                what = _capture_hazard(node)
                if what is None or _eager_only(node, func, parents):
                    continue
                if innermost_function(func, node) is not func:
                    continue
                seen_lines.add(node.lineno)
                kind, text = what
                if _flat(text.removeprefix("if ").removeprefix("while ")) in base_text:
                    continue  # the same expression was already in this forward on base
                yield Finding(
                    rule="cudagraph-capture-break", path=f.path, line=node.lineno,
                    problem=f"{kind} `{text[:100]}` added to `{qualname}` ({f.path}:{node.lineno}), a forward path "
                            "that runs under CUDA/HIP graph capture.",
                    impact="Graph replay re-runs the captured kernels only: a host read or a Python branch on tensor "
                           "data is evaluated once at capture and baked in, so later steps silently reuse stale "
                           "values (or capture fails on the host sync).",
                    action="Author must show the value is static for each captured batch size, or move it out of the "
                           "captured region (compute it in metadata preparation before replay).",
                    tag="inferred", severity="medium",
                    evidence=[Evidence(f.path, node.lineno, text[:120])],
                )


def _capture_hazard(node: ast.AST) -> tuple[str, str] | None:
    if isinstance(node, ast.Call):
        callee = dotted_name(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr in HOST_SYNC and not node.args:
            owner = ast.unparse(node.func.value)
            if node.func.attr in ("cpu", "numpy") or not re.search(r"cpu|host|np_|numpy", owner, re.IGNORECASE):
                return "Host synchronisation", ast.unparse(node)
        if callee in HOST_TENSOR:
            return "Tensor built from host data", ast.unparse(node)
        if callee in ("int", "float", "bool") and len(node.args) == 1 and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in TENSOR_REDUCE
                for n in walk(node.args[0])):
            return "Host synchronisation", ast.unparse(node)
        if callee.startswith("torch.") and callee.rsplit(".", 1)[-1] in ALLOCATORS and any(
                isinstance(n, ast.Call) and (isinstance(n.func, ast.Attribute) and n.func.attr in HOST_SYNC
                                             or dotted_name(n.func) in ("int", "float"))
                for a in node.args for n in walk(a)):
            return "Allocation sized by a host read", ast.unparse(node)
    if isinstance(node, (ast.If, ast.While)):
        for sub in walk(node.test):
            if isinstance(sub, ast.Call):
                callee = dotted_name(sub.func)
                leaf = sub.func.attr if isinstance(sub.func, ast.Attribute) else callee
                if leaf in TENSOR_TEST and (callee.startswith("torch.") or isinstance(sub.func, ast.Attribute)
                                            and not callee.startswith(("os.", "re.", "np.", "math."))):
                    return "Branch on tensor data", f"{'if' if isinstance(node, ast.If) else 'while'} {ast.unparse(node.test)}"
    return None


# --------------------------------------------------------------------------------------------
# constexpr-check-disabled
# --------------------------------------------------------------------------------------------

CHECK_NAME = lazy_re(r"CHECK|VALIDAT|VERIFY|ASSERT|GUARD|BOUND|SENTINEL|CLAMP|OOB", re.IGNORECASE)
NEGATIVE_NAME = lazy_re(r"SKIP|NO_|DISABLE|UNSAFE|UNCHECKED|IGNORE", re.IGNORECASE)
INVARIANT_NOTE = lazy_re(r"invariant|guarantee|ensure[sd]?\b|by construction|never (contains?|has|have|produces?)|"
                            r"cannot (contain|be negative|hold)|always (valid|non-?negative|in range|>= ?0)|asserted|validated",
                            re.IGNORECASE)


def _kernels(tree: ast.Module) -> dict[str, Func]:
    out = {}
    for node in index_of(tree).of_type(FUNCTION_TYPES):
        if any(decorator_name(d).rsplit(".", 1)[-1] == "jit" for d in node.decorator_list):
            out[node.name] = node
    return out


def _constexpr_params(func: Func) -> dict[str, ast.arg]:
    return {a.arg: a for a in func.args.args + func.args.kwonlyargs
            if a.annotation is not None and dotted_name(a.annotation).rsplit(".", 1)[-1] == "constexpr"}


def _gates(func: Func, name: str) -> ast.AST | None:
    """The first `if NAME:` / `if not NAME:` whose checking arm (the one taken when the check is on)
    compares values — the bounds or sentinel test the flag can switch off."""
    check_on_when_true = not NEGATIVE_NAME.search(name)
    for node in walk(func):
        if not isinstance(node, (ast.If, ast.IfExp)):
            continue
        test = node.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test
        if not (isinstance(inner, ast.Name) and inner.id == name):
            continue
        body = node.body if isinstance(node, ast.If) else [node.body]
        orelse = node.orelse if isinstance(node, ast.If) else [node.orelse]
        checking = body if (check_on_when_true != negated) else orelse
        if any(isinstance(n, ast.Compare) or isinstance(n, ast.Call) and dotted_name(n.func).endswith("device_assert")
               for stmt in checking for n in walk(stmt)):
            return node
    return None


@detector("constexpr-check-disabled")
def constexpr_check_disabled(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if not any("constexpr" in t for _, t in f.added):
            continue
        kernels = _kernels(tree)
        if not kernels:
            continue
        added = f.added_lines
        base_tree = review.base_python(f)
        base_kernels = _kernels(base_tree) if base_tree is not None else {}
        for kname, kernel in kernels.items():
            base_params = set(_constexpr_params(base_kernels[kname])) if kname in base_kernels else set()
            for pname, arg in _constexpr_params(kernel).items():
                if pname in base_params or arg.lineno not in added or not CHECK_NAME.search(pname):
                    continue
                gate = _gates(kernel, pname)
                if gate is None:
                    continue
                callers = _launches(review, f.path, tree, kname, pname)
                risky = [(path, kw, why) for path, kw, why in callers if why is not None]
                if not risky:
                    continue
                path, kw, why = risky[0]
                decided = _binding_line(tree, kw.value) if path == f.path else None
                line = next((n for n in (decided, kw.value.lineno) if path == f.path and n in added), arg.lineno)
                yield Finding(
                    rule="constexpr-check-disabled", path=f.path, line=line,
                    problem=f"New constexpr `{pname}` of kernel `{kname}` ({f.path}:{arg.lineno}) switches off the check "
                            f"at line {gate.lineno}, and the launch at {path}:{kw.value.lineno} passes "
                            f"`{pname}={ast.unparse(kw.value)[:80]}` ({why}) with no stated invariant.",
                    impact="On the path where the flag is False, the kernel no longer filters the invalid values the "
                           "check rejected (out-of-range or sentinel indices): an illegal memory access or silently "
                           "wrong output if one ever appears.",
                    action=f"Author must document (or assert) on that caller the invariant that makes the check "
                           f"unnecessary, e.g. that no invalid index reaches `{kname}` on that path.",
                    tag="inferred",
                    evidence=[Evidence(f.path, arg.lineno, f"{pname}: tl.constexpr"),
                              Evidence(f.path, gate.lineno, ast.unparse(gate.test)[:100] if hasattr(gate, "test") else ""),
                              Evidence(path, kw.value.lineno, f"{pname}={ast.unparse(kw.value)[:80]}")],
                )


def _launches(review: ReviewInput, path: str, tree: ast.Module, kernel: str, param: str) -> list[tuple[str, ast.keyword, str | None]]:
    """Launch sites `kernel[grid](..., PARAM=value)`: (path, keyword, why it may be False or None if it cannot)."""
    paths = [path] + [p for p, _, _ in review.source.grep(kernel, "head", ("*.py",), word=True, files_only=True) if p != path][:20]
    out = []
    for p in paths:
        t = tree if p == path else review.source.python(p)
        if t is None:
            continue
        text = review.source.text(p) or ""
        notes = comments(text)
        parents = index_of(t).parents
        for node in index_of(t).of_type(ast.Call):
            if not (isinstance(node.func, ast.Subscript)
                    and dotted_name(node.func.value).rsplit(".", 1)[-1] == kernel):
                continue
            for kw in node.keywords:
                if kw.arg != param:
                    continue
                value = kw.value
                off = bool(NEGATIVE_NAME.search(param))  # the value that switches the check off
                if isinstance(value, ast.Constant):
                    why = f"a literal {off}" if bool(value.value) == off else None
                else:
                    why = "a value computed at run time"
                if why and _invariant_stated(t, parents, node, value, notes):
                    why = None
                out.append((p, kw, why))
    return out


def _binding_line(tree: ast.Module, value: ast.AST) -> int | None:
    """Where the Name passed as the flag is last assigned before the launch (the caller's decision)."""
    if not isinstance(value, ast.Name):
        return None
    lines = [n.lineno for n in index_of(tree).of_type(ast.Assign) if n.lineno < value.lineno
             and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
    return max(lines) if lines else None


def _invariant_stated(tree: ast.Module, parents: dict[ast.AST, ast.AST], call: ast.Call, value: ast.AST,
                      notes: list[tuple[int, str]]) -> bool:
    """A comment stating an invariant, or an assert, near the launch or near where the passed value is bound."""
    lines = {call.lineno, value.lineno}
    func = call
    while func in parents and not isinstance(func, FUNCTION_TYPES):
        func = parents[func]
    names = {n.id for n in walk(value) if isinstance(n, ast.Name)}
    if isinstance(func, FUNCTION_TYPES):
        for node in walk(func):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
                lines.add(node.lineno)
            if isinstance(node, ast.Assert) and node.lineno < call.lineno and \
                    names & {n.id for n in walk(node.test) if isinstance(n, ast.Name)}:
                return True
    for line, text in notes:
        if any(0 <= anchor - line <= 4 for anchor in lines) and INVARIANT_NOTE.search(text):
            return True
    return False
