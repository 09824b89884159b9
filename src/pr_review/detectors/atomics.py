"""atomic-on-uninitialized (D1): an atomic reduction into a buffer allocated uninitialised.

Followed from allocation to kernel argument: a host function (Python wrapper or C++ launcher)
allocates a buffer with `empty`, passes it to a kernel launch at an argument position whose
kernel parameter is the destination of an atomic (`atomicAdd`, `atomic_fmax`, `tl.atomic_add`, …),
and nothing clears it in between (`zero_()`, `fill_(0)`, a memset, a reassignment). One of the
allocation, the launch or the atomic must be on a line the PR added. Kernels are read from the
changed file and its header family (same stem, `.cuh`/`.h`/`.hpp`) — an atomic that lives in the
header counts (seed: grep the whole symbol family, not the hunk).
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from ..git.diff import ChangedFile
from ..lang import cpp
from ..lang.index import index_of
from ..lang.python import dotted_name, node_lines, walk
from ..lang.triton import Kernel, argument, kernels, language_aliases
from ..model import Evidence, Finding, record
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

EMPTY_PY = ("empty", "empty_like", "new_empty", "empty_strided")
ATOMICS_TL = ("atomic_add", "atomic_max", "atomic_min", "atomic_fmax", "atomic_xchg", "atomic_cas")
CLEAR_METHODS = ("zero_", "fill_", "copy_")
ATOMIC_CPP = lazy_re(r"(?i)atomic(?!_?(load|store|exch|cas))\w*$")
EMPTY_CPP = lazy_re(r"(?:::|\b)empty(?:_like)?\s*\(")
CPP_LAUNCH = lazy_re(r"\b(\w+)\s*(?:<[^;{}]*?>)?\s*<<<[^;]*?>>>\s*\(")
CPP_KERNEL_SUFFIXES = (".cu", ".cuh", ".hip", ".h", ".hpp", ".cpp", ".cc", ".cxx")


@record(frozen=True)
class Hit:
    path: str
    line: int  # the allocation
    buffer: str
    kernel: str
    launch_line: int
    atomic_path: str
    atomic_line: int
    atomic_text: str


def _finding(hit: Hit) -> Finding:
    return Finding(
        rule="atomic-on-uninitialized", path=hit.path, line=hit.line, severity="medium",
        problem=f"`{hit.buffer}` is allocated uninitialised here and passed to `{hit.kernel}` "
                f"(line {hit.launch_line}), which accumulates into it atomically "
                f"(`{hit.atomic_text}`, {hit.atomic_path}:{hit.atomic_line}); nothing clears it before the launch.",
        impact="Whatever the allocator left in the buffer joins the sum or wins the max: a corrupted amax gives "
               "a corrupted descale and silently wrong results for every element.",
        action="Author must allocate the buffer zeroed (zeros / ::zeros) or clear it before the launch; the "
               "reviewer should check the launcher and header for an init kernel or memset first.",
        tag="verified",
        evidence=[Evidence(hit.atomic_path, hit.atomic_line, hit.atomic_text)],
    )


# ------------------------------------------------------------------------------ Python / Triton

def _atomic_params(tree: ast.Module, launched: set[str] | None = None) -> dict[str, dict[int, tuple[str, int, str]]]:
    """Triton kernel name → {parameter index: (param, line, atomic text)} for atomic destinations
    (only kernels in `launched`, when given)."""
    aliases = language_aliases(tree)
    out: dict[str, dict[int, tuple[str, int, str]]] = {}
    for func in kernels(tree):
        if launched is not None and func.name not in launched:
            continue
        if not any((isinstance(n, ast.Attribute) and n.attr in ATOMICS_TL) or (isinstance(n, ast.Name) and n.id in ATOMICS_TL)
                   for n in walk(func)):
            continue
        kernel = Kernel.build(func, aliases)
        params = [a.arg for a in func.args.args]
        zeroed = _zeroed_in_kernel(kernel)
        for call in kernel.calls(*ATOMICS_TL):
            pointer = argument(call, 0, "pointer")
            if pointer is None:
                continue
            reached = _names_reached(kernel, pointer)
            for index, name in enumerate(params):
                if name in kernel.constexprs or name not in reached or zeroed.get(name, call.lineno) < call.lineno:
                    continue  # a kernel that zeroes the slot it counts into before counting clears it itself
                out.setdefault(func.name, {}).setdefault(
                    index, (name, call.lineno, re.sub(r"\s+", " ", ast.unparse(call))[:90]))
    return out


def _zeroed_in_kernel(kernel: Kernel) -> dict[str, int]:
    """Parameter → first line where the kernel stores zeros through it (liger's and fla's histogram kernels:
    "partial_sum is not pre-cleared", so each program `tl.store`s `tl.zeros` into its own column first)."""
    out: dict[str, int] = {}
    for call in kernel.calls("store"):
        pointer, value = argument(call, 0, "pointer"), argument(call, 1, "value")
        if pointer is not None and _is_zero(value):
            for name in _names_reached(kernel, pointer):
                out[name] = min(out.get(name, call.lineno), call.lineno)
    return out


def _is_zero(value: ast.AST | None) -> bool:
    """`0`, `0.0`, `tl.zeros(...)`, `tl.full(shape, 0, ...)`."""
    if isinstance(value, ast.Constant):
        return value.value == 0 and not isinstance(value.value, bool)
    if isinstance(value, ast.Call):
        name = dotted_name(value.func).rsplit(".", 1)[-1]
        if name in ("zeros", "zeros_like"):
            return True
        if name == "full":
            fill = argument(value, 1, "value")
            return isinstance(fill, ast.Constant) and fill.value == 0
    return False


def _names_reached(kernel: Kernel, expr: ast.AST) -> set[str]:
    """Every name `expr` reaches through the kernel's assignments, a loaded value being opaque (one walk,
    instead of one `reaches` per parameter)."""
    return {node.id for node in kernel.reached(expr, opaque=kernel.is_load) if isinstance(node, ast.Name)}


def _is_empty_call(value: ast.AST) -> bool:
    return isinstance(value, ast.Call) and dotted_name(value.func).rsplit(".", 1)[-1] in EMPTY_PY


def _empty_allocations(func: ast.AST) -> dict[str, ast.Assign]:
    out = {}
    for node in walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _is_empty_call(node.value):
                out[node.targets[0].id] = node
    return out


def _cleared_py(func: ast.AST, name: str, after: int, before: int) -> bool:
    """`name` is zeroed, filled, copied into or rebound between two lines."""
    for node in walk(func):
        line = getattr(node, "lineno", 0)
        if not after < line <= before:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLEAR_METHODS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def _launches(func: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    """`kernel[grid](...)` launches in a host function."""
    for node in walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            name = dotted_name(node.func.value).rsplit(".", 1)[-1]
            if name:
                yield name, node


def _python_hits(review: ReviewInput) -> Iterator[Hit]:
    trees = {f.path: tree for f, tree in review.python_files(include_tests=False)}
    # Cheap first: the kernels some host function launches with a buffer it allocated with `empty`.
    # Only those kernels' atomics are followed (building a kernel's def-use map is the costly part).
    launched: set[str] = set()
    for tree in trees.values():
        index = index_of(tree)
        allocating: dict[ast.AST, None] = {}  # the defs an `x = empty(...)` lies in (nested ones: each)
        for a in index.of_type(ast.Assign):
            if len(a.targets) == 1 and isinstance(a.targets[0], ast.Name) and _is_empty_call(a.value):
                allocating.update((d, None) for d in index.ancestors(a) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)))
        for func in allocating:
            launched.update(kname for kname, _ in _launches(func))
    if not launched:
        return
    atomics: dict[str, tuple[str, dict[int, tuple[str, int, str]]]] = {}
    for path, tree in trees.items():
        if "atomic" not in (review.source.text(path) or ""):
            continue
        for name, params in _atomic_params(tree, launched).items():
            atomics[name] = (path, params)
    if not atomics:
        return
    added = {f.path: f.added_lines for f in review.files}
    writers: dict[str, tuple[list[str], set[int]]] = {}  # filled on first need
    for path, tree in trees.items():
        for func in index_of(tree).of_type((ast.FunctionDef, ast.AsyncFunctionDef)):
            empties = _empty_allocations(func)
            if not empties:
                continue
            for kname, call in _launches(func):
                if kname not in atomics:
                    continue
                kpath, params = atomics[kname]
                for index, (pname, aline, atext) in params.items():
                    value = argument(call, index, pname)
                    if not isinstance(value, ast.Name) or value.id not in empties:
                        continue
                    alloc = empties[value.id]
                    if alloc.lineno > call.lineno or _cleared_py(func, value.id, alloc.lineno, call.lineno):
                        continue
                    if _written_by_launch_py(func, value.id, alloc.lineno, call, trees, atomics, writers):
                        continue  # an earlier kernel writes the buffer first (an init or prefix-sum kernel)
                    new = (alloc.lineno in added.get(path, ()) or any(n in added.get(path, ()) for n in node_lines(call))
                           or aline in added.get(kpath, ()))
                    if new:
                        yield Hit(path, alloc.lineno, value.id, kname, call.lineno, kpath, aline, atext)


def _py_written_params(trees: dict[str, ast.Module]) -> dict[str, tuple[list[str], set[int]]]:
    """Triton kernel name → (its parameters, indices of those a plain `tl.store` writes through)."""
    out: dict[str, tuple[list[str], set[int]]] = {}
    for tree in trees.values():
        aliases = language_aliases(tree)
        for func in kernels(tree):
            kernel = Kernel.build(func, aliases)
            params = [a.arg for a in func.args.args]
            stored: set[int] = set()
            for call in kernel.calls("store"):
                pointer = argument(call, 0, "pointer")
                if pointer is not None:
                    reached = _names_reached(kernel, pointer)
                    stored.update(i for i, name in enumerate(params) if name in reached)
            out[func.name] = (params, stored)
    return out


def _written_by_launch_py(func: ast.AST, buffer: str, after: int, atomic_call: ast.Call, trees: dict[str, ast.Module],
                          atomics: dict[str, tuple[str, dict[int, tuple[str, int, str]]]],
                          writers: dict[str, tuple[list[str], set[int]]]) -> bool:
    """A kernel launched between the allocation and the atomic launch takes the buffer at a parameter it
    stores through (aiter 74c02af75f: the prefix-sum kernel writes every offset the placement kernel then
    bumps atomically). A kernel whose source is not among the changed files is taken to write what it is
    given; one that only accumulates into that parameter atomically does not count."""
    for kname, call in _launches(func):
        if call is atomic_call or not after < call.lineno < atomic_call.lineno:
            continue
        if not writers:
            writers.update(_py_written_params(trees))
        params, stored = writers.get(kname, ([], set()))
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Name) and arg.id == buffer:
                if kname not in writers or (index in stored and index not in atomics.get(kname, ("", {}))[1]):
                    return True
        for kw in call.keywords:
            if isinstance(kw.value, ast.Name) and kw.value.id == buffer and kw.arg:
                if kname not in writers or (kw.arg in params and params.index(kw.arg) in stored):
                    return True
    return False


# ------------------------------------------------------------------------------ C++ / HIP

def symbol_family(review: ReviewInput, path: str) -> list[str]:
    """The file and the headers of its symbol family: same directory and stem, or included by it."""
    stem, _, _ = path.rpartition(".")
    out = [path]
    text = review.source.text(path) or ""
    directory = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    included = [directory + m for m in re.findall(r'#\s*include\s*"([^"]+)"', text)]
    for candidate in [stem + s for s in (".cuh", ".h", ".hpp")] + included:
        if candidate != path and candidate not in out and review.source.exists(candidate):
            out.append(candidate)
    return out


def _cpp_atomic_params(text: str) -> dict[str, dict[int, tuple[int, str]]]:
    """Kernel/device function name → {parameter index: (line, atomic call text)}."""
    tree = cpp.parse(text)
    out: dict[str, dict[int, tuple[int, str]]] = {}
    for node in cpp.walk(tree.root_node):
        if node.type != "call_expression":
            continue
        name = cpp.text_of(node.child_by_field_name("function")).rsplit("::", 1)[-1]
        if not ATOMIC_CPP.search(name):
            continue
        args = node.child_by_field_name("arguments")
        func = cpp.enclosing_function(node)
        if args is None or func is None or not args.named_children:
            continue
        params = cpp.parameter_names(func)
        target = {n for n in re.findall(r"\b\w+\b", cpp.text_of(args.named_children[0]))}
        for index, pname in enumerate(params):
            if pname in target:
                out.setdefault(cpp.function_name(func), {}).setdefault(
                    index, (cpp.line_of(node), re.sub(r"\s+", " ", cpp.text_of(node))[:90]))
    return out


def _split_args(text: str) -> list[str]:
    """The top-level comma-separated arguments of a call, from the text just after its '('."""
    depth, current, out = 0, [], []
    for ch in text:
        if ch in ")]}":
            if depth == 0:
                out.append("".join(current))
                return out
            depth -= 1
        elif ch in "([{":
            depth += 1
        elif ch == "," and depth == 0:
            out.append("".join(current))
            current = []
            continue
        current.append(ch)
    return out


def _cpp_launches(body: str) -> Iterator[tuple[str, int, list[str]]]:
    """(kernel, offset in body, argument texts) of `<<<…>>>` launches and hipLaunchKernelGGL calls
    (tree-sitter's C++ grammar has no triple-chevron syntax, so launches are read from the text)."""
    for m in CPP_LAUNCH.finditer(body):
        yield m.group(1), m.start(), _split_args(body[m.end():])
    for m in re.finditer(r"\bhipLaunchKernelGGL\s*\(", body):
        args = _split_args(body[m.end():])
        if len(args) > 5:
            kernel = re.sub(r"<.*", "", args[0]).strip().strip("()").rsplit("::", 1)[-1]
            yield kernel, m.start(), args[5:]


def _cpp_hits(review: ReviewInput) -> Iterator[Hit]:
    for f in review.changed("cpp", include_tests=False):
        if not f.path.endswith(CPP_KERNEL_SUFFIXES) or not any(EMPTY_CPP.search(t) or "atomic" in t.lower()
                                                                for _, t in f.added):
            continue
        text = review.source.text(f.path)
        if text is None or not EMPTY_CPP.search(text):
            continue
        atomics: dict[str, tuple[str, dict[int, tuple[int, str]]]] = {}
        writers: dict[str, set[int]] = {}
        for member in symbol_family(review, f.path):
            member_text = text if member == f.path else review.source.text(member) or ""
            for name, params in _cpp_atomic_params(member_text).items():
                atomics.setdefault(name, (member, params))
            for name, indices in _cpp_written_params(member_text).items():
                writers.setdefault(name, set()).update(indices)
        if not atomics:
            continue
        yield from _cpp_file_hits(review, f, text, atomics, writers)


def _cpp_written_params(text: str) -> dict[str, set[int]]:
    """Kernel name → indices of pointer parameters it stores into (`p[i] = …`, `*p = …`): an init or
    producer kernel launched before the atomic one leaves the buffer written."""
    tree = cpp.parse(text)
    out: dict[str, set[int]] = {}
    for node in cpp.walk(tree.root_node):
        if node.type != "assignment_expression" or cpp.text_of(node.child_by_field_name("operator")) != "=":
            continue
        left = node.child_by_field_name("left")
        func = cpp.enclosing_function(node)
        if left is None or func is None or left.type not in ("subscript_expression", "pointer_expression"):
            continue
        target = left.child_by_field_name("argument")
        name = cpp.text_of(target)
        params = cpp.parameter_names(func)
        if name in params:
            out.setdefault(cpp.function_name(func), set()).add(params.index(name))
    return out


def _cpp_file_hits(review: ReviewInput, f: ChangedFile, text: str,
                   atomics: dict[str, tuple[str, dict[int, tuple[int, str]]]],
                   writers: dict[str, set[int]]) -> Iterator[Hit]:
    tree = cpp.parse(text)
    added = f.added_lines
    for start, end, _name in cpp.function_spans(tree):
        body_lines = text.splitlines()[start - 1:end]
        body = "\n".join(body_lines)
        allocations = {m.group(1): body[:m.start()].count("\n") + start
                       for m in re.finditer(r"\b(\w+)\s*=\s*[\w:<>]*?" + EMPTY_CPP.pattern, body)}
        if not allocations:
            continue
        for kernel, offset, args in _cpp_launches(body):
            if kernel not in atomics:
                continue
            launch_line = body[:offset].count("\n") + start
            apath, params = atomics[kernel]
            for index, (aline, atext) in params.items():
                if index >= len(args):
                    continue
                for buffer in set(re.findall(r"\b\w+\b", args[index])) & set(allocations):
                    alloc_line = allocations[buffer]
                    between = "\n".join(body_lines[alloc_line - start + 1:launch_line - start])
                    if alloc_line > launch_line or _cleared_cpp(between, buffer) or \
                            _written_by_launch(between, buffer, writers):
                        continue
                    new = alloc_line in added or launch_line in added or (apath == f.path and aline in added)
                    if new:
                        yield Hit(f.path, alloc_line, buffer, kernel, launch_line, apath, aline, atext)


def _written_by_launch(between: str, buffer: str, writers: dict[str, set[int]]) -> bool:
    """A kernel launched between allocation and the atomic launch stores into the buffer first."""
    for kernel, _, args in _cpp_launches(between):
        for index in writers.get(kernel, ()):
            if index < len(args) and re.search(rf"\b{re.escape(buffer)}\b", args[index]):
                return True
    return False


def _cleared_cpp(between: str, buffer: str) -> bool:
    b = re.escape(buffer)
    return bool(re.search(rf"\b{b}\s*\.\s*(zero_|fill_)\s*\(|[Mm]emset\w*\s*\([^;]*\b{b}\b|\b{b}\s*=(?!=)", between))


@detector("atomic-on-uninitialized")
def atomic_on_uninitialized(review: ReviewInput) -> Iterable[Finding]:
    seen = set()
    for hit in list(_python_hits(review)) + list(_cpp_hits(review)):
        if (hit.path, hit.line) not in seen:
            seen.add((hit.path, hit.line))
            yield _finding(hit)
