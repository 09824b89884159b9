"""contiguity-unchecked (D8): a strided view handed to a compiled op with no contiguity guarantee.

Decided where it can be decided from the code: the tensor passed to an aiter op, a `torch.ops`
op or a `@compile_ops` function is, in the same function, a view that is not dense — a slice of a
trailing dimension, a transpose/permute, a split or chunk along a non-leading dimension, an
expand — with no `.contiguous()` and no `is_contiguous()` check on the way, and the call does not
pass its strides. A plain parameter handed through is the caller's contract and is not reported.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from ..evidence._util import short
from ..lang import cpp
from ..lang.index import index_of
from ..lang.python import DEVICE_DECORATORS, FUNCTION_TYPES, decorated_with, dotted_name, walk
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

TRANSPOSES = ("transpose", "permute", "t", "mT", "T", "movedim", "swapaxes", "expand", "as_strided", "diagonal")
SPLITS = ("split", "chunk", "unbind", "tensor_split")
NARROWS = ("narrow", "select")


def _dim_arg(call: ast.Call, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "dim":
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _leading(dim: ast.expr | None) -> bool:
    """dim 0 (or the default): a view along the leading dimension stays dense."""
    return dim is None or (isinstance(dim, ast.Constant) and dim.value == 0)


def strided_view(node: ast.AST) -> str | None:
    """How `node` makes a non-dense view, or None."""
    if isinstance(node, ast.Subscript):
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        for position, item in enumerate(items):
            if isinstance(item, ast.Slice) and (position > 0 or item.step is not None):
                if position > 0 and all(isinstance(i, ast.Slice) and i.lower is None and i.upper is None
                                        and i.step is None for i in items[position:]):
                    continue
                return f"the slice `{ast.unparse(node)[:60]}`"
            if isinstance(item, ast.Constant) and item.value is Ellipsis and position + 1 < len(items):
                following = items[position + 1]
                if isinstance(following, ast.Slice) and (following.lower or following.upper or following.step):
                    return f"the slice `{ast.unparse(node)[:60]}`"
        return None
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return f"the transpose `{ast.unparse(node)[:60]}`"
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    method = node.func.attr
    text = ast.unparse(node)[:60]
    if method in TRANSPOSES:
        return f"`{text}`"
    if method in SPLITS and not _leading(_dim_arg(node, 1 if method != "unbind" else 0)):
        return f"`{text}` (along a non-leading dimension)"
    if method in NARROWS and not _leading(_dim_arg(node, 0)):
        return f"`{text}` (along a non-leading dimension)"
    return None


def _compiled_callees(tree: ast.Module) -> set[str]:
    """Names in this module that call compiled code: imported from aiter, or defined with @compile_ops."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aiter":
            out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, FUNCTION_TYPES) and any(
                dotted_name(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1] == "compile_ops"
                for d in node.decorator_list):
            out.add(node.name)
    return out


def _is_compiled_call(call: ast.Call, callees: set[str]) -> bool:
    name = dotted_name(call.func)
    head = name.split(".", 1)[0]
    return name in callees or head == "aiter" or name.startswith("torch.ops.")


def _views(func: ast.AST) -> dict[str, tuple[int, str]]:
    """Local names bound to a non-dense view (line, how), minus those made dense again and views of a
    buffer the function allocates itself."""
    views: dict[str, tuple[int, str]] = {}
    allocated = _allocated(func)
    for node in walk(func):
        if not isinstance(node, ast.Assign):
            continue
        value = node.value
        if _view_base(value) in allocated:
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                how = strided_view(value)
                if how:
                    views[target.id] = (node.lineno, how)
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Call):
                how = strided_view(value)
                if how and isinstance(value.func, ast.Attribute) and value.func.attr in SPLITS:
                    for elt in target.elts:
                        if isinstance(elt, ast.Name):
                            views[elt.id] = (node.lineno, how)
    return views


def _last_binding(func: ast.AST, name: str, before: int) -> int | None:
    """The line of the last assignment to `name` before line `before` (the binding a call there reads:
    ATOM d72060af8e binds `q` to a fresh buffer before the op and to a split view only in a later branch)."""
    lines = [node.lineno for node in walk(func) if isinstance(node, ast.Assign) and node.lineno < before
             and any(isinstance(n, ast.Name) and n.id == name for t in node.targets for n in walk(t))]
    return max(lines) if lines else None


ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
                        "new_empty", "new_zeros", "new_ones", "new_full", "empty_strided"})


def _view_base(node: ast.AST) -> str | None:
    """The name a view is taken of (`x` in `x[:, :n]`, `x.transpose(1, 2)`, `x.T`)."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        if not isinstance(node, (ast.Subscript, ast.Attribute)):
            break
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _allocated(func: ast.AST) -> set[str]:
    """Names the function binds to a fresh allocation (`torch.empty(...)`, `x.new_zeros(...)`): the function
    chose that buffer's layout, so a view of it is the layout the author meant the op to get (aiter#4004:
    a bhsd buffer handed on as its bshd-shaped transpose)."""
    out = set()
    for node in walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, (ast.Attribute, ast.Name)) \
                and dotted_name(node.value.func).rsplit(".", 1)[-1] in ALLOCATORS:
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _densified(func: ast.AST, name: str) -> bool:
    """`.contiguous()` on the name anywhere in the function, or an `is_contiguous()` check of it."""
    for node in walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "contiguous", "is_contiguous") and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
            return True
    return False


def _passes_strides(call: ast.Call, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "stride"
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in walk(call))


def _device(func: ast.AST) -> bool:
    """A jitted device function (`@triton.jit`, `@gluon.jit`, `@flyc.kernel`): its values are registers and
    DSL values, not tensors (`arith.select(c, a, b)` is no `Tensor.select`)."""
    return isinstance(func, FUNCTION_TYPES) and decorated_with(func, DEVICE_DECORATORS)


def _hits(tree: ast.Module, added: set[int]) -> Iterator[tuple[ast.Call, str, int, str]]:
    callees = _compiled_callees(tree)
    index = index_of(tree)
    views_of: dict[int, dict[str, tuple[int, str]]] = {}
    for call in index.of_type(ast.Call):  # one pass over the calls on added lines, not a walk per function
        if not any(n in added for n in range(call.lineno, (call.end_lineno or call.lineno) + 1)):
            continue
        if not _is_compiled_call(call, callees):
            continue
        enclosing = [a for a in index.ancestors(call) if isinstance(a, FUNCTION_TYPES)]
        if not enclosing:
            continue  # module level: no local views to follow
        if any(_device(a) for a in enclosing):
            continue  # device code inside a kernel
        func = enclosing[-1]
        if id(func) not in views_of:
            views_of[id(func)] = _views(func)
        views = views_of[id(func)]
        for arg in list(call.args) + [k.value for k in call.keywords]:
            how = strided_view(arg)
            if how and _view_base(arg) in _allocated(func):
                continue
            if how:
                yield call, ast.unparse(arg)[:40], call.lineno, how
            elif isinstance(arg, ast.Name) and arg.id in views and not _densified(func, arg.id) \
                    and not _passes_strides(call, arg.id) and _last_binding(func, arg.id, call.lineno) == views[arg.id][0]:
                line, how = views[arg.id]
                yield call, arg.id, line, how


def _is_stub(func: ast.FunctionDef) -> bool:
    """A `@compile_ops` declaration whose body is `...`: the op is the C++ function of that name."""
    return all(isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) for b in func.body)


def _native_reads_strides(review: ReviewInput, op: str, index: int) -> bool | None:
    """Whether the C++ definition of a compiled op (under csrc/) reads the strides of its parameter at `index`
    (`out.stride(0)`, `input.strides()`); None when no definition is in the tree."""
    hits = review.source.grep(rf"\b{re.escape(op)}\s*\(", "head", ("csrc/*.cu", "csrc/*.cpp", "csrc/*.hip"), files_only=True)
    found = False
    for path, _, _ in hits[:4]:
        text = review.source.text(path) or ""
        tree = cpp.parse(text)
        for func in cpp.nodes_of_type(tree, "function_definition"):
            if cpp.function_name(func).rsplit("::", 1)[-1] != op:
                continue
            names = list(_cpp_params(func))
            if index >= len(names):
                continue
            found = True
            if re.search(rf"\b{re.escape(names[index])}\s*(\.|->)\s*strides?\s*\(", cpp.text_of(func)):
                return True
    return False if found else None


def _callee_verdict(review: ReviewInput, path: str, tree: ast.Module, call: ast.Call, arg_text: str) -> str:
    """What the op does with the view, read from its definition (the op's family, not the hunk): "handles"
    (it passes the strides on, reads them, or densifies), "dense" (its definition is in the tree and does
    none of that) or "unknown" (no definition in the tree: an op of another repository, as aiter's ops are
    to ATOM, proves nothing either way)."""
    callee = next((d for _, d in review.defs_reached(path, tree, dotted_name(call.func))), None)
    if callee is None or _is_stub(callee):
        position = next((i for i, a in enumerate(call.args) if ast.unparse(a)[:40] == arg_text), None)
        op = dotted_name(call.func).rsplit(".", 1)[-1]
        if position is None or not op:
            return "unknown"
        native = _native_reads_strides(review, op, position)
        return "unknown" if native is None else "handles" if native else "dense"
    params = [a.arg for a in callee.args.posonlyargs + callee.args.args]
    param = None
    for index, arg in enumerate(call.args):
        if ast.unparse(arg)[:40] == arg_text and index < len(params):
            param = params[index]
    for kw in call.keywords:
        if ast.unparse(kw.value)[:40] == arg_text:
            param = kw.arg
    if param is None:
        return "unknown"
    handles = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in ("stride", "contiguous", "is_contiguous", "strides")
                  and isinstance(n.func.value, ast.Name) and n.func.value.id == param for n in walk(callee))
    return "handles" if handles else "dense"


# --- a launcher that states a caller's tensor's strides from its sizes ---------------------------------
#
# The habit the projects' own fixes undo (aiter#1631 after #1383: `stride_input_seq = num_kv_heads *
# query_group_size * head_size` handed to a Gluon kernel for the caller's `query`; aiter#2466 after #1596:
# `const int stride_A = K;` in a CK host wrapper): the launcher assumes a dense layout for a tensor it did not
# allocate, without reading its strides or checking it is contiguous, and a strided view from a caller
# (vLLM's padded weights, an interleaved KV cache) is read at the wrong addresses.

STRIDE_NAME = lazy_re(r"stride|^ld[a-z]?$", re.I)
SIZE_CALLS = frozenset({"size", "numel", "dim", "next_power_of_2", "cdiv", "max", "min", "int", "len"})


def _assignments(func: ast.AST) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
                elif isinstance(target, ast.Tuple):
                    for elt in target.elts:
                        if isinstance(elt, ast.Name):
                            out.setdefault(elt.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) and node.value:
            out.setdefault(node.target.id, []).append(node.value)
    return out


def _size_derived(expr: ast.expr, assigned: dict[str, list[ast.expr]], params: set[str], depth: int = 0) -> bool | None:
    """Whether an int expression is built from sizes only (parameters, `.shape[i]`, `.size(i)`, arithmetic):
    True; False when it reads a stride or anything else; None for a bare constant (an innermost 1, a 0)."""
    if isinstance(expr, ast.Constant):
        return None if isinstance(expr.value, int) else False
    if depth > 4:
        return False
    found = False
    for node in walk(expr):
        if isinstance(node, ast.Attribute) and node.attr in ("stride", "strides"):
            return False
        if isinstance(node, ast.Call):
            name = dotted_name(node.func).rsplit(".", 1)[-1]
            if name not in SIZE_CALLS:
                return False
            found = True
        elif isinstance(node, ast.Attribute) and node.attr == "shape":
            found = True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in params:
                found = True
            elif node.id in assigned:
                verdicts = [_size_derived(v, assigned, params, depth + 1) for v in assigned[node.id]]
                if any(v is False for v in verdicts):
                    return False
                found = found or any(verdicts)
            elif node.id not in ("triton", "math", "torch"):
                return False  # a module constant or global: nothing known
    return found


def _bound(call: ast.Call, kernel: ast.FunctionDef) -> dict[str, ast.expr]:
    """Kernel parameter name → the launch's argument for it."""
    names = [a.arg for a in kernel.args.posonlyargs + kernel.args.args]
    out = {names[i]: arg for i, arg in enumerate(call.args) if i < len(names) and not isinstance(arg, ast.Starred)}
    out.update({k.arg: k.value for k in call.keywords if k.arg})
    return out


def _strides_of(pointer: str, params: Iterable[str]) -> list[str]:
    """The kernel's stride parameters for a pointer parameter (`input_ptr` → `stride_input_seq`, `a_ptr` →
    `stride_am`, `x_ptr` → `x_stride_row`): the stride names carrying the pointer's stem."""
    stem = re.sub(r"_?ptrs?$", "", pointer)
    if not stem or stem == pointer:
        return []
    return [p for p in params if STRIDE_NAME.search(p) and (p.startswith(f"stride_{stem}") or p.startswith(f"{stem}_stride"))]


def _layout_handled(func: ast.AST) -> set[str]:
    """Names whose layout the launcher handles: it reads their strides, makes them contiguous, checks them, or
    rebinds them (one walk per launcher)."""
    out: set[str] = set()
    for node in walk(func):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.attr in ("stride", "strides", "contiguous", "is_contiguous"):
            out.add(node.value.id)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call) and "contig" in dotted_name(node.func).lower():
            out.update(a.id for a in node.args if isinstance(a, ast.Name))
    return out


def _callers_dense(tree: ast.Module, launcher: str, position: int, param: str) -> bool:
    """Every call of the launcher in its module hands this parameter a buffer its caller allocated or made
    contiguous (the family of the launcher, not the hunk): then the dense layout is the module's own."""
    calls = [c for c in index_of(tree).calls_to(launcher)]
    if not calls:
        return False
    for call in calls:
        arg = next((k.value for k in call.keywords if k.arg == param), None)
        if arg is None and position < len(call.args):
            arg = call.args[position]
        if arg is None:
            return False
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "contiguous":
            continue
        caller = next((a for a in index_of(tree).ancestors(call) if isinstance(a, FUNCTION_TYPES)), None)
        if isinstance(arg, ast.Name) and caller is not None and (arg.id in _allocated(caller) or _densified(caller, arg.id)):
            continue
        return False
    return True


def _launcher_hits(review: ReviewInput, path: str, tree: ast.Module, added: set[int]) -> Iterator[tuple[int, str, str, str, str]]:
    """(line, tensor, kernel, stride parameter, its value) for launches whose size-made stride is for a tensor the
    launcher takes from its caller and never checks."""
    index = index_of(tree)
    for call in index.of_type(ast.Call):
        if not isinstance(call.func, ast.Subscript) or not isinstance(call.func.value, ast.Name):
            continue  # `kernel[grid](…)`
        func = next((a for a in index.ancestors(call) if isinstance(a, FUNCTION_TYPES)), None)
        if func is None or _device(func):
            continue
        kernel = next((d for _, d in review.defs_reached(path, tree, call.func.value.id)), None)
        if kernel is None or not _device(kernel):
            continue
        bound = _bound(call, kernel)
        args = func.args.posonlyargs + func.args.args + func.args.kwonlyargs
        params = {a.arg for a in args}
        sizes = {p for p in params if not STRIDE_NAME.search(p)}  # a stride the caller hands in is a stride
        assigned = handled = None
        for pointer, arg in bound.items():
            strides = _strides_of(pointer, bound)
            if not strides or not isinstance(arg, ast.Name) or arg.id not in params:
                continue
            if handled is None:
                assigned, handled = _assignments(func), _layout_handled(func)
            if arg.id in handled:
                continue
            for stride in strides:
                value = bound[stride]
                source = assigned.get(value.id, [value]) if isinstance(value, ast.Name) else [value]
                lines = {call.lineno} | ({n.lineno for n in walk(func) if isinstance(n, ast.Assign)
                                          and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)}
                                         if isinstance(value, ast.Name) else set())
                if not lines & added or not _size_derived(value, assigned, sizes - {arg.id}):
                    continue
                position = next(i for i, a in enumerate(args) if a.arg == arg.id)
                if _callers_dense(tree, func.name, position, arg.id):
                    break
                yield call.lineno, arg.id, call.func.value.id, stride, ast.unparse(source[-1])[:60]
                break


def _launcher_findings(review: ReviewInput, f, tree: ast.Module) -> Iterator[Finding]:
    before = None
    by_launch: dict[int, list[tuple[str, str, str, str]]] = {}
    for line, tensor, kernel, stride, value in _launcher_hits(review, f.path, tree, f.added_lines):
        if before is None:
            base = review.base_python(f)
            before = set() if base is None else {
                (t, k) for _, t, k, _, _ in _launcher_hits(review, f.old_path or f.path, base,
                                                           set(range(1, len(review.source.lines(f.old_path or f.path, "base")) + 1)))}
        if (tensor, kernel) not in before:  # else the launch assumed this layout before the PR
            by_launch.setdefault(line, []).append((tensor, kernel, stride, value))
    for line, hits in by_launch.items():
        tensor, kernel, stride, value = hits[0]
        names = ", ".join(f"`{h[0]}`" for h in hits)
        yield Finding(
            rule="contiguity-unchecked", path=f.path, line=line,
            problem=f"The launch of `{kernel}` states the strides of the caller's tensor(s) {names} from sizes "
                    f"(`{stride}` = `{value}`): the launcher never reads their `.stride()` nor checks "
                    "`is_contiguous()`, so it assumes a dense layout it did not make.",
            impact="A caller's strided view (a padded weight, an interleaved KV cache, a slice) is read at the wrong "
                   "addresses: a silent wrong result.",
            action=f"Author must pass `{tensor}.stride(i)` to the kernel, or check `{tensor}.is_contiguous()` (or "
                   "call `.contiguous()`) in the launcher.",
            tag="inferred", evidence=[Evidence(f.path, line, f"{h[2]} = {h[3]}") for h in hits[:4]],
        )


CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".hip", ".h", ".hpp")
TENSOR_TYPE = lazy_re(r"\bTensor\b|tensor_t\b")
CPP_WORD = lazy_re(r"[A-Za-z_]\w*")
CPP_SIZE_READ = lazy_re(r"(\w+)\s*(?:\.|->)\s*(?:size|sizes|numel)\s*\(")
CPP_KEYWORDS = frozenset({"const", "int", "int64_t", "int32_t", "size_t", "index_t", "static_cast", "std", "max", "min",
                          "ceil_div", "integer_divide_ceil", "ck_tile", "sizeof", "true", "false"})


def _cpp_params(func) -> dict[str, bool]:
    """Parameter name → whether it is a tensor."""
    return {name: bool(TENSOR_TYPE.search(cpp.text_of(p.child_by_field_name("type"))))
            for p in cpp.parameters(func) if (name := cpp.parameter_name(p))}


def _cpp_layout_checked(text: str, tensor: str) -> bool:
    """The translation unit reads the tensor's strides or checks its layout (`XQ.stride(0)`, `XQ.is_contiguous()`,
    `CHECK_CONTIGUOUS(XQ)`): a wrapper and its `_impl` share the parameter's name."""
    t = re.escape(tensor)
    return bool(re.search(rf"\b{t}\s*(?:\.|->)\s*(?:strides?|is_contiguous|contiguous)\s*\(|"
                          rf"\w*(?:CONTIG|contig|CHECK_INPUT)\w*\s*\(\s*{t}\b", text))


def _cpp_size_strides(text: str) -> Iterator[tuple[str, int, str, str, set[str]]]:
    """(function, line, stride name, value, tensors) for each stride a host function states from the sizes of
    tensors it takes as parameters (`const int stride_A = K;` with `K = XQ.size(1)`)."""
    tree = cpp.parse(text)
    for func in cpp.nodes_of_type(tree, "function_definition"):
        params = _cpp_params(func)
        tensors = {name for name, tensor in params.items() if tensor}
        if not tensors:
            continue
        sizes: dict[str, set[str]] = {}
        for node in cpp.walk(func):
            if node.type not in ("init_declarator", "assignment_expression"):
                continue
            left = node.child_by_field_name("declarator") or node.child_by_field_name("left")
            right = node.child_by_field_name("value") or node.child_by_field_name("right")
            if left is None or right is None:
                continue
            target = (CPP_WORD.findall(cpp.text_of(left)) or [""])[-1]
            value = cpp.text_of(right)
            read = {m for m in CPP_SIZE_READ.findall(value) if m in tensors}
            words = set(CPP_WORD.findall(re.sub(r"(\.|->)\s*\w+", "", value))) - CPP_KEYWORDS
            if STRIDE_NAME.search(target):
                if "stride" in value.lower() or read or target in params:
                    continue  # a stride the caller hands in, defaulted when absent (topk_plain's `stride0 = max_len`)
                if words and words <= set(sizes):
                    yield (CPP_WORD.findall(cpp.function_name(func)) or ['?'])[-1], cpp.line_of(node), target, value, set().union(*(sizes[w] for w in words))
            elif read or (words and words <= set(sizes)):
                sizes[target] = read.union(*(sizes[w] for w in words if w in sizes))


def _cpp_findings(review: ReviewInput) -> Iterator[Finding]:
    for f in review.changed("cpp", include_tests=False):
        if not f.path.endswith(CPP_SUFFIXES) or not any(STRIDE_NAME.search(t) for _, t in f.added):
            continue
        text = review.source.text(f.path)
        if not text:
            continue
        added = f.added_lines
        before = None
        reported: set[str] = set()
        for function, line, stride, value, tensors in _cpp_size_strides(text):
            unchecked = sorted(t for t in tensors if not _cpp_layout_checked(text, t))
            if line not in added or not unchecked or function in reported:
                continue
            if before is None:
                base = review.base_text(f, "")
                before = {(fn, s) for fn, _, s, _, _ in _cpp_size_strides(base)} if base else set()
            if (function, stride) in before:
                continue  # the wrapper stated this stride from sizes before the PR
            reported.add(function)
            names = ", ".join(f"`{t}`" for t in unchecked)
            yield Finding(
                rule="contiguity-unchecked", path=f.path, line=line,
                problem=f"`{function}` sets `{stride} = {short(value, 60)}` from the sizes of {names}, tensors its caller "
                        "hands in: it never reads their `.stride()` nor checks `is_contiguous()`, so it assumes a "
                        "dense layout it did not make.",
                impact="A caller's strided view (a padded weight, a narrowed or interleaved buffer) is read at the "
                       "wrong addresses: a silent wrong result.",
                action=f"Author must take the stride from the tensor (`{unchecked[0]}.stride(0)`), or check "
                       f"`{unchecked[0]}.is_contiguous()` with TORCH_CHECK.",
                tag="inferred", evidence=[Evidence(f.path, line, f"{stride} = {short(value, 60)}")],
            )


@detector("contiguity-unchecked")
def contiguity_unchecked(review: ReviewInput) -> Iterable[Finding]:
    yield from _cpp_findings(review)
    for f, tree in review.python_files(include_tests=False):
        if not review.facts.is_library(f.path):
            continue
        yield from _launcher_findings(review, f, tree)
        seen: set[int] = set()
        before: set[tuple[str, str, str]] | None = None
        for call, name, view_line, how in _hits(tree, f.added_lines):
            if call.lineno in seen:
                continue
            seen.add(call.lineno)
            op = dotted_name(call.func) or ast.unparse(call.func)[:40]
            if before is None:
                base = review.base_python(f)
                before = set() if base is None else {
                    (dotted_name(c.func) or ast.unparse(c.func)[:40], n, h)
                    for c, n, _, h in _hits(base, set(range(1, len(review.source.lines(f.old_path or f.path, "base")) + 1)))}
            if (op, name, how) in before:
                continue  # the same view reached the same op before the PR (the call moved or gained an argument)
            if _callee_verdict(review, f.path, tree, call, name) != "dense":
                continue  # the op passes the strides on or densifies, or its definition is not in the tree
            yield Finding(
                rule="contiguity-unchecked", path=f.path, line=call.lineno,
                problem=f"`{name}` reaches the compiled op `{op}` as {how} (line {view_line}), a view that is not "
                        "dense, with no `.contiguous()` or `is_contiguous()` check on the way and no strides "
                        "passed.",
                impact="A native kernel that assumes dense strides reads the view at the wrong addresses: a "
                       "completely silent wrong result.",
                action="Author must call `.contiguous()` on the view, or pass its strides to a kernel that uses "
                       "them, or assert `is_contiguous()` and document the contract.",
                tag="inferred", evidence=[Evidence(f.path, view_line, how)],
            )
