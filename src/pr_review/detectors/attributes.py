"""B5 (api-propagation-incomplete): new code reads an attribute of `self` that its class never binds.

A method of `CoreManager` starts reading `self._flush_fn`, but only a subclass's `__init__` and another
module (`engine.core_mgr._flush_fn = f`) ever bind it: every instance built from `CoreManager` itself raises
AttributeError on that line (ATOM #1741, where the offline entry point built the plain manager and hung).

Decided from the class, its bases in the tree and the tree's constructions of it. A class is not decided
when any base lies outside the tree (`nn.Module` answers unknown names through `__getattr__`), when it or a
base defines `__getattr__`, calls `setattr` or has a decorator or metaclass that may add attributes; a read
guarded by `hasattr` or an `except AttributeError` is deliberate. Only a construction of the class itself
that does not bind the attribute right after is evidence that an instance lacks it.
"""
from __future__ import annotations

import ast
from typing import Iterable, Iterator

from ..lang.index import index_of
from ..lang.python import MARKER_BASES, dotted_name, imported_module_path, walk
from ..model import Evidence, Finding, record
from . import detector
from .base import ReviewInput

HARMLESS_DECORATORS = {"dataclass", "dataclasses.dataclass", "total_ordering", "functools.total_ordering", "final"}
DYNAMIC_ACCESS = {"__getattr__", "__getattribute__", "__setattr__"}
MAX_BASE_DEPTH = 8


@record(frozen=True)
class ClassAt:
    path: str
    tree: ast.Module
    node: ast.ClassDef


def _own_bindings(cls: ast.ClassDef) -> set[str] | None:
    """Names the class binds itself: class-level assignments and defs, and `self.<name>` stores in its
    methods; None when it may bind names no reader can list (setattr, `__dict__`, a decorator or metaclass)."""
    if cls.keywords or any(dotted_name(d.func if isinstance(d, ast.Call) else d) not in HARMLESS_DECORATORS
                           for d in cls.decorator_list):
        return None
    names: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name in DYNAMIC_ACCESS:
                return None
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(n.id for t in targets for n in walk(t) if isinstance(n, ast.Name))
    for node in walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if node.attr == "__dict__":
                return None
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.attr)
        elif isinstance(node, ast.Call) and dotted_name(node.func) in ("setattr", "vars", "object.__setattr__"):
            return None
    return names


def _top_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    found = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == name]
    return found[-1] if found else None


def resolve_base(review: ReviewInput, at: ClassAt, name: str) -> ClassAt | None:
    """The class a base name denotes: one defined at the top of the same module, or imported by name from a
    module of the repository; None for anything else (a dotted base, a third-party class)."""
    if "." in name:
        return None
    own = _top_class(at.tree, name)
    if own is not None and own is not at.node:
        return ClassAt(at.path, at.tree, own)
    for node in index_of(at.tree).of_type(ast.ImportFrom):
        for alias in node.names:
            if (alias.asname or alias.name) != name:
                continue
            module = imported_module_path(at.path, node)
            for candidate in (f"{module}.py", f"{module}/__init__.py"):
                tree = review.source.python(candidate) if review.source.exists(candidate) else None
                cls = _top_class(tree, alias.name) if tree is not None else None
                if cls is not None:
                    return ClassAt(candidate, tree, cls)
    return None


def _bound_in_family(review: ReviewInput, at: ClassAt, depth: int = 0) -> set[str] | None:
    """Every name the class or one of its bases binds; None when some part of the family cannot be read."""
    names = _own_bindings(at.node)
    if names is None or depth > MAX_BASE_DEPTH:
        return None
    for base in at.node.bases:
        name = dotted_name(base.value if isinstance(base, ast.Subscript) else base)
        if name.rsplit(".", 1)[-1] in MARKER_BASES:
            continue
        parent = resolve_base(review, at, name)
        inherited = _bound_in_family(review, parent, depth + 1) if parent is not None else None
        if inherited is None:
            return None
        names |= inherited
    return names


def _guarded(read: ast.Attribute, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside `if hasattr(self, "x")` or a `try` that catches AttributeError: the author expects it unbound."""
    node: ast.AST = read
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and any(
                isinstance(n, ast.Call) and dotted_name(n.func) == "hasattr" and len(n.args) == 2
                and isinstance(n.args[1], ast.Constant) and n.args[1].value == read.attr for n in walk(node.test)):
            return True
        if isinstance(node, ast.Try) and any(
                h.type is None or any(dotted_name(t) in ("AttributeError", "Exception", "BaseException")
                                      for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]))
                for h in node.handlers):
            return True
        if isinstance(node, (ast.ClassDef, ast.Module)):
            return False
    return False


def _new_unbound_reads(review: ReviewInput, path: str, tree: ast.Module, added: set[int]
                       ) -> Iterator[tuple[ClassAt, ast.FunctionDef | ast.AsyncFunctionDef, ast.Attribute]]:
    parents = index_of(tree).parents
    for cls in index_of(tree).of_type(ast.ClassDef):
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and m.args.args and m.args.args[0].arg == "self"]
        reads = [(m, n) for m in methods for n in walk(m) if isinstance(n, ast.Attribute) and n.lineno in added
                 and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) and n.value.id == "self"
                 and not n.attr.startswith("__")]
        if not reads:
            continue
        at = ClassAt(path, tree, cls)
        bound = _bound_in_family(review, at)
        if bound is None:
            continue
        reported: set[str] = set()
        for method, read in reads:
            if read.attr not in bound and read.attr not in reported and not _guarded(read, parents):
                reported.add(read.attr)
                yield at, method, read


def _read_on_base(review: ReviewInput, cls: ast.ClassDef, attr: str) -> bool:
    """The base tree's class of that name already read the attribute: code moved or re-indented, not new."""
    for path in review.source.grep_words([attr], "base")[attr]:
        with review.source.python_once(path, "base") as tree:
            if tree is not None and any(
                    isinstance(c, ast.ClassDef) and c.name == cls.name and any(
                        isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name)
                        and n.value.id == "self" for n in walk(c))
                    for c in index_of(tree).of_type(ast.ClassDef)):
                return True
    return False


def _referenced(review: ReviewInput, method: ast.AST, files: list[str]) -> bool:
    """Something other than its own def names the method: a call, a thread target, a callback. A method
    nothing reaches cannot raise, whatever it reads."""
    name = method.name  # type: ignore[attr-defined]
    for path in files:
        with review.source.python_once(path) as tree:
            if tree is not None and any(
                    (isinstance(n, ast.Attribute) and n.attr == name) or (isinstance(n, ast.Name) and n.id == name)
                    for n in walk(tree)):
                return True
    return False


def _binds_after(call: ast.Call, attr: str, scope: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """`x = C(...)` followed, in the same function, by `x.<attr> = …`: the construction completes the object."""
    holder = parents.get(call)
    if not isinstance(holder, ast.Assign) or len(holder.targets) != 1:
        return False
    target = ast.unparse(holder.targets[0])
    return any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and n.attr == attr
               and ast.unparse(n.value) == target for n in walk(scope))


def _constructions(review: ReviewInput, cls: ast.ClassDef, attr: str, files: list[str]) -> list[tuple[str, int]]:
    """Where the tree builds the class itself (not a subclass) and does not bind `attr` on the result."""
    out = []
    for path in files:
        with review.source.python_once(path) as tree:
            if tree is None:
                continue
            index = index_of(tree)
            for call in index.calls_to(cls.name):
                if dotted_name(call.func).rsplit(".", 1)[-1] != cls.name:
                    continue
                if not _binds_after(call, attr, index.scope_of(call), index.parents):
                    out.append((path, call.lineno))
    return out


def _binders(review: ReviewInput, attr: str, files: list[str]) -> list[tuple[str, int, str]]:
    """Where anything else binds the attribute: a subclass's `self.<attr> = …`, another object's `x.<attr> = …`."""
    out = []
    for path in files:
        with review.source.python_once(path) as tree:
            if tree is None:
                continue
            for node in index_of(tree).of_type(ast.Attribute):
                if isinstance(node.ctx, ast.Store) and node.attr == attr:
                    out.append((path, node.lineno, f"{ast.unparse(node.value)}.{attr} = …"))
    return out


@detector("api-propagation-incomplete")
def attribute_never_bound(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("python", include_tests=False):
        tree = review.source.python(f.path)
        if tree is None or not f.added_lines:
            continue
        for at, method, read in _new_unbound_reads(review, f.path, tree, f.added_lines):
            cls, attr = at.node, read.attr
            files = review.source.grep_words([cls.name, attr, method.name])
            built = _constructions(review, cls, attr, files.get(cls.name, []))
            if not built:
                continue  # never built as itself: a base or mixin whose subclasses may all bind it
            if not _referenced(review, method, files.get(method.name, [])) or _read_on_base(review, cls, attr):
                continue
            binders = _binders(review, attr, files.get(attr, []))
            where_bound = ("; it is bound only elsewhere: " + ", ".join(f"{p}:{n} (`{t}`)" for p, n, t in binders[:3])
                           if binders else "; nothing in the tree binds it")
            site = f"{built[0][0]}:{built[0][1]}"
            yield Finding(
                rule="api-propagation-incomplete", path=f.path, line=read.lineno, severity="medium",
                problem=(f"`{cls.name}` now reads `self.{attr}` ({f.path}:{read.lineno}), but neither "
                         f"`{cls.name}` nor its bases ever bind it{where_bound}. A `{cls.name}` built as itself, "
                         f"as at {site}, raises AttributeError there."),
                impact=("The attribute exists only on the instances some other code path prepared, so the new "
                        "line fails on every other path (a plain instance, an offline entry point, a test)."),
                action=(f"Author must bind `self.{attr}` in `{cls.name}.__init__` (with its neutral value), or read "
                        f"it with `getattr(self, \"{attr}\", None)` where its absence is expected."),
                tag="verified",
                evidence=[Evidence(f.path, read.lineno, f"self.{attr}"), Evidence(*built[0], f"{cls.name}(…)")]
                         + [Evidence(p, n, t) for p, n, t in binders[:3]],
            )
