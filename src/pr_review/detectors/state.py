"""State rules decided from Python syntax: names bound on some paths only, and torch.compile fakes.

- conditional-binding (D1b): a local bound on some branches of a new or changed `if`/`try` and
  read after it on a path where it can still be unbound.
- fake-impl-missing (D7): a new tensor-returning custom op with no fake anywhere in the head tree.
- fake-impl-mismatch (D6): a fake whose returned dtype or arity visibly differs from its real op.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from ..git.diff import ChangedFile
from ..lang import Unparsable, cpp
from ..lang.index import index_of
from ..lang.python import (
    DEVICE_DECORATORS, FUNCTION_TYPES, children, decorated_with, decorator_name, dotted_callee, dotted_name,
    innermost_function, qualified_functions, touches, walk
)
from ..lang.regex import lazy_re
from ..model import Evidence, Finding, field, record
from . import detector
from .base import ReviewInput


def changed_lines(f: ChangedFile) -> set[int]:
    """Head lines the PR added, plus the head lines on either side of every deletion (a deleted `else:`
    changes the `if` around it without adding a line to it)."""
    added = f.added_lines
    removed = {n for n, _ in f.removed}
    lines = set(added)
    for b_start, b_len, h_start, h_len in f.hunks:
        gone = sorted(n for n in removed if b_start <= n < b_start + max(b_len, 1))
        if not gone:
            continue
        base, pos, end = b_start, h_start, h_start + max(h_len, 1)
        for n in gone:
            while base < n and pos < end:  # a change group lists its '-' lines before its '+' lines
                if base in removed:
                    base += 1
                elif pos in added:
                    pos += 1
                else:
                    base += 1
                    pos += 1
            lines.update(p for p in (pos - 1, pos) if h_start <= p < end)
    return lines


# --------------------------------------------------------------------------------------------
# conditional-binding (D1b)
# --------------------------------------------------------------------------------------------

EXIT_CALLS = {"sys.exit", "exit", "quit", "os._exit", "os.abort", "pytest.fail", "pytest.skip",
              "pytest.xfail", "pytest.exit", "typing.assert_never", "assert_never"}
CAUSES = (ast.If, ast.Try, ast.Match)  # the constructs a finding blames
BRANCHING = (ast.If, ast.While, ast.IfExp, ast.BoolOp, ast.Match, ast.comprehension, ast.ExceptHandler)


@record
class _State:
    bound: set[str]
    causes: dict[str, ast.AST] = field(default_factory=dict)  # partially bound name → the If/Try that did it

    def copy(self) -> _State:
        return _State(set(self.bound), dict(self.causes))

    def bind(self, name: str) -> None:
        self.bound.add(name)
        self.causes.pop(name, None)


@record
class _Read:
    name: str
    node: ast.Name
    cause: ast.AST


AMBIGUOUS = ast.Pass()  # cause marker: partly bound by two separate constructs (likely complementary tests)


def _merge(states: list[_State | None], node: ast.AST, tracked: set[str], before: _State) -> _State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    bound = set.intersection(*(s.bound for s in live))
    out = _State(bound)
    for s in live:
        for name, cause in s.causes.items():
            if name not in bound:
                out.causes.setdefault(name, cause)
        for name in s.bound - bound:
            if name in tracked:
                # bound on this branch, not on another; when an earlier construct had already bound it on
                # some paths, the two conditions may well be complementary (`if M == 2: …` then
                # `if M == 1: … else: <uses the M == 2 binding>`), which syntax cannot decide
                out.causes[name] = AMBIGUOUS if name in before.causes else node
    return out


_FLIP = {ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn,
         ast.NotIn: ast.In}


def _complementary(a: ast.AST, b: ast.AST) -> bool:
    """`b` is the negation of `a`: `x` / `not x`, `x is None` / `x is not None`, `a == b` / `a != b`."""
    for x, y in ((a, b), (b, a)):
        if isinstance(y, ast.UnaryOp) and isinstance(y.op, ast.Not) and ast.dump(y.operand) == ast.dump(x):
            return True
    if isinstance(a, ast.Compare) and isinstance(b, ast.Compare) and len(a.ops) == len(b.ops) == 1:
        flipped = _FLIP.get(type(a.ops[0]))
        return flipped is not None and isinstance(b.ops[0], flipped) and ast.dump(a.left) == ast.dump(b.left) \
            and ast.dump(a.comparators[0]) == ast.dump(b.comparators[0])
    return False


class _Flow:
    """Definite-assignment analysis of one function body, recording reads of maybe-unbound locals."""

    def __init__(self, func: ast.FunctionDef | ast.AsyncFunctionDef):
        self.func = func
        self.locals, self.constants, self.parsers = _scan(func)
        self.reads: list[_Read] = []
        self.loop_breaks: list[list[_State]] = []
        self.aliases: dict[str, str] = {}  # y → x after `y = torch.empty_like(x)`, until y is bound again
        self.settled: list[tuple[str, set[object]]] = []  # (tested expression, values) of chains whose else raises
        self.inner: set[int] = set()  # the elif nodes of a chain already read from its head
        self.exhaustive: set[int] = set()  # the last `if` of a chain an earlier raising chain makes exhaustive

    def constant_truth(self, test: ast.AST) -> bool | None:
        """The value of a test that is a literal, or a local assigned one literal and never re-bound
        (`is_a16w4 = True` … `if is_a16w4:`), possibly negated."""
        negate = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            negate, test = not negate, test.operand
        if isinstance(test, ast.Constant):
            return bool(test.value) != negate
        if isinstance(test, ast.Name) and test.id in self.constants:
            return bool(self.constants[test.id]) != negate
        return None

    def exits_parser(self, func: ast.AST) -> bool:
        """`parser.error(...)` / `parser.exit(...)` on an argparse parser built in this function: argparse
        prints the message and exits, so the branch ends there like `sys.exit`."""
        return isinstance(func, ast.Attribute) and func.attr in ("error", "exit") \
            and dotted_name(func.value) in self.parsers

    def read_chain(self, head: ast.If) -> None:
        """An if/elif chain testing one expression for equality with literals (or one name's type). When its
        `else` raises, past it the expression holds one of those values; a later chain without `else` that
        tests the same expression (or the same of a `y = empty_like(x)`) for every one of them is exhaustive,
        and so is a chain on a parameter's type that covers every member of its annotated union."""
        arms, node = [head], head
        while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            arms.append(node)
        self.inner.update(id(a) for a in arms[1:])
        # `E == v and …` narrows an arm: it bounds what passes a raising chain, it covers nothing in a later one
        tested = [_tested(a.test.values[0] if isinstance(a.test, ast.BoolOp) and isinstance(a.test.op, ast.And)
                          else a.test, self.aliases) for a in arms]
        exprs = {t[0] for t in tested if t is not None}
        if len(exprs) != 1:
            return
        expr = exprs.pop()
        if node.orelse and isinstance(node.orelse[-1], ast.Raise) and all(t is not None for t in tested):
            self.settled.append((expr, {v for t in tested if t is not None for v in t[1]}))
            return
        covered = {v for a, t in zip(arms, tested) if t is not None and not isinstance(a.test, ast.BoolOp)
                   for v in t[1]}
        if not node.orelse and any(e == expr and v <= covered for e, v in self.settled):
            self.exhaustive.add(id(node))

    def run(self) -> list[_Read]:
        args = self.func.args
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        for a in args.posonlyargs + args.args + args.kwonlyargs:  # `block_counts: int | torch.Tensor`
            members = _union_members(a.annotation)
            if len(members) > 1:
                self.settled.append((a.arg, {("type", m) for m in members}))
        self.block(self.func.body, _State(set(params)))
        return self.reads

    # -- expressions ---------------------------------------------------------------------
    def expr(self, node: ast.AST | None, state: _State) -> None:
        if node is None:
            return
        for name_node, bound_here in _expr_events(node):
            if bound_here:
                state.bind(name_node.id)
            elif name_node.id in self.locals and name_node.id not in state.bound:
                cause = state.causes.get(name_node.id)
                if cause is not None:
                    self.reads.append(_Read(name_node.id, name_node, cause))

    def target(self, node: ast.AST, state: _State) -> None:
        if self.settled and isinstance(node, (ast.Name, ast.Attribute)):  # `x = rearrange(x)`: x.dim() is new
            rebound = re.compile(rf"^{re.escape(ast.unparse(node))}\b")
            self.settled = [(e, v) for e, v in self.settled if not rebound.match(e)]
        if isinstance(node, ast.Name):
            state.bind(node.id)
            self.aliases.pop(node.id, None)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                self.target(elt, state)
        elif isinstance(node, ast.Starred):
            self.target(node.value, state)
        else:  # attribute / subscript targets read their base
            self.expr(node, state)

    # -- statements ----------------------------------------------------------------------
    def block(self, body: list[ast.stmt], state: _State | None) -> _State | None:
        for stmt in body:
            if state is None:
                return None
            state = self.stmt(stmt, state)
        return state

    def stmt(self, s: ast.stmt, state: _State) -> _State | None:
        if isinstance(s, (ast.Return,)):
            self.expr(s.value, state)
            return None
        if isinstance(s, ast.Raise):
            self.expr(s.exc, state)
            return None
        if isinstance(s, ast.Continue):
            return None
        if isinstance(s, ast.Break):
            if self.loop_breaks:
                self.loop_breaks[-1].append(state.copy())
            return None
        if isinstance(s, ast.Assert):
            self.expr(s.test, state)
            if isinstance(s.test, ast.Constant) and not s.test.value:
                return None
            return state
        if isinstance(s, ast.Expr):
            self.expr(s.value, state)
            if isinstance(s.value, ast.Call) and (dotted_name(s.value.func) in EXIT_CALLS
                                                  or self.exits_parser(s.value.func)):
                return None
            return state
        if isinstance(s, ast.Assign):
            self.expr(s.value, state)
            for t in s.targets:
                self.target(t, state)
            source = _like_source(s.value)
            if source and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                self.aliases[s.targets[0].id] = source
            return state
        if isinstance(s, ast.AnnAssign):
            self.expr(s.value, state)
            if s.value is not None:
                self.target(s.target, state)
            return state
        if isinstance(s, ast.AugAssign):
            self.expr(s.value, state)
            if isinstance(s.target, ast.Name):  # `x += …` reads x first
                name = s.target.id
                if name in self.locals and name not in state.bound and state.causes.get(name) is not None:
                    self.reads.append(_Read(name, s.target, state.causes[name]))
            self.target(s.target, state)
            return state
        if isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    state.bound.discard(t.id)
                    state.causes.pop(t.id, None)
                else:
                    self.expr(t, state)
            return state
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            for alias in s.names:
                state.bind((alias.asname or alias.name).split(".")[0])
            return state
        if isinstance(s, (*FUNCTION_TYPES, ast.ClassDef)):
            for d in s.decorator_list:
                self.expr(d, state)
            if isinstance(s, FUNCTION_TYPES):
                for default in s.args.defaults + [d for d in s.args.kw_defaults if d is not None]:
                    self.expr(default, state)
            else:
                for b in s.bases:
                    self.expr(b, state)
            state.bind(s.name)
            return state
        if isinstance(s, ast.If):
            self.expr(s.test, state)
            if id(s) not in self.inner:
                self.read_chain(s)
            if id(s) in self.exhaustive:
                return self.block(s.body, state.copy())
            known = self.constant_truth(s.test)
            if known is True:
                return self.block(s.body, state.copy())
            if known is False:
                return self.block(s.orelse, state.copy())
            through_body = self.block(s.body, state.copy())
            after = _merge([through_body, self.block(s.orelse, state.copy())], s, self.locals, state)
            if after is not None and not s.orelse and through_body is None:
                # `if not has_seqs: return` after `if has_seqs: fwd_out = …`: past this exit the earlier
                # test held, so what its branch bound is bound here
                for name, cause in list(after.causes.items()):
                    if isinstance(cause, ast.If) and not cause.orelse and _complementary(cause.test, s.test):
                        after.bind(name)
            return after
        if isinstance(s, (ast.For, ast.AsyncFor)):
            self.expr(s.iter, state)
            inner = state.copy()
            self.target(s.target, inner)
            self.loop_breaks.append([])
            self.block(s.body, inner)
            self.loop_breaks.pop()
            after = self.block(s.orelse, state.copy())
            return _loop_exit(state, after, s, self.locals)
        if isinstance(s, ast.While):
            self.expr(s.test, state)
            self.loop_breaks.append([])
            self.block(s.body, state.copy())
            breaks = self.loop_breaks.pop()
            if _always_true(s.test):
                return _loop_exit(state, _merge(breaks, s, self.locals, state), s, self.locals) if breaks else None
            return _loop_exit(state, self.block(s.orelse, state.copy()), s, self.locals)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self.expr(item.context_expr, state)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, state)
            return self.block(s.body, state)
        if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            done = self.block(s.body, state.copy())
            done = self.block(s.orelse, done) if done is not None else None
            branches = [done]
            for h in s.handlers:
                hs = state.copy()
                self.expr(h.type, hs)
                if h.name:
                    hs.bind(h.name)
                end = self.block(h.body, hs)
                if end is not None and h.name:
                    end.bound.discard(h.name)
                branches.append(end)
            merged = _merge(branches, s, self.locals, state)
            if s.finalbody:
                if merged is None:
                    self.block(s.finalbody, state.copy())
                    return None
                return self.block(s.finalbody, merged)
            return merged
        if isinstance(s, ast.Match):
            self.expr(s.subject, state)
            branches = []
            exhaustive = False
            for case in s.cases:
                cs = state.copy()
                for n in walk(case.pattern):
                    for attr in ("name", "rest"):
                        v = getattr(n, attr, None)
                        if isinstance(v, str):
                            cs.bind(v)
                self.expr(case.guard, cs)
                branches.append(self.block(case.body, cs))
                if isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None and case.guard is None:
                    exhaustive = True
            if not exhaustive:
                branches.append(state.copy())
            return _merge(branches, s, self.locals, state)
        if isinstance(s, (ast.Global, ast.Nonlocal, ast.Pass)):
            return state
        for child in children(s):  # anything else: read what it reads
            if isinstance(child, ast.expr):
                self.expr(child, state)
        return state


def _like_source(value: ast.AST) -> str | None:
    """x of `torch.empty_like(x)`: the new tensor has x's shape, dtype and dim, so a test on it is a test on x."""
    if isinstance(value, ast.Call) and dotted_name(value.func).endswith("_like") and value.args \
            and isinstance(value.args[0], ast.Name):
        return value.args[0].id
    return None


def _union_members(annotation: ast.AST | None) -> set[str]:
    """The last names of a union annotation's members: `int | torch.Tensor` → {int, Tensor}; `Optional[T]`
    adds None."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _union_members(annotation.left) | _union_members(annotation.right)
    if isinstance(annotation, ast.Subscript) and dotted_name(annotation.value).rsplit(".", 1)[-1] in ("Union", "Optional"):
        inner = annotation.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        out = {m for p in parts for m in _union_members(p)}
        return out | {"None"} if dotted_name(annotation.value).endswith("Optional") else out
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return {"None"}
    if annotation is None:
        return set()
    name = dotted_name(annotation)
    return {name.rsplit(".", 1)[-1] if name else ast.unparse(annotation)}  # `list[int]` stays itself: uncovered


def _tested(test: ast.AST, aliases: dict[str, str]) -> tuple[str, set[object]] | None:
    """(name, its types) of `isinstance(p, T)` / `torch.is_tensor(p)` / `p is None`; else `_equality`."""
    if isinstance(test, ast.Call) and test.args and isinstance(test.args[0], ast.Name):
        callee = dotted_name(test.func)
        if callee == "isinstance" and len(test.args) == 2:
            kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
            names = {dotted_name(k).rsplit(".", 1)[-1] for k in kinds}
            return (test.args[0].id, {("type", n) for n in names}) if "" not in names else None
        if callee.rsplit(".", 1)[-1] == "is_tensor" and len(test.args) == 1:
            return test.args[0].id, {("type", "Tensor")}
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None:
        return test.left.id, {("type", "None")}
    found = _equality(test, aliases)
    return (found[0], {found[1]}) if found is not None else None


def _equality(test: ast.AST, aliases: dict[str, str]) -> tuple[str, object] | None:
    """(expression, literal) of `expr == literal`, the expression's `_like` copies read as the original."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)):
        return None
    text = ast.unparse(test.left)
    root = test.left
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if isinstance(root, ast.Name) and root.id in aliases:
        text = re.sub(rf"^{re.escape(root.id)}\b", aliases[root.id], text)
    return text, test.comparators[0].value


def _loop_exit(before: _State, after: _State | None, loop: ast.AST, tracked: set[str]) -> _State:
    """After a loop only what was bound before it is certain; body bindings are attributed to the
    loop (so they are never blamed on an `if` inside it)."""
    out = before.copy()
    if after is not None:
        for name in after.bound - before.bound:
            if name in tracked:
                out.causes[name] = loop
        for name in after.causes:
            if name not in out.bound:
                out.causes.setdefault(name, loop)
    return out


def _always_true(test: ast.AST) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def _expr_events(node: ast.AST) -> list[tuple[ast.Name, bool]]:
    """Name reads (False) and walrus bindings (True) in evaluation order; lambda bodies are skipped
    (they run later) and comprehension variables are local to the comprehension."""
    out: list[tuple[ast.Name, bool]] = []
    _events(node, set(), out)
    return out


def _events(n: ast.AST, hidden: set[str], out: list[tuple[ast.Name, bool]]) -> None:
    # a module-level function, not a closure calling itself: that closure is a reference cycle, and
    # with the collector paused during a review each of the ~60,000 calls on a large PR stayed alive
    if isinstance(n, ast.Name):
        if isinstance(n.ctx, ast.Load) and n.id not in hidden:
            out.append((n, False))
        return
    if isinstance(n, ast.Lambda):
        for d in n.args.defaults:
            _events(d, hidden, out)
        return
    if isinstance(n, COMPREHENSIONS):
        names = {t.id for g in n.generators for t in walk(g.target) if isinstance(t, ast.Name)}
        hidden.update(names)
        for g in n.generators:
            _events(g.iter, hidden, out)
            for cond in g.ifs:
                _events(cond, hidden, out)
        for part in ([n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]):
            _events(part, hidden, out)
        hidden.difference_update(names)
        return
    if isinstance(n, ast.NamedExpr):
        _events(n.value, hidden, out)
        out.append((n.target, True))
        return
    for child in children(n):
        _events(child, hidden, out)


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _scan(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], dict[str, object], set[str]]:
    """What the flow of `func` needs, from one pass over its nodes (three walks before, two thirds of
    conditional-binding's time): the names Python treats as local to it; its locals bound exactly once,
    to a literal (parameters excluded); the names it binds to `argparse.ArgumentParser(...)` (or a
    subclass spelled `*ArgumentParser`).

    Every node is read for the literals and parsers. A node is also *own*, read for the locals, when it
    binds in `func`'s scope: its body, not a nested def or class body (only the decorators) nor a
    lambda, of a comprehension only the iterables, and any walrus anywhere under a comprehension
    (`in_comp`), which binds in the enclosing function."""
    bound: set[str] = set()
    declared: set[str] = set()
    counts: dict[str, int] = {}
    values: dict[str, object] = {}
    parsers: set[str] = set()
    # (node, own, in_comp); the def's own fields other than its body are read, not own
    stack: list[tuple[ast.AST, bool, bool]] = [(c, False, False) for c in children(func)
                                                if not any(c is b for b in func.body)]
    stack.extend((n, True, False) for n in func.body)
    pop, push = stack.pop, stack.append
    while stack:
        n, own, in_comp = pop()
        kind = type(n)
        if kind is ast.Name:
            if not isinstance(n.ctx, ast.Load):  # Store or Del
                counts[n.id] = counts.get(n.id, 0) + 1
                if own:
                    bound.add(n.id)
            continue
        if kind is ast.Assign and isinstance(n.value, ast.Call) \
                and dotted_name(n.value.func).rsplit(".", 1)[-1].endswith("ArgumentParser"):
            parsers.update(dotted_name(t) for t in n.targets)
        if kind is ast.Assign and len(n.targets) == 1 and type(n.targets[0]) is ast.Name \
                and type(n.value) is ast.Constant:
            values[n.targets[0].id] = n.value.value
        if in_comp and kind is ast.NamedExpr:
            own = True
        if not own:
            for child in children(n):
                push((child, False, in_comp))
            continue
        if kind is ast.Global or kind is ast.Nonlocal:
            declared.update(n.names)
            continue
        if kind in FUNCTION_TYPES or kind is ast.ClassDef:
            bound.add(n.name)
            decorators = n.decorator_list
            for child in children(n):
                push((child, any(child is d for d in decorators), in_comp))
            continue
        if kind is ast.Lambda:
            for child in children(n):
                push((child, False, in_comp))
            continue
        if kind in COMPREHENSIONS:
            for child in children(n):
                if type(child) is not ast.comprehension:
                    push((child, False, True))
            for g in n.generators:  # nothing to read on the generator node itself
                push((g.target, False, True))
                push((g.iter, True, True))
                stack.extend((c, False, True) for c in g.ifs)
            continue
        if kind is ast.Import or kind is ast.ImportFrom:
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif kind is ast.ExceptHandler and n.name or kind in (ast.MatchAs, ast.MatchStar) and n.name:
            bound.add(n.name)
        for child in children(n):
            push((child, True, in_comp))
    args = func.args
    params = {a.arg for a in (args.posonlyargs + args.args + args.kwonlyargs)}
    constants = {k: v for k, v in values.items() if counts.get(k) == 1 and k not in params}
    return bound - declared, constants, parsers


def _enclosing(func: ast.AST, target: ast.AST) -> list[ast.AST]:
    """The chain of nodes from `func` down to (excluding) `target`; [] when `func` does not hold it."""
    parents = index_of(func).parents
    path: list[ast.AST] = []
    node = target
    while node in parents:
        node = parents[node]
        if node is func:
            return path[::-1]
        path.append(node)
    return []


def _guarded_apart(func: ast.AST, read: ast.AST, cause: ast.AST) -> bool:
    """True when the read sits under a condition that does not also enclose the binding construct:
    the read may be correlated with the branch that binds (`if fp8: s = …` … `if fp8: use(s)`)."""
    read_path = _enclosing(func, read)
    cause_path = set(map(id, _enclosing(func, cause))) | {id(cause)}
    cause_names = _test_names(cause)
    for node in read_path:
        if id(node) in cause_path:
            continue
        if isinstance(node, BRANCHING) or isinstance(node, ast.Try) and read not in _try_body_nodes(node):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor)) and cause_names & {
                n.id for n in walk(node.iter) if isinstance(n, ast.Name)}:
            return True  # `for _ in range(NUM_BUFFERS - 1)` runs only when the binding test held
    return False


def _pruned_before(func: ast.AST, read: ast.AST, cause: ast.AST) -> bool:
    """An early exit between the construct and the read tests a flag the construct itself sets
    (`except: size = 1` … `if size <= 1: return` … use of what the `try` bound): the unbound path
    most likely leaves there, which syntax alone cannot prove wrong."""
    set_inside = {n.id for n in walk(cause) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    end = cause.end_lineno or cause.lineno
    for node in walk(func):
        if not isinstance(node, ast.If) or not end < node.lineno < read.lineno or node.orelse:
            continue
        if node.body and isinstance(node.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)) and \
                set_inside & {n.id for n in walk(node.test) if isinstance(n, ast.Name)}:
            return True
    return False


def _test_names(cause: ast.AST) -> set[str]:
    names: set[str] = set()
    node = cause
    while isinstance(node, ast.If):
        names |= {n.id for n in walk(node.test) if isinstance(n, ast.Name)}
        node = node.orelse[0] if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) else None
    return names


def _on_constexpr(func: ast.AST, cause: ast.AST) -> bool:
    """A device kernel's chain on its `tl.constexpr` parameters: Triton specialises on them and a name left
    unbound fails the kernel's compile, at its first launch with those values, never silently."""
    if not (isinstance(cause, ast.If) and decorated_with(func, DEVICE_DECORATORS)):
        return False
    args = func.args  # type: ignore[attr-defined]
    constexpr = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                 if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")}
    names = _test_names(cause)
    return bool(names) and names <= constexpr


def _try_body_nodes(node: ast.Try) -> set[ast.AST]:
    return {n for stmt in node.body for n in walk(stmt)}


def _maybe_unbound(func: ast.FunctionDef | ast.AsyncFunctionDef,
                   deciding: Callable[[_Read], bool] | None = None) -> list[_Read]:
    """Per name, the first read that may find it unbound. With `deciding`, only the names one of whose
    reads it accepts are decided: a caller that keeps only such reads needs no others, and the checks
    of every read of every name were most of the detector's time on large kernels."""
    reads = _Flow(func).run()
    if deciding is not None:
        names = {r.name for r in reads if isinstance(r.cause, CAUSES) and deciding(r)}
        reads = [r for r in reads if r.name in names]
    out: list[_Read] = []
    seen: set[str] = set()
    for r in sorted(reads, key=lambda r: (r.node.lineno, r.node.col_offset)):
        if r.name in seen or not isinstance(r.cause, CAUSES):
            continue
        if r.node.lineno <= (r.cause.end_lineno or r.cause.lineno):
            continue  # a read inside the construct itself (a loop-carried pattern), not after it
        if _guarded_apart(func, r.node, r.cause) or _pruned_before(func, r.node, r.cause):
            continue
        seen.add(r.name)
        out.append(r)
    return out


@detector("conditional-binding")
def conditional_binding(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if review.facts.is_tooling(f.path):
            continue  # a benchmark's or CLI's modes come from its own harness, and it fails loudly in its runner's hands
        changed = changed_lines(f)
        # a finding's cause is an if/try/match the PR touched, and a function's flow reads the statements of
        # its own body only, not those of the defs and classes nested in it: a function owning none of those
        # causes is not read (a FlyDSL builder whose touched branches all sit in the kernel it defines)
        index = index_of(tree)
        owners = {index.scope_of(c) for kind in CAUSES for c in index.of_type(kind) if touches(c, changed)}
        base_funcs: dict[str, ast.AST] | None = None
        moved: dict[str, ast.AST] | None = None
        for qualname, func in qualified_functions(tree).items():
            if func not in owners:
                continue
            def reported(r: _Read, func: ast.AST = func) -> bool:
                return touches(r.cause, changed) and not _on_constexpr(func, r.cause)

            reads = [r for r in _maybe_unbound(func, reported) if reported(r)]
            if not reads:
                continue
            if base_funcs is None:
                base_tree = review.base_python(f)
                base_funcs = qualified_functions(base_tree) if base_tree is not None else {}
            base_func = base_funcs.get(qualname)
            if base_func is None:  # code moved in from another file the PR cuts (a module split into a package)
                moved = _cut_functions(review, f) if moved is None else moved
                base_func = moved.get(qualname)
            asked = {r.name for r in reads}
            already = {r.name for r in _maybe_unbound(base_func, lambda r: r.name in asked)} \
                if base_func is not None else set()
            for r in reads:
                if r.name in already:
                    continue  # the same name was already maybe-unbound there on base
                yield _binding_finding(f.path, qualname, r, changed)


def _cut_functions(review: ReviewInput, f: ChangedFile) -> dict[str, ast.AST]:
    """The base-side functions, by qualified name, of the other Python files the PR removes lines from."""
    out: dict[str, ast.AST] = {}
    for base_tree in review.cut_from(f):
        for name, func in qualified_functions(base_tree).items():
            out.setdefault(name, func)
    return out


def _binding_finding(path: str, qualname: str, r: _Read, changed: set[int]) -> Finding:
    cause = r.cause
    binders = sorted({n.lineno for n in walk(cause)
                      if isinstance(n, ast.Name) and n.id == r.name and isinstance(n.ctx, ast.Store)})
    where = f"line {binders[0]}" if binders else f"the block at line {cause.lineno}"
    if isinstance(cause, ast.If):
        tests = _chain_tests(cause)
        kind = "if/elif chain" if len(tests) > 1 else "`if`"
        shown = " / ".join(f"`{t}`" for t in tests[:3])
        problem = (f"`{r.name}` is bound only inside the {kind} at {path}:{cause.lineno} ({shown}, no `else` binding it) "
                   f"and read unconditionally at {path}:{r.node.lineno} in `{qualname}`.")
        trigger = f"when {'none of ' if len(tests) > 1 else ''}{shown} {'holds' if len(tests) > 1 else 'is false'}, " \
                  f"`{r.name}` is never bound and line {r.node.lineno} raises UnboundLocalError"
        tag = "inferred" if len(tests) > 1 else "verified"
    elif isinstance(cause, ast.Try):
        caught = ", ".join(ast.unparse(h.type) if h.type is not None else "any exception" for h in cause.handlers) or "an exception"
        problem = (f"`{r.name}` is bound inside the `try` at {path}:{cause.lineno} but an `except` ({caught}) falls through "
                   f"without binding it, and it is read at {path}:{r.node.lineno} in `{qualname}`.")
        trigger = f"when the `try` body raises {caught} before {where}, line {r.node.lineno} raises UnboundLocalError"
        tag = "verified"
    else:
        problem = (f"`{r.name}` is bound only in some `case` arms of the `match` at {path}:{cause.lineno} and read at "
                   f"{path}:{r.node.lineno} in `{qualname}`.")
        trigger = f"when no `case` that binds `{r.name}` matches, line {r.node.lineno} raises UnboundLocalError"
        tag = "verified"
    line = r.node.lineno if r.node.lineno in changed else next((b for b in binders if b in changed), cause.lineno)
    return Finding(
        rule="conditional-binding", path=path, line=line,
        problem=problem,
        impact="On the path that skips the binding Python raises UnboundLocalError at run time; tests that "
               "only exercise the binding branch never see it.",
        action=f"Author must bind `{r.name}` on every path (a default before the block, or an `else` that binds "
               f"or raises) or move the read into the branch that binds it.",
        trigger=trigger, tag=tag, severity=None if tag == "verified" else "medium",
        evidence=[Evidence(path, b, f"{r.name} bound here") for b in binders[:3]]
        + [Evidence(path, r.node.lineno, f"{r.name} read here")],
    )


def _chain_tests(node: ast.If) -> list[str]:
    tests = [ast.unparse(node.test)[:60]]
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        tests.append(ast.unparse(node.test)[:60])
    return tests


# --------------------------------------------------------------------------------------------
# fake-impl-missing (D7) and fake-impl-mismatch (D6)
# --------------------------------------------------------------------------------------------

@record
class _Op:
    """One custom-op registration found in a file."""

    name: str  # the op's short name (C++ binding name for compile_ops)
    kind: str  # compile_ops | custom_op | direct_register | compile_guard
    node: ast.AST  # the def (decorated forms) or the registration call
    real: ast.FunctionDef | ast.AsyncFunctionDef | None
    fake: ast.AST | None = None  # expression naming the fake, when passed as an argument
    qualified: str = ""  # "ns::name" for torch.library ops
    module: str = ""  # the JIT module a compile_ops op loads its C++ entry from


REGISTRATION = lazy_re(r"compile_ops|custom_op|direct_register_custom_op|torch_compile_guard")
FAKE_WORDS = lazy_re(r"fake|abstract")


def _kw(call: ast.Call, name: str, position: int | None = None) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _ops(tree: ast.Module) -> list[_Op]:
    index = index_of(tree)
    defs = {n.name: n for n in index.of_type(FUNCTION_TYPES)}
    ops: list[_Op] = []
    for node in index.of_type((*FUNCTION_TYPES, ast.Call)):  # in walk order: the ops in source's order
        if isinstance(node, FUNCTION_TYPES):
            for d in node.decorator_list:
                name = decorator_name(d)
                last = name.rsplit(".", 1)[-1]
                if last == "compile_ops" and isinstance(d, ast.Call):
                    fc = _str(_kw(d, "fc_name", 1)) or node.name
                    ops.append(_Op(fc, "compile_ops", node, node, _kw(d, "gen_fake", 3),
                                   module=_str(_kw(d, "_md_name", 0)) or ""))
                elif last == "custom_op" and name in ("torch.library.custom_op", "library.custom_op", "custom_op") \
                        and isinstance(d, ast.Call):
                    qual = _str(_kw(d, "name", 0)) or node.name
                    ops.append(_Op(node.name, "custom_op", node, node, None, qual))
                elif last == "torch_compile_guard" and isinstance(d, ast.Call) and _kw(d, "gen_fake") is not None:
                    ops.append(_Op(node.name, "compile_guard", node, node, _kw(d, "gen_fake")))
        elif dotted_callee(node, ("direct_register_custom_op",)):
            op_name = _str(_kw(node, "op_name", 0))
            func = _kw(node, "op_func", 1)
            if op_name is None:
                continue
            real = defs.get(func.id) if isinstance(func, ast.Name) else None
            fake = _kw(node, "fake_impl", 3)
            if isinstance(fake, ast.Constant) and fake.value is None:
                fake = None
            ops.append(_Op(op_name, "direct_register", node, real, fake))
    return ops


def _returns_tensor(func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool | None:
    """True/False from the return annotation; None when there is none."""
    if func is None or func.returns is None:
        return None
    text = ast.unparse(func.returns)
    if text in ("None", "NoReturn"):
        return False
    return "Tensor" in text


def _fake_elsewhere(review: ReviewInput, op: _Op) -> tuple[str, int] | None:
    """Where a fake for `op` is registered or defined in the head tree, if anywhere."""
    names = {op.name}
    if op.real is not None:
        names.add(op.real.name)
    if op.qualified:
        names.add(op.qualified.split("::")[-1])
    alts = "|".join(re.escape(n.lstrip("_")) for n in sorted(names))
    pattern = (rf"(register_fake|impl_abstract|register_meta|_register_fake)\b.*\b_?({alts})\b"
               rf"|\b_?({alts})\.(register_fake|register_abstract|impl_abstract)\b"
               rf"|def _?(({alts})_(fake|meta|abstract)\w*|fake_({alts})|gen_({alts})_fake\w*)\s*\(")
    hits = review.source.grep(pattern, "head", ("*.py",))
    return (hits[0][0], hits[0][1]) if hits else None


def _unwrapped(review: ReviewInput, op: _Op) -> bool:
    """aiter lists ops that are deliberately not registered with torch (NONE_WRAPPED_OP)."""
    for path, _, _ in review.source.grep("NONE_WRAPPED_OP", "head", ("*.py",), fixed=True, files_only=True):
        text = review.source.text(path) or ""
        if f'"{op.name}"' in text or f"'{op.name}'" in text:
            return True
    return False


@detector("fake-impl-missing")
def fake_impl_missing(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False, added_matching=REGISTRATION):
        changed = f.added_lines
        head_ops = [op for op in _ops(tree) if touches(op.node, changed)]
        if not head_ops:
            continue
        base_tree = review.base_python(f)
        base_names = {op.name for op in _ops(base_tree)} if base_tree is not None else set()
        for op in head_ops:
            if op.name in base_names or op.fake is not None or op.kind == "compile_guard":
                continue  # not new, or its fake is passed as an argument
            if _returns_tensor(op.real) is not True:
                continue  # returns nothing (torch derives a trivial fake) or is not visibly a tensor op
            if _fake_elsewhere(review, op) or _unwrapped(review, op):
                continue
            line = op.node.lineno
            shown = op.qualified or op.name
            how = {"compile_ops": "`@compile_ops` without `gen_fake=`",
                   "custom_op": "`torch.library.custom_op` with no `register_fake`",
                   "direct_register": "`direct_register_custom_op` without `fake_impl=`"}[op.kind]
            fallback = ("aiter's abstract impl then calls the stub body, which returns None instead of a tensor"
                        if op.kind == "compile_ops" else "tracing finds no fake kernel for the op")
            yield Finding(
                rule="fake-impl-missing", path=f.path, line=line,
                problem=f"New op `{shown}` at {f.path}:{line} is registered with {how}, returns a tensor, and no "
                        f"fake/abstract implementation for it exists anywhere in the tree.",
                impact="torch.compile traces custom ops with FakeTensors; without a fake the op is opaque: "
                       f"{fallback}, so compiled models crash at trace time or fall back to eager.",
                action="Author must register a fake that returns correctly shaped and typed empty tensors ("
                       + {"compile_ops": "pass `gen_fake=` to `@compile_ops`",
                          "custom_op": f"`@{op.real.name if op.real else op.name}.register_fake`",
                          "direct_register": "pass `fake_impl=`"}[op.kind]
                       + ") and test the op under torch.compile.",
                trigger=f"any torch.compile'd model that calls `{shown}`: {fallback}",
                evidence=[Evidence(f.path, line, ast.unparse(op.node).splitlines()[0][:120] if isinstance(op.node, ast.Call)
                                   else f"def {op.real.name if op.real else op.name}")],
            )


DTYPE_ALIASES = {
    "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "float32": "fp32", "float": "fp32", "fp32": "fp32", "float64": "fp64", "double": "fp64",
    "int32": "i32", "i32": "i32", "int": "i32", "int64": "i64", "long": "i64", "i64": "i64",
    "int8": "i8", "i8": "i8", "uint8": "u8", "u8": "u8", "int16": "i16", "bool": "bool",
    "fp4x2": "fp4", "float4_e2m1fn_x2": "fp4", "fp8_e8m0": "e8m0", "float8_e8m0fnu": "e8m0",
}
ALLOCATORS = {"empty", "zeros", "ones", "full", "empty_strided", "rand", "randn", "randint", "arange", "tensor"}
LIKE_ALLOCATORS = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"}


def _dtype_key(node: ast.AST, params: set[str]) -> tuple[str, str] | None:
    """('const', canonical) for a literal dtype, ('like', x) for `x.dtype`, ('param', p) for a dtype parameter."""
    name = dotted_name(node)
    if name.endswith(".dtype") and name.count(".") == 1:
        return ("like", name.split(".")[0])
    if isinstance(node, ast.Name) and node.id in params:
        return ("param", node.id)
    if name.startswith(("torch.", "dtypes.", "aiter.dtypes.", "tl.")):
        leaf = name.rsplit(".", 1)[-1]
        if "float8" in leaf or leaf.startswith("fp8") and leaf != "fp8_e8m0":
            return ("const", "fp8")
        return ("const", DTYPE_ALIASES.get(leaf, leaf))
    return None


def _bound_values(func: ast.AST, name: str) -> list[ast.AST]:
    """The values `name = …` binds anywhere in `func` (plain and annotated assignments)."""
    return [n.value for n in walk(func) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
            and any(isinstance(t, ast.Name) and t.id == name for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]


def _dtype_in(node: ast.AST, func: ast.AST, params: set[str], depth: int = 0) -> tuple[str, str] | None:
    """`_dtype_key`, following a local bound once (`dtype = q.dtype` … `dtype=dtype`)."""
    key = _dtype_key(node, params)
    if key is None and isinstance(node, ast.Name) and depth < 2:
        values = _bound_values(func, node.id)
        return _dtype_in(values[0], func, params, depth + 1) if len(values) == 1 else None
    return key


def _element_dtype(expr: ast.AST, func: ast.AST, params: set[str], depth: int = 0) -> tuple[str, str] | None:
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        if expr.id in params:
            return ("like", expr.id)
        values = _bound_values(func, expr.id)
        return _element_dtype(values[-1], func, params, depth + 1) if len(values) == 1 else None
    if not isinstance(expr, ast.Call):
        return None
    callee = dotted_name(expr.func)
    leaf = callee.rsplit(".", 1)[-1]
    dtype = _kw(expr, "dtype")
    if leaf in LIKE_ALLOCATORS and callee.startswith("torch."):
        if dtype is not None:
            return _dtype_in(dtype, func, params)
        return _element_dtype(expr.args[0], func, params, depth + 1) if expr.args else None
    if leaf in ALLOCATORS and callee.startswith("torch."):
        return _dtype_in(dtype, func, params) if dtype is not None else None
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("new_empty", "new_zeros", "new_ones", "new_full"):
        if dtype is not None:
            return _dtype_in(dtype, func, params)
        return _element_dtype(expr.func.value, func, params, depth + 1)
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("to", "view") and (expr.args or dtype is not None):
        arg = dtype if dtype is not None else expr.args[0]
        return _dtype_in(arg, func, params)
    return None


def _return_shape(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST] | None:
    """The elements of the (single, consistent) returned tuple or value; None when not statically visible."""
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in body) \
            or (len(body) == 1 and isinstance(body[0], (ast.Pass,))):
        return None  # a stub: the real op is elsewhere (C++)
    returns = [n for n in walk(func) if isinstance(n, ast.Return) and n.value is not None
               and innermost_function(func, n) is func]
    if not returns:
        return None
    shapes = []
    params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    for r in returns:
        if isinstance(r.value, ast.Tuple) and any(isinstance(e, ast.Starred) for e in r.value.elts):
            return None  # `(*outs[:4], x, *outs[6:])`: the count is not in the syntax
        if isinstance(r.value, ast.Tuple):
            shapes.append(list(r.value.elts))
        elif _element_dtype(r.value, func, params) is not None:
            shapes.append([r.value])  # visibly one tensor
        else:
            return None  # e.g. `return helper(...)`: a tuple or a tensor, we cannot tell
    if len({len(s) for s in shapes}) != 1:
        return None
    return shapes[-1]


def _annotation_arity(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    if func.returns is None:
        return None
    ann = func.returns
    if isinstance(ann, ast.Subscript) and dotted_name(ann.value).rsplit(".", 1)[-1] in ("Tuple", "tuple"):
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts):
            return None
        return len(elts)
    text = ast.unparse(ann)
    return 1 if re.fullmatch(r"(torch\.)?Tensor", text) else None


def _fake_pairs(tree: ast.Module) -> list[tuple[_Op, ast.FunctionDef | ast.AsyncFunctionDef]]:
    defs = {n.name: n for n in index_of(tree).nodes if isinstance(n, FUNCTION_TYPES)}
    pairs = []
    for op in _ops(tree):
        if op.fake is not None and isinstance(op.fake, ast.Name) and op.fake.id in defs:
            pairs.append((op, defs[op.fake.id]))
    # @<op>.register_fake / torch.library.register_fake("ns::op") on a def
    by_name = {op.real.name: op for op in _ops(tree) if op.kind == "custom_op" and op.real is not None}
    by_qual = {op.qualified: op for op in by_name.values()}
    for node in index_of(tree).of_type(FUNCTION_TYPES):
        for d in node.decorator_list:
            name = decorator_name(d)
            if name.endswith(".register_fake") and name.split(".")[0] in by_name:
                pairs.append((by_name[name.split(".")[0]], node))
            elif name.rsplit(".", 1)[-1] in ("register_fake", "impl_abstract") and isinstance(d, ast.Call):
                qual = _str(_kw(d, "op", 0))
                if qual in by_qual:
                    pairs.append((by_qual[qual], node))
    return pairs


@detector("fake-impl-mismatch")
def fake_impl_mismatch(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if not FAKE_WORDS.search(review.source.text(f.path) or ""):
            continue
        changed = changed_lines(f)
        base_pairs: dict[str, set[str]] | None = None
        for op, fake in _fake_pairs(tree):
            real = op.real
            if real is None or not (touches(fake, changed) or touches(real, changed) or touches(op.node, changed)):
                continue
            if base_pairs is None:
                base_tree = review.base_python(f)
                base_pairs = _pair_verdicts(base_tree) if base_tree is not None else {}
            verdicts = _pair_verdicts_one(op, fake)
            if verdicts and verdicts <= base_pairs.get(fake.name, set()):
                continue  # the same disagreement already existed on base: not introduced here
            fake_shape = _return_shape(fake)
            if fake_shape is None:
                continue
            real_shape = _return_shape(real)
            real_arity = len(real_shape) if real_shape is not None else _annotation_arity(real)
            where = f"{f.path}:{fake.lineno}"
            if real_arity is not None and real_arity != len(fake_shape):
                yield Finding(
                    rule="fake-impl-mismatch", path=f.path, line=_fake_line(fake, real, f.added_lines),
                    problem=f"Fake `{fake.name}` ({where}) returns {_count(len(fake_shape))} but the real op "
                            f"`{op.qualified or op.name}` ({f.path}:{real.lineno}) returns {_count(real_arity)}"
                            + (" — the PR changed the op's return and left the fake as it was."
                               if touches(real, changed) and not touches(fake, changed) else "."),
                    impact="torch.compile builds the graph from the fake's outputs; an arity mismatch fails at "
                           "trace time or binds the wrong output downstream.",
                    action=f"Author must make `{fake.name}` return exactly the outputs of the real op, in order.",
                    trigger=f"tracing `{op.qualified or op.name}` under torch.compile: the fake yields "
                            f"{_count(len(fake_shape))} where the op yields {_count(real_arity)}",
                    evidence=[Evidence(f.path, fake.lineno, f"def {fake.name}"), Evidence(f.path, real.lineno, f"def {real.name}")],
                )
                continue
            if real_shape is None:
                continue
            fake_params = {a.arg for a in fake.args.args + fake.args.kwonlyargs + fake.args.posonlyargs}
            real_params = {a.arg for a in real.args.args + real.args.kwonlyargs + real.args.posonlyargs}
            for i, (r_el, f_el) in enumerate(zip(real_shape, fake_shape)):
                rk = _element_dtype(r_el, real, real_params)
                fk = _element_dtype(f_el, fake, fake_params)
                if rk is None or fk is None or rk == fk:
                    continue
                proven = rk[0] == "const" and fk[0] == "const"
                yield Finding(
                    rule="fake-impl-mismatch", path=f.path, line=_fake_line(fake, real, f.added_lines),
                    problem=f"Output {i} of fake `{fake.name}` ({where}) has dtype {_show(fk)} but the real op "
                            f"`{op.qualified or op.name}` returns {_show(rk)} there ({f.path}:{r_el.lineno})"
                            + ("." if proven else " — is that the same dtype for every caller?"),
                    impact="torch.compile propagates the fake's dtype; a wrong one compiles cleanly and then fails a "
                           "dtype check or silently miscomputes at run time.",
                    action=(f"Author must derive output {i}'s dtype in `{fake.name}` the same way the real op does."
                            if proven else f"Reviewer should ask whether output {i}'s dtype in `{fake.name}` always "
                            "equals the real op's, and derive both from the same input."),
                    trigger=(f"tracing `{op.qualified or op.name}` under torch.compile: the fake declares "
                             f"{_show(fk)} for output {i}, the kernel writes {_show(rk)}") if proven else None,
                    tag="verified" if proven else "inferred",
                    severity=None if proven else "medium",
                    evidence=[Evidence(f.path, f_el.lineno, ast.unparse(f_el)[:100]),
                              Evidence(f.path, r_el.lineno, ast.unparse(r_el)[:100])],
                )
    yield from _kernel_dtype_fakes(review)


def _pair_verdicts_one(op: _Op, fake: ast.AST) -> set[str]:
    """A comparable summary of how a fake disagrees with its op (arity and per-output dtype keys)."""
    real = op.real
    fake_shape = _return_shape(fake)
    if real is None or fake_shape is None:
        return set()
    out = set()
    real_shape = _return_shape(real)
    real_arity = len(real_shape) if real_shape is not None else _annotation_arity(real)
    if real_arity is not None and real_arity != len(fake_shape):
        out.add(f"arity:{real_arity}:{len(fake_shape)}")
    if real_shape is not None:
        fp = {a.arg for a in fake.args.args + fake.args.kwonlyargs + fake.args.posonlyargs}
        rp = {a.arg for a in real.args.args + real.args.kwonlyargs + real.args.posonlyargs}
        for i, (r_el, f_el) in enumerate(zip(real_shape, fake_shape)):
            rk, fk = _element_dtype(r_el, real, rp), _element_dtype(f_el, fake, fp)
            if rk is not None and fk is not None and rk != fk:
                out.add(f"dtype:{i}:{rk}:{fk}")
    return out


def _pair_verdicts(tree: ast.Module) -> dict[str, set[str]]:
    return {fake.name: _pair_verdicts_one(op, fake) for op, fake in _fake_pairs(tree)}


def _count(n: int) -> str:
    return "one output" if n == 1 else f"{n} outputs"


def _show(key: tuple[str, str]) -> str:
    kind, value = key
    return {"const": f"`{value}`", "like": f"the dtype of `{value}`", "param": f"the `{value}` argument"}[kind]


def _fake_line(fake: ast.AST, real: ast.AST, changed: set[int]) -> int:
    """The def the PR edited (fake first); a stale fake is reported where the real op changed."""
    for node in (fake, real):
        if touches(node, changed):
            return node.lineno
    return fake.lineno


# --------------------------------------------------------------------------------------------
# fake-impl-mismatch, C++ side: the PR changes how a compiled op's C++ entry picks an output's dtype
# (a ScalarType on one arm of a condition, an input's own dtype on the other), and the op's fake still
# allocates that output with the input's dtype on some path.
# --------------------------------------------------------------------------------------------

CPP_ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
                            "empty_strided", "rand", "randn", "randint"})
SCALAR_CONSTANT = lazy_re(r"(?:(?:at|torch|c10)::)?(?:ScalarType::(\w+)|k([A-Z][A-Za-z0-9_]*))")
INPUT_DTYPE = lazy_re(r"(?:(?:c10|at|torch)::typeMetaToScalarType\()?(\w+)\s*\.\s*(?:scalar_type|dtype)\s*\(\s*\)\)?")
CPP_ENTRY = "fc_name\\s*=\\s*[\"']{0}[\"']|def {0}\\s*\\("


@record
class _KernelDtype:
    """One output of a C++ op entry whose dtype a condition picks: a constant on one arm, an input's own on the other."""

    output: int  # position in the returned tensors
    function: str
    alloc_line: int
    decided_line: int  # the ternary or the assignment of the constant
    condition: str
    constant: str  # ScalarType name, e.g. BFloat16
    source: str  # the parameter whose dtype the other arm copies
    source_index: int
    lines: set[int]  # every line that takes part in the choice


def _cpp_locals(body) -> dict[str, list[tuple[object, object]]]:
    """name → (defining node, value) for every `T name = v`, `auto name = v` and `name = v` in a body."""
    out: dict[str, list[tuple[object, object]]] = {}
    for node in cpp.walk(body):
        if node.type == "init_declarator":
            target, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
        elif node.type == "assignment_expression" and cpp.text_of(node.child_by_field_name("operator")) == "=":
            target, value = node.child_by_field_name("left"), node.child_by_field_name("right")
        else:
            continue
        if target is not None and value is not None and target.type == "identifier":
            out.setdefault(cpp.text_of(target), []).append((node, value))
    return out


def _cpp_returned(func, body) -> list[str | None] | None:
    """The names a function returns, by position (`return {out, lse};`), consistent over its returns."""
    lists = []
    for node in cpp.walk(body):
        if node.type != "return_statement" or not node.named_children \
                or next((a for a in cpp.ancestors(node) if a.type in cpp.FUNCTION_TYPES), None) != func:
            continue
        expr = node.named_children[0]
        if expr.type == "compound_literal_expression":
            expr = expr.child_by_field_name("value") or expr
        if expr.type == "initializer_list":
            elts = expr.named_children
        elif expr.type == "call_expression" and cpp.callee_name(expr) in ("make_tuple", "tuple", "forward_as_tuple"):
            elts = expr.child_by_field_name("arguments").named_children
        else:
            elts = [expr]
        lists.append([cpp.text_of(e) if e.type == "identifier" else None for e in elts])
    if not lists or len({len(names) for names in lists}) != 1:
        return None
    return [name if all(names[i] == name for names in lists) else None for i, name in enumerate(lists[0])]


def _dtype_argument(call, locals_: dict):
    """X in an allocation's `opts.dtype(X)` / `torch::dtype(X)`, directly or through an options local."""
    args = call.child_by_field_name("arguments")
    if args is None:
        return None
    found = _dtype_call(args)
    for arg in args.named_children if found is None else []:
        defs = locals_.get(cpp.text_of(arg), []) if arg.type == "identifier" else []
        if len(defs) == 1 and (found := _dtype_call(defs[0][1])) is not None:
            break
    return found


def _dtype_call(root):
    for node in cpp.walk(root):
        if node.type != "call_expression":
            continue
        fn = node.child_by_field_name("function")
        named = node.child_by_field_name("arguments").named_children
        if named and (fn.type == "field_expression" and cpp.text_of(fn.child_by_field_name("field")) == "dtype"
                      or cpp.text_of(fn) in ("torch::dtype", "at::dtype")):
            return named[0]
    return None


def _dtype_arm(node, locals_: dict, params: list[str], depth: int = 0) -> tuple[str, str] | None:
    """('const', ScalarType name) or ('input', parameter) for one arm of a dtype choice."""
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    text = cpp.text_of(node).strip()
    match = SCALAR_CONSTANT.fullmatch(text)
    if match:
        return ("const", match.group(1) or match.group(2))
    match = INPUT_DTYPE.fullmatch(text)
    if match and match.group(1) in params:
        return ("input", match.group(1))
    defs = locals_.get(text, []) if node.type == "identifier" and depth < 3 else []
    return _dtype_arm(defs[0][1], locals_, params, depth + 1) if len(defs) == 1 else None


def _dtype_choice(node, locals_: dict, params: list[str], func, depth: int = 0):
    """(condition, constant, input parameter, deciding line, lines) when `node` picks a dtype by a condition."""
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node.type == "conditional_expression":
        arms = [_dtype_arm(node.child_by_field_name(k), locals_, params) for k in ("consequence", "alternative")]
        kinds = [a[0] if a else None for a in arms]
        condition = cpp.text_of(node.child_by_field_name("condition"))
        if kinds == ["const", "input"]:
            return condition, arms[0][1], arms[1][1], cpp.line_of(node), {cpp.line_of(node)}
        if kinds == ["input", "const"]:
            return f"!({condition})", arms[1][1], arms[0][1], cpp.line_of(node), {cpp.line_of(node)}
        return None
    if node.type != "identifier" or depth > 2:
        return None
    defs = locals_.get(cpp.text_of(node), [])
    if len(defs) == 1:
        found = _dtype_choice(defs[0][1], locals_, params, func, depth + 1)
        return found and (*found[:4], found[4] | {cpp.line_of(defs[0][0])})
    arms = [(d, _dtype_arm(v, locals_, params)) for d, v in defs]
    if len(arms) < 2 or any(a is None for _, a in arms):
        return None
    consts = [(d, a) for d, a in arms if a[0] == "const"]
    inputs = {a[1] for _, a in arms if a[0] == "input"}
    if len(consts) != 1 or len(inputs) != 1:
        return None
    where, (_, constant) = consts[0]
    guard = cpp.guards(where, stop=func)
    if not guard:
        return None  # assigned unconditionally: a later plain assignment, not a choice
    kind, condition = guard[0]
    condition = condition[1:-1] if kind.startswith("if") else condition  # an if's condition clause keeps its ()
    return condition, constant, inputs.pop(), cpp.line_of(where), {cpp.line_of(d) for d, _ in arms}


def _kernel_dtype_choices(text: str, name: str, changed: set[int]) -> list[_KernelDtype]:
    """Outputs of C++ function `name` whose dtype a condition picks, where the PR changed a line of that choice."""
    out = []
    for func in cpp.nodes_of_type(cpp.parse(text), "function_definition"):
        if cpp.function_name(func) != name:
            continue
        body = func.child_by_field_name("body")
        if body is None or not any(cpp.line_of(func) <= n <= func.end_point[0] + 1 for n in changed):
            continue
        returned = _cpp_returned(func, body)
        if not returned:
            continue
        params = cpp.parameter_names(func)
        locals_ = _cpp_locals(body)
        for index, ret in enumerate(returned):
            for _, value in locals_.get(ret or "", []):
                if value.type != "call_expression" or cpp.callee_name(value) not in CPP_ALLOCATORS:
                    continue
                dtype = _dtype_argument(value, locals_)
                choice = _dtype_choice(dtype, locals_, params, func) if dtype is not None else None
                if choice is None:
                    continue
                condition, constant, source, decided, lines = choice
                lines = lines | {cpp.line_of(value), cpp.line_of(dtype)}
                if lines & changed:
                    out.append(_KernelDtype(index, name, cpp.line_of(value), decided, condition, constant, source,
                                            params.index(source), lines))
                break
    return out


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]


def _returned_output(tree: ast.Module, func, index: int, renames: dict[str, str], depth: int = 0):
    """(function, expression, caller names of its parameters) for output `index` of `func`, following a
    `return helper(...)` into a def of the same module; None when the returns disagree or are not visible."""
    returns = [n.value for n in walk(func) if isinstance(n, ast.Return) and n.value is not None
               and innermost_function(func, n) is func]
    if len(returns) != 1:
        return None
    value = returns[0]
    if isinstance(value, (ast.Tuple, ast.List)):
        return (func, value.elts[index], renames) if index < len(value.elts) else None
    helper = index_of(tree).functions.get(value.func.id) if isinstance(value, ast.Call) \
        and isinstance(value.func, ast.Name) else None
    if helper is None or depth > 1:
        return None
    names = _params(helper)
    passed = {names[i]: a for i, a in enumerate(value.args) if i < len(names)}
    passed.update({k.arg: k.value for k in value.keywords if k.arg})
    inner = {p: renames.get(a.id, a.id) for p, a in passed.items() if isinstance(a, ast.Name)}
    return _returned_output(tree, helper, index, inner, depth + 1)


def _stale_fake_allocations(tree: ast.Module, fake, index: int):
    """(function, allocations, fake parameter) when every allocation of output `index` of `fake` copies one
    input's dtype with no condition on a dtype around it; None when any path allocates otherwise, or the
    output is not visibly allocated (a caller's `out=` passed through is no allocation)."""
    found = _returned_output(tree, fake, index, {p: p for p in _params(fake)})
    if found is None:
        return None
    func, expr, renames = found
    params = _params(func)
    values = _bound_values(func, expr.id) if isinstance(expr, ast.Name) else [expr]
    allocations, sources = [], set()
    idx = index_of(tree)
    for value in values:
        if isinstance(value, ast.Name) and value.id in params:
            continue  # the caller's own tensor (`out=`)
        key = _element_dtype(value, func, set(params)) if isinstance(value, ast.Call) else None
        if key is None or key[0] != "like" or key[1] not in params:
            return None  # another dtype, or one not read here, on this path
        if any(isinstance(a, ast.If) and "dtype" in ast.unparse(a.test) for a in idx.ancestors(value)):
            return None  # the fake already asks about a dtype on this path
        allocations.append(value)
        sources.add(renames.get(key[1], ""))
    if not allocations or len(sources) != 1 or "" in sources:
        return None
    return func, allocations, sources.pop()


def _binding(review: ReviewInput, op: _Op, cpp_path: str) -> bool | None:
    """Whether `op`'s C++ entry is read from `cpp_path` alone: True when aiter's JIT config builds the op's module
    from that file and no other of its sources defines the entry; False when it builds it from other files;
    None when the config does not say (the name alone then ties them)."""
    srcs = review.facts.compiled_sources(op.module) if op.module else None
    if srcs is None:
        return None
    if not any(cpp_path == s or (s.endswith("/") and cpp_path.startswith(s)) for s in srcs):
        return False
    for other in srcs:
        if other == cpp_path or other.endswith("/"):
            continue
        text = review.source.text(other)
        if text is None:
            return None
        try:
            tree = cpp.parse(text)
        except Unparsable:
            return None
        if any(cpp.function_name(f) == op.name for f in cpp.nodes_of_type(tree, "function_definition")):
            return None  # defined twice among the module's sources: which one binds is not read here
    return True


def _kernel_dtype_fakes(review: ReviewInput) -> Iterable[Finding]:
    for cf in review.changed("cpp", include_tests=False):
        text = review.source.text(cf.path)
        changed = changed_lines(cf)
        if not text or not changed or "ScalarType" not in text and "::k" not in text:
            continue
        try:
            tree = cpp.parse(text)
        except Unparsable:
            continue
        names = {cpp.function_name(f) for f in cpp.nodes_of_type(tree, "function_definition")
                 if any(cpp.line_of(f) <= n <= f.end_point[0] + 1 for n in changed)}
        for name in sorted(n for n in names if n.isidentifier()):
            choices = _kernel_dtype_choices(text, name, changed)
            if not choices:
                continue
            pattern = CPP_ENTRY.format(re.escape(name))
            for path, _, _ in review.source.grep(pattern, "head", ("*.py",), files_only=True):
                if review.is_test(path) or not review.facts.is_library(path):
                    continue
                yield from _stale_fakes_for(review, path, name, cf.path, choices)


def _stale_fakes_for(review: ReviewInput, path: str, name: str, cpp_path: str,
                     choices: list[_KernelDtype]) -> Iterable[Finding]:
    tree = review.source.python(path)
    if tree is None:
        return
    defs = index_of(tree).functions
    for op in _ops(tree):
        if op.kind != "compile_ops" or op.name != name or not isinstance(op.fake, ast.Name) or op.fake.id not in defs:
            continue
        bound = _binding(review, op, cpp_path)
        if bound is False:
            continue
        fake = defs[op.fake.id]
        stub = _params(op.real) if op.real is not None else []
        for choice in choices:
            stale = _stale_fake_allocations(tree, fake, choice.output)
            if stale is None:
                continue
            func, allocations, source = stale
            if source != choice.source and (source not in stub or stub.index(source) != choice.source_index):
                continue  # the fake copies another input's dtype than the kernel's other arm
            yield _stale_fake_finding(review, path, op, fake, func, allocations[0], source, cpp_path, choice, bound)


def _stale_fake_finding(review: ReviewInput, path: str, op: _Op, fake, func, alloc: ast.Call, source: str,
                        cpp_path: str, choice: _KernelDtype, bound: bool | None) -> Finding:
    f = next((c for c in review.files if c.path == path), None)
    edited = sorted(n for n in (f.added_lines if f is not None else set())
                    if func.body[0].lineno <= n <= (func.end_lineno or 0))
    # a line the PR edited in the function that allocates (an inline comment), else the allocation itself
    line = alloc.lineno if alloc.lineno in edited or not edited else min(edited, key=lambda n: abs(n - alloc.lineno))
    via = f" (through `{func.name}`)" if func is not fake else ""
    verified = bool(bound)
    return Finding(
        rule="fake-impl-mismatch", path=path, line=line,
        problem=f"The PR changes how the C++ entry `{choice.function}` ({cpp_path}:{choice.decided_line}) picks the "
                f"dtype of output {choice.output}: `{choice.constant}` when `{choice.condition}`, else `{source}`'s "
                f"dtype. Its fake `{fake.name}`{via} still allocates that output with `{source}`'s dtype "
                f"({path}:{alloc.lineno}) and never asks the condition.",
        impact="torch.compile plans the graph from the fake: where the condition holds the traced output has "
               f"`{source}`'s dtype while the kernel returns `{choice.constant}`, so the compiled graph fails a "
               "dtype check or reinterprets the bytes downstream.",
        action=f"Author must derive output {choice.output}'s dtype in `{func.name}` the way `{choice.function}` "
               f"does (`{choice.constant}` when the kernel's condition holds) on every path that allocates it."
        if verified else f"Reviewer should confirm `{op.name}` binds to `{choice.function}` in {cpp_path} and, if so, "
                         f"ask for output {choice.output}'s dtype in `{func.name}` to follow the kernel's condition.",
        trigger=f"a torch.compile'd call of `{op.name}` where `{choice.condition}` holds and no `out=` is passed"
        if verified else None,
        tag="verified" if verified else "inferred",
        severity=None if verified else "medium",
        evidence=[Evidence(path, alloc.lineno, ast.unparse(alloc)[:100]),
                  Evidence(cpp_path, choice.decided_line, f"{choice.constant} when {choice.condition}"[:100]),
                  Evidence(cpp_path, choice.alloc_line, f"output {choice.output} allocated here")],
    )
