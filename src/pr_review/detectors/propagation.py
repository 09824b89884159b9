"""api-propagation-incomplete, sub-type path-dropped: a value one call path passes and a sibling path drops.

ATOM #860 added `RapidServeModelRunner.prefill_forward`, which unpacks `needs_independent_noise` from
`self.prepare_model(batch)` exactly as the decode path does, then calls `self.sampler(logits, …)` without
it — while `postprocess`, on the decode path, passes `needs_independent_noise=needs_independent_noise` to the
same sampler. `Sampler.forward` defaults the flag to False, so prefill silently samples fan-out siblings
with shared noise.

Decided from the head module's syntax: two calls of one callee in different functions of the module (for
`self.x(…)`, methods of one class or of a class and its base in the module), where call A passes a local
name `v` for parameter `k` and the function around call B binds `v` — by assignment or unpacking — and never
reads it, and B does not pass `k`. The callee is resolved in the tree (a def of the module or one imported
by name, a method of the class family, the `forward`/`__call__` of the class `self.x` is built from) and must
take `k` with a default (else B would fail loudly) and read it. Quiet when B forwards `*args`/`**kwargs`,
when a comment or docstring in B's function names `v` or `k` (the path documents why it does not apply),
when `v` starts with `_`, and when the PR touched none of call A's argument, call B or the binding.
"""
from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable

from ..git.diff import ChangedFile
from ..lang.index import index_of
from ..lang.python import FUNCTION_TYPES, comments, dotted_name, imported_module_path, node_lines, walk
from ..model import Evidence, Finding, record
from . import detector
from .api import api_path, defaults_of, names_read, param_names, passes
from .attributes import ClassAt, resolve_base
from .base import ReviewInput

Func = ast.FunctionDef | ast.AsyncFunctionDef
Slot = str | int  # a keyword name, or a positional index


@record(frozen=True)
class _Site:
    call: ast.Call
    func: Func  # the function the call sits in
    cls: ast.ClassDef | None  # the class that function is a method of


@record(frozen=True)
class _Callee:
    path: str
    func: Func
    qualname: str


@detector("api-propagation-incomplete")
def path_dropped(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if api_path(review, f.path):
            yield from _path_dropped(review, f, tree)


def _path_dropped(review: ReviewInput, f: ChangedFile, tree: ast.Module) -> Iterable[Finding]:
    notes: list[tuple[int, str]] | None = None
    reported: set[int] = set()
    for key, a, slot, value, b, bound_at in _candidates(tree, f.added_lines):
        if id(b.call) in reported or not _related(review, f.path, tree, key, a, b):
            continue
        callee = _resolve(review, f.path, tree, key, b)
        if callee is None:
            continue
        param = _param_for(callee.func, slot)
        if param is None or param not in defaults_of(callee.func) or passes(b.call, callee.func, param) is not False:
            continue
        if not _loads(callee.func, param):
            continue  # the callee ignores it: dropping it changes nothing
        if notes is None:
            notes = comments(review.source.text(f.path) or "")
        if _documented(b.func, notes, {value.id, param}):
            continue
        reported.add(id(b.call))
        yield _finding(f.path, key, a, b, value, param, bound_at, callee)


def _candidates(tree: ast.Module, added: set[int]) -> Iterable[tuple[str, _Site, Slot, ast.Name, _Site, int]]:
    """Call A passing local `value` in `slot`, call B of the same callee in another function that binds
    `value` and never reads it, B forwarding no catch-all, and the PR touching A's argument, B or the binding."""
    dead: dict[ast.AST, dict[str, int]] = {}
    touched: dict[ast.AST, bool] = {}

    def edited(func: Func) -> bool:  # A's argument lies in A's function, the binding and B in B's
        if func not in touched:
            touched[func] = not added.isdisjoint(node_lines(func))
        return touched[func]

    # names stored and read in the tree by line, to ask which a function's lines bind and never read (nested
    # scopes included: a superset of the dead bindings, enough to pass over the functions that have none)
    by_line: tuple[tuple[list[int], list[str]], ...] | None = None  # stores, loads: sorted on first need (most files have no pair)
    stored: dict[ast.AST, set[str]] = {}
    # callees no function around whose calls holds a line the PR added are left out: no pair can qualify
    for key, calls in _sites_by_callee(tree, edited).items():
        edited_sites = [site for site in calls if edited(site.func)]
        passed = {id(site): {value.id for _, value in _name_arguments(site.call)} for site in calls}
        passed_by_all = set().union(*passed.values())
        passed_by_edited = set().union(*(passed[id(site)] for site in edited_sites))
        for b in calls:
            if any(isinstance(x, ast.Starred) for x in b.call.args) or any(k.arg is None for k in b.call.keywords):
                continue  # B forwards a catch-all: what it passes cannot be told
            wanted = passed_by_all if edited(b.func) else passed_by_edited  # a superset of what B's partners pass
            if b.func not in stored:
                if by_line is None:
                    names = index_of(tree).of_type(ast.Name)
                    by_line = (_by_line(n for n in names if isinstance(n.ctx, ast.Store)),
                               _by_line(n for n in names if not isinstance(n.ctx, ast.Store)))
                span = node_lines(b.func)
                stored[b.func] = _in_span(by_line[0], span) - _in_span(by_line[1], span)
            if not wanted & stored[b.func]:
                continue  # B's function leaves none of the names the other calls pass bound and unread
            if b.func not in dead:
                dead[b.func] = _dead_bindings(tree, b.func)
            if not dead[b.func]:
                continue
            for a in (calls if edited(b.func) else edited_sites):
                if a.func is b.func:
                    continue
                for slot, value in _name_arguments(a.call):
                    bound_at = dead[b.func].get(value.id)
                    if bound_at is not None and ({value.lineno, bound_at} | set(node_lines(b.call))) & added:
                        yield key, a, slot, value, b, bound_at


def _by_line(names: Iterable[ast.Name]) -> tuple[list[int], list[str]]:
    pairs = sorted((n.lineno, n.id) for n in names)
    return [line for line, _ in pairs], [name for _, name in pairs]


def _in_span(by_line: tuple[list[int], list[str]], span: range) -> set[str]:
    lines, names = by_line
    return set(names[bisect_left(lines, span.start):bisect_right(lines, span.stop - 1)])


def _sites_by_callee(tree: ast.Module, edited: Callable[[Func], bool]) -> dict[str, list[_Site]]:
    """Calls by dotted callee name, each with the function (and class) around it; only callees called from
    two or more functions of the module, one of them `edited`."""
    index = index_of(tree)
    by_key: dict[str, list[tuple[ast.Call, Func]]] = defaultdict(list)
    for call in index.of_type(ast.Call):
        key = dotted_name(call.func)
        if not key:
            continue
        scope = index.scope_of(call)
        if isinstance(scope, FUNCTION_TYPES):
            by_key[key].append((call, scope))
    out: dict[str, list[_Site]] = {}
    for key, calls in by_key.items():
        if len({id(func) for _, func in calls}) > 1 and any(edited(func) for _, func in calls):
            out[key] = [_Site(call, func, owner if isinstance(owner := index.parents.get(func), ast.ClassDef) else None)
                        for call, func in calls]
    return out


def _name_arguments(call: ast.Call) -> Iterable[tuple[Slot, ast.Name]]:
    """The plain local names a call passes, with the keyword or position they fill."""
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return
        if isinstance(arg, ast.Name):
            yield i, arg
    for kw in call.keywords:
        if kw.arg and isinstance(kw.value, ast.Name):
            yield kw.arg, kw.value


def _related(review: ReviewInput, path: str, tree: ast.Module, key: str, a: _Site, b: _Site) -> bool:
    """`self.x(…)` means one callee only within one class family (a class and the bases the tree defines); any
    other name means the same callee throughout the module."""
    if not key.startswith("self."):
        return True
    if a.cls is None or b.cls is None:
        return False
    return any(a.cls is m.node for m in _family(review, ClassAt(path, tree, b.cls))) or \
        any(b.cls is m.node for m in _family(review, ClassAt(path, tree, a.cls)))


def _dead_bindings(tree: ast.Module, func: Func) -> dict[str, int]:
    """Names the function itself binds by assignment or unpacking and never reads (nested scopes and `del`
    count as reads), with the line of the first binding; `_`-prefixed names are deliberate discards."""
    reads, dynamic = names_read(func)
    if dynamic:
        return {}
    index = index_of(tree)
    out: dict[str, int] = {}
    for node in walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and index.scope_of(node) is func:
            if isinstance(node, ast.AnnAssign) and node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _target_names(target):
                    if name not in reads and not name.startswith("_"):
                        out.setdefault(name, node.lineno)
    return out


def _target_names(target: ast.AST) -> Iterable[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _param_for(func: Func, slot: Slot) -> str | None:
    names = param_names(func)
    if isinstance(slot, str):
        return slot if slot in names else None
    positional = [a.arg for a in func.args.posonlyargs + func.args.args]
    if positional and positional[0] in ("self", "cls"):
        slot += 1
    return positional[slot] if slot < len(positional) else None


def _loads(func: Func, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(func))


def _documented(func: Func, notes: list[tuple[int, str]], names: set[str]) -> bool:
    """A comment or the docstring inside B's function names the value or the parameter: the path says
    why it does not pass it."""
    lines = node_lines(func)
    texts = [text for line, text in notes if line in lines]
    doc = ast.get_docstring(func)
    if doc:
        texts.append(doc)
    return any(name in text for text in texts for name in names)


# --------------------------------------------------------------------------------------------
# the callee, resolved in the tree
# --------------------------------------------------------------------------------------------

def _resolve(review: ReviewInput, path: str, tree: ast.Module, key: str, site: _Site) -> _Callee | None:
    parts = key.split(".")
    if parts[0] == "self" and len(parts) == 2:
        return _self_callee(review, ClassAt(path, tree, site.cls), parts[1]) if site.cls is not None else None
    if len(parts) == 1:
        found = [(p, other, d) for p, other in _modules_binding(review, path, tree, key)
                 for d in other.body if isinstance(d, (*FUNCTION_TYPES, ast.ClassDef)) and d.name == key]
        if len(found) != 1:
            return None  # unknown, or one name for several defs (arch switches): not one signature to read
        where, other, node = found[0]
        return _entry(ClassAt(where, other, node), "__init__") if isinstance(node, ast.ClassDef) else \
            _Callee(where, node, key)
    return _module_function(review, path, tree, parts)


def _modules_binding(review: ReviewInput, path: str, tree: ast.Module, name: str) -> Iterable[tuple[str, ast.Module]]:
    """The module itself, then each module of the tree it imports `name` from (`from m import name`)."""
    yield path, tree
    for node in index_of(tree).of_type(ast.ImportFrom):
        if any((a.asname or a.name) == name and a.name == name for a in node.names):
            module = imported_module_path(path, node)
            for candidate in (f"{module}.py", f"{module}/__init__.py"):
                other = review.source.python(candidate) if review.source.exists(candidate) else None
                if other is not None:
                    yield candidate, other


def _family(review: ReviewInput, at: ClassAt, depth: int = 0) -> Iterable[ClassAt]:
    """The class and its bases that the tree defines, nearest first."""
    yield at
    if depth >= 8:
        return
    for base in at.node.bases:
        parent = resolve_base(review, at, dotted_name(base))
        if parent is not None:
            yield from _family(review, parent, depth + 1)


def _entry(at: ClassAt, *names: str) -> _Callee | None:
    for name in names:
        for item in at.node.body:
            if isinstance(item, FUNCTION_TYPES) and item.name == name:
                return _Callee(at.path, item, f"{at.node.name}.{name}")
    return None


def _self_callee(review: ReviewInput, at: ClassAt, attr: str) -> _Callee | None:
    """`self.attr(…)`: a method of the class family, else the `forward`/`__call__` of the class whose
    instance the family binds to `self.attr`."""
    family = list(_family(review, at))
    for member in family:
        method = _entry(member, attr)
        if method is not None:
            return method
    built = {dotted_name(node.value.func) for member in family for node in walk(member.node)
             if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and any(dotted_name(t) == f"self.{attr}" for t in node.targets)}
    if len(built) != 1:
        return None
    cls = resolve_base(review, at, built.pop())
    if cls is None:
        return None
    for member in _family(review, cls):
        entry = _entry(member, "forward", "__call__")
        if entry is not None:
            return entry
    return None


def _module_function(review: ReviewInput, path: str, tree: ast.Module, parts: list[str]) -> _Callee | None:
    """`mod.f(…)` where the module binds `mod` by `import a.b as mod`, `import a.b` or `from a import mod`."""
    head, name = ".".join(parts[:-1]), parts[-1]
    modules: list[str] = []
    for node in index_of(tree).of_type((ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if isinstance(node, ast.Import) and (alias.asname == head or (not alias.asname and alias.name == head)):
                modules.append(alias.name.replace(".", "/"))
            elif isinstance(node, ast.ImportFrom) and (alias.asname or alias.name) == head:
                modules.append(f"{imported_module_path(path, node)}/{alias.name}")
    for module in modules:
        for candidate in (f"{module}.py", f"{module}/__init__.py"):
            other = review.source.python(candidate) if review.source.exists(candidate) else None
            if other is None:
                continue
            found = [d for d in other.body if isinstance(d, FUNCTION_TYPES) and d.name == name]
            if len(found) == 1:
                return _Callee(candidate, found[0], name)
    return None


def _finding(path: str, key: str, a: _Site, b: _Site, value: ast.Name, param: str, bound_at: int,
             callee: _Callee) -> Finding:
    default = ast.unparse(defaults_of(callee.func)[param])
    passed = f"{param}={value.id}"
    return Finding(
        rule="api-propagation-incomplete", path=path, line=b.call.lineno,
        problem=f"path-dropped: `{b.func.name}` binds `{value.id}` (line {bound_at}) and never uses it, then calls "
                f"`{key}(…)` without `{param}`, while `{a.func.name}` (line {a.call.lineno}) passes `{passed}` to the "
                f"same callee; `{callee.qualname}` ({callee.path}:{callee.func.lineno}) falls back to "
                f"`{param}={default}` on this path.",
        impact=f"The `{b.func.name}` path runs `{callee.qualname}` with the default `{param}={default}` instead of "
               f"the value it computed: whatever `{param}` decides is silently different from the "
               f"`{a.func.name}` path.",
        action=f"Author must pass `{param}={value.id}` at this call, or say in a comment why this path needs the "
               f"default (and stop computing `{value.id}`).",
        tag="inferred", severity="medium",
        evidence=[Evidence(path, a.call.lineno, f"{a.func.name}: {key}(…, {passed})"),
                  Evidence(path, bound_at, f"{b.func.name}: binds {value.id}, never read"),
                  Evidence(callee.path, callee.func.lineno, f"{callee.qualname}: {param}={default}")],
    )
