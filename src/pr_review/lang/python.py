"""Python (and Triton, which is Python syntax) helpers over the standard `ast` and `tokenize`."""
from __future__ import annotations

import ast
import io
import tokenize
import warnings
import weakref
from collections import deque
from typing import Iterable, Iterator

from . import Unparsable, one_line

# Deepest tree handed to the detectors: they walk trees recursively (`ast.unparse`, NodeVisitor) at
# about three frames per level, so a deeper tree (a 700-term `a + a + …`) would overflow the stack
# inside a detector and cost every file that detector reads. Real code nests a few dozen levels.
MAX_TREE_DEPTH = 200


def parse(text: str, filename: str = "<pr>") -> ast.Module:
    """`ast.parse` for PR content: warnings are never printed (Python writes them to stderr starting
    with the file name, which the Actions runner executes when the name is `::error::x.py`), and
    every way the parser can fail, or build a tree too deep to walk, raises `Unparsable`."""
    tree = _parse(text, filename, "exec")
    assert isinstance(tree, ast.Module)
    return tree


def parse_expression(text: str) -> ast.expr:
    """One expression of PR content (a guard's condition), parsed like `parse`."""
    tree = _parse(text, "<pr>", "eval")
    assert isinstance(tree, ast.Expression)
    return tree.body


def _parse(text: str, filename: str, mode: str) -> ast.AST:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text, filename=filename, mode=mode)
        except SyntaxError as exc:
            raise Unparsable(f"not valid Python (line {exc.lineno})") from exc
        except (RecursionError, MemoryError) as exc:
            raise Unparsable(f"nested too deeply for the Python parser ({type(exc).__name__})") from exc
        except ValueError as exc:  # a null byte (3.11)
            raise Unparsable(f"not valid Python ({exc})") from exc
    from .index import index_of  # here: the index builds on this module's helpers

    # the one walk that measures the depth also builds the tree's index, which the detectors read
    if index_of(tree).depth > MAX_TREE_DEPTH:
        raise Unparsable(f"nested more than {MAX_TREE_DEPTH} levels deep")
    return tree


# The node types the parser shares between every node that holds one (one `Load()`, one `Add()`): a
# context or an operator, with no fields and no children, read from its holder (`name.ctx`, `binop.op`).
SHARED_LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


class _ChildFields(dict):
    """Per node type, the fields that can hold nodes, as (name, holds a list): read once per type from
    the ASDL signature Python gives as the class docstring (`Name(identifier id, expr_context ctx)`).
    identifier/string/constant/int fields never hold a node, so walks skip them (a third of a walk's
    time); a `*` field is a list, whose None entries (`Dict.keys` for `**d`) are not nodes. A type
    whose signature does not read back as its `_fields` keeps every field, checked at run time
    (holds a list: None) as `ast.iter_child_nodes` does. `skipped`: the ASDL types of fields to leave
    out besides the scalars."""

    SCALARS = frozenset({"identifier", "string", "constant", "int"})

    def __init__(self, skipped: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.skipped = self.SCALARS | skipped
        self.leafy: set[type] = set()  # the types that hold a field left out for its ASDL type, not a scalar

    def __missing__(self, kind: type) -> tuple[tuple[str, bool | None], ...]:
        fields: tuple[str, ...] = getattr(kind, "_fields", ())
        doc = (kind.__doc__ or "").strip()
        head, _, rest = doc.partition("(")
        declared = [d.strip().rsplit(" ", 1) for d in rest[:-1].split(",")] if rest.endswith(")") else []
        if fields and head == kind.__name__ and [d[-1] for d in declared] == list(fields) \
                and all(len(d) == 2 for d in declared):
            spec = tuple((name, kind_.endswith("*")) for kind_, name in declared
                         if kind_.rstrip("?*") not in self.skipped)
            if any(kind_.rstrip("?*") in self.skipped - self.SCALARS for kind_, _ in declared):
                self.leafy.add(kind)
        else:
            spec = tuple((name, None) for name in fields)
        self[kind] = spec
        return spec


CHILD_FIELDS = _ChildFields()
# The fields a tree's index walks: every child but the shared leaves (a third of a tree's nodes).
INDEXED_FIELDS = _ChildFields(frozenset(leaf.__name__ for leaf in SHARED_LEAVES))


def push_children(node: ast.AST, push, extend, fields: _ChildFields = CHILD_FIELDS) -> None:
    """Hand `node`'s child nodes, in field order, to `push` (one) and `extend` (a list of them); the
    children `fields` reads (by default, every one)."""
    for name, many in fields[type(node)]:
        value = getattr(node, name, None)
        if many:
            extend(value if None not in value else [item for item in value if item is not None])
        elif many is None:
            if type(value) is list:
                extend([item for item in value if isinstance(item, ast.AST)])
            elif isinstance(value, ast.AST):
                push(value)
        elif value is not None:
            push(value)


WALK_ATTRIBUTE = "_pr_review_walk"  # not an AST field: ast.dump, unparse and compare ignore it
KEPT_WALKS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk`: every node under `node`, itself first, breadth first, children in field order,
    and as lazily (a node's children are read when it is yielded). One generator for the whole walk
    reading only the fields that can hold nodes, where `ast.walk` runs two per node
    (`iter_child_nodes`, `iter_fields`): about twice as fast, and walks were a fifth of a large
    review's time. For a whole tree or a function asked repeatedly, `index_of(node).nodes` /
    `.of_type(...)` walks once and keeps the list."""
    if type(node) not in KEPT_WALKS:
        todo = deque((node,))
        pop, push, extend = todo.popleft, todo.append, todo.extend
        while todo:
            node = pop()
            push_children(node, push, extend)
            yield node
        return
    # A def or class is walked again and again (every detector and evidence collector reads the
    # functions it cares about: aiter 044f906a8d walks 917 defs 1,906 times). A walk that runs to
    # its end leaves its nodes on the def, and a later walk reads them. Kept without the def itself,
    # so no cycle holds a tree a look read once (`Source.python_once`) alive; under the def's id, so
    # a copy of the def (`copy.deepcopy`, then changed) does not read the original's nodes. Trees
    # are never changed in place (see lang.index).
    root = node
    kept = root.__dict__.get(WALK_ATTRIBUTE)
    if kept is not None and kept[0] == id(root):
        yield root
        yield from kept[1]
        return
    below: list[ast.AST] = []
    todo: deque[ast.AST] = deque()
    pop, push, extend, keep = todo.popleft, todo.append, todo.extend, below.append
    push_children(root, push, extend)
    yield root
    while todo:
        node = pop()
        push_children(node, push, extend)
        keep(node)
        yield node
    root.__dict__[WALK_ATTRIBUTE] = (id(root), below)


def children(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))`, without its two generators."""
    out: list[ast.AST] = []
    push_children(node, out.append, out.extend)
    return out


def tokens(text: str) -> list[tokenize.TokenInfo]:
    """Every token of PR content, with warnings captured like `parse`; `Unparsable` when the text
    does not tokenize. A list, not a generator: the warning filter must not outlive this call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError, RecursionError, MemoryError) as exc:  # IndentationError is a SyntaxError
            raise Unparsable(f"not valid Python ({type(exc).__name__})") from exc


def quoted(node: ast.AST, limit: int = 90) -> str:
    """A node's source, as a finding quotes PR code (one line, cut to `limit`)."""
    return one_line(ast.unparse(node), limit)


def call_tail(call: ast.Call) -> str:
    """The last name of a call's callee: `tl.load(…)` → `load`, `f(…)` → `f`, '' for anything else."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def dotted_callee(call: ast.Call, tails: tuple[str, ...] | frozenset[str] | set[str]) -> str:
    """The callee's dotted name (`sys.path.insert`) when its last name is one of `tails`, else ''. The last
    name is read first: most calls are none of them and cost no walk of their callee."""
    return dotted_name(call.func) if call_tail(call) in tails else ""


def dotted_name(node: ast.AST) -> str:
    """`os.environ.get` for the expression `os.environ.get`; '' when not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


# Bases that give a class no behaviour or instance attribute of their own: a class with only these is its own whole
MARKER_BASES = frozenset({"object", "ABC", "Generic", "Protocol"})


def imported_module_path(path: str, node: ast.ImportFrom) -> str:
    """The repository path, without `.py`, of the module a `from … import` in the file at `path` names;
    a relative import is resolved against the file's package. The module is `<it>.py` or `<it>/__init__.py`."""
    if not node.level:
        return (node.module or "").replace(".", "/")
    package = path.split("/")[:-node.level]
    return "/".join(package + (node.module.split(".") if node.module else []))


def ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterator[ast.AST]:
    while node in parents:
        node = parents[node]
        yield node


FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def innermost_function(func: ast.AST, node: ast.AST) -> ast.AST:
    """The innermost function or lambda inside `func` (or `func` itself) that contains `node`."""
    stack = [(func, func)]
    while stack:
        current_node, owner = stack.pop()
        for child in ast.iter_child_nodes(current_node):
            if child is node:
                return owner
            stack.append((child, child if isinstance(child, (*FUNCTION_TYPES, ast.Lambda)) else owner))
    return func


def local_names(func: ast.AST) -> set[str]:
    """The names a function or lambda binds as its own locals: its parameters and every name it stores,
    imports or catches in its own body (not in a nested def, class or lambda), less those it declares
    `global`/`nonlocal`. A read of one of these in `func` is the local, never a module-level def."""
    args = func.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    declared: set[str] = set()
    todo = list(func.body) if isinstance(func.body, list) else [func.body]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        if isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)):
            names.add(node.name)  # binds its name here; its body is its own scope
            todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        todo.extend(children(node))
    return names - declared


def is_module_level(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when no function, class or lambda encloses `node` (module-level `if`/`try` count)."""
    return not any(isinstance(a, SCOPE_TYPES) for a in ancestors(node, parents))


def node_lines(node: ast.AST) -> range:
    start = getattr(node, "lineno", 0)
    return range(start, (getattr(node, "end_lineno", None) or start) + 1)


def comments(text: str) -> list[tuple[int, str]]:
    """(line, comment text without '#') for every comment token; [] when tokenizing fails."""
    try:
        return [(tok.start[0], tok.string.lstrip("#").strip()) for tok in tokens(text) if tok.type == tokenize.COMMENT]
    except Unparsable:
        return []


def string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "literal"` bindings, to resolve a knob name held in a constant."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value.value
    return out


_QUALIFIED: weakref.WeakKeyDictionary[ast.AST, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = \
    weakref.WeakKeyDictionary()


def qualified_functions(tree: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every def by qualified name (`Class.method`, `outer.inner`), to pair a head def with its base twin.

    A name defined twice (e.g. under `if`/`else`) keeps the first definition. Cached per tree; treat the
    result as read-only.
    """
    cached = _QUALIFIED.get(tree)
    if cached is not None:
        return cached
    from .index import index_of  # here: the index builds on this module's helpers

    # A def can only sit in a statement body, so source order (the first of two same-named defs
    # wins) is (line, column) order; each def's prefix is the chain of defs and classes around it,
    # found by descending statement bodies only (not the tree's parent map, which many trees are
    # never asked for otherwise).
    index = index_of(tree)
    prefixes = _def_prefixes(tree)
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    defs = sorted(index.of_type(FUNCTION_TYPES), key=lambda d: (d.lineno, d.col_offset))  # type: ignore[arg-type]
    for func in defs:
        if func is tree:
            continue  # the table is of the defs inside `tree`
        prefix = prefixes.get(func)
        if prefix is None:  # not reached through statement bodies (no such tree known): ask the parents
            names = [func.name]
            node = index.parents.get(func)
            while node is not None and node is not tree:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.append(node.name)
                node = index.parents.get(node)
            prefix = tuple(reversed(names[1:]))
        out.setdefault(".".join((*prefix, func.name)), func)
    _QUALIFIED[tree] = out
    return out


STATEMENT_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _def_prefixes(tree: ast.AST) -> dict[ast.AST, tuple[str, ...]]:
    """Each def under `tree` → the names of the defs and classes around it (outermost first)."""
    out: dict[ast.AST, tuple[str, ...]] = {}
    stack: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, prefix = stack.pop()
        for name in STATEMENT_BODIES:
            items = getattr(node, name, None)
            if type(items) is not list:  # (a lambda's or an if-expression's body is one expression)
                continue
            for child in items:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[child] = prefix
                    stack.append((child, (*prefix, child.name)))
                elif isinstance(child, ast.ClassDef):
                    stack.append((child, (*prefix, child.name)))
                elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    stack.append((child, prefix))
    return out


def touches(node: ast.AST, lines: set[int]) -> bool:
    """True when any line of `node` (decorators included) is in `lines`."""
    start = min([getattr(node, "lineno", 0)] + [d.lineno for d in getattr(node, "decorator_list", [])])
    end = getattr(node, "end_lineno", None) or start
    if end - start < len(lines):  # whichever is shorter: the node's lines or the set
        return any(n in lines for n in range(start, end + 1))
    return any(start <= n <= end for n in lines)


def decorator_name(node: ast.AST) -> str:
    """`torch.library.custom_op` for `@torch.library.custom_op("ns::op", ...)`; '' when not a dotted name."""
    return dotted_name(node.func if isinstance(node, ast.Call) else node)


DEVICE_DECORATORS = ("jit", "kernel")  # @triton.jit, @gluon.jit, @flyc.jit, @flyc.kernel


def decorated_with(func: ast.AST, names: Iterable[str]) -> bool:
    """Whether a decorator of `func` ends in one of `names` (`@triton.jit`, `@flyc.kernel(...)` → jit, kernel)."""
    wanted = set(names)
    return any(decorator_name(d).rsplit(".", 1)[-1] in wanted for d in getattr(func, "decorator_list", ()))
