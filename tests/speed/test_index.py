"""The shared per-tree index answers exactly what the detectors used to compute for themselves."""
from __future__ import annotations

import ast
import textwrap

import pytest

from pr_review.lang.index import index_of
from pr_review.lang.python import SHARED_LEAVES, qualified_functions

SOURCE = textwrap.dedent('''
    """Module docstring."""
    import os
    from torch import ops as o

    LIMIT = 128

    class Runner:
        def run(self, x, scale=1.0):
            y = o.aiter.gemm(x, scale)
            return helper(y, "fp8")

        class Inner:
            def run(self):
                return os.environ.get("AITER_FLAG", "0")

    def helper(y, dtype):
        def inner(z):
            return helper(z, dtype)
        return (lambda v: v + LIMIT)(inner(y))
''')


def tree() -> ast.Module:
    return ast.parse(SOURCE)


def _walked(node: ast.AST) -> list[ast.AST]:
    """`ast.walk` without the shared leaves (Load, Add, Eq, …), which the index leaves out."""
    return [n for n in ast.walk(node) if not isinstance(n, SHARED_LEAVES)]


def test_nodes_are_ast_walk_order_without_the_shared_leaves():
    t = tree()
    assert index_of(t).nodes == _walked(t)
    assert len(index_of(t).nodes) < len(list(ast.walk(t)))


def test_the_shared_leaves_are_one_object_per_kind_and_no_type_the_index_answers_for():
    first, second = ast.parse("x = a + b"), ast.parse("y = c + d")
    assert first.body[0].value.op is second.body[0].value.op and first.body[0].targets[0].ctx is ast.parse("z = 1").body[0].targets[0].ctx
    for kind in (ast.Load, ast.Add, ast.operator, (ast.Name, ast.Eq)):
        with pytest.raises(ValueError):
            index_of(first).of_type(kind)


def test_parents_map_every_child_to_its_parent():
    t = tree()
    parents = index_of(t).parents
    for parent in ast.walk(t):
        for child in ast.iter_child_nodes(parent):
            if not isinstance(child, SHARED_LEAVES):  # Load, Add, …: one object for every holder
                assert parents[child] is parent
    assert t not in parents


def test_of_type_keeps_walk_order_and_subclasses():
    t = tree()
    index = index_of(t)
    assert index.of_type(ast.Call) == [n for n in ast.walk(t) if isinstance(n, ast.Call)]
    assert index.of_type(ast.stmt) == [n for n in ast.walk(t) if isinstance(n, ast.stmt)]


def test_function_table_is_the_qualified_names():
    t = tree()
    assert index_of(t).functions == qualified_functions(t)
    assert set(index_of(t).functions) == {"Runner.run", "Runner.Inner.run", "helper", "helper.inner"}


def test_calls_by_callee_name():
    index = index_of(tree())
    assert [c.lineno for c in index.calls_to("helper")] == [11, 19]
    assert [ast.unparse(c.func) for c in index.calls_to("gemm")] == ["o.aiter.gemm"]
    assert [ast.unparse(c.func) for c in index.calls_to("get")] == ["os.environ.get"]
    assert index.calls_to("absent") == []


def test_literals_by_line():
    index = index_of(tree())
    assert [n.value for n in index.literals_by_line[6]] == [128]
    assert [n.value for n in index.literals_by_line[15]] == ["AITER_FLAG", "0"]


def test_scope_of_is_the_innermost_function_class_or_lambda():
    t = tree()
    index = index_of(t)
    functions = index.functions
    inner_call = index.calls_to("helper")[1]
    assert index.scope_of(inner_call) is functions["helper.inner"]
    name_limit = next(n for n in index.of_type(ast.Name) if n.id == "LIMIT" and isinstance(n.ctx, ast.Load))
    assert isinstance(index.scope_of(name_limit), ast.Lambda)
    assert index.scope_of(t.body[2]) is t  # `LIMIT = 128` is module level


def test_index_is_built_once_per_tree_and_per_subtree():
    t = tree()
    assert index_of(t) is index_of(t)
    func = qualified_functions(t)["helper"]
    assert index_of(func) is not index_of(t)
    assert index_of(func).nodes == _walked(func)
    assert index_of(tree()) is not index_of(t)  # another parse is another tree


def test_depth_counts_levels_with_the_shared_leaves():
    assert index_of(ast.parse("")).depth == 1
    assert index_of(ast.parse("x")).depth == 4  # Module > Expr > Name > Load
    assert index_of(ast.parse("1")).depth == 3  # Module > Expr > Constant
    nested = ast.parse("(" * 40 + "1" + ")" * 40 + " + " + "a + " * 60 + "a")
    assert index_of(nested).depth == _depth(nested) > 60
    for text in ("-x", "not x", "a < b", "x += 1", "f(1)", "[1, 2]", "a.b = 1", "del a[1]", EDGES, SOURCE):
        t = ast.parse(text)
        assert index_of(t).depth == _depth(t), text


def _depth(node: ast.AST) -> int:
    return 1 + max((_depth(c) for c in ast.iter_child_nodes(node)), default=0)


# Every field shape a walk reads only where nodes can be: optional fields left None, lists holding
# None (`Dict.keys` for `**d`, `kw_defaults`), nested f-strings, match patterns, comprehensions, and
# scalar fields (names, constants, levels) skipped.
EDGES = textwrap.dedent('''
    from . import a as b
    from ..pkg import *
    global_d = {**base, "k": 1, **{2: 3}}
    def f(a, /, b=1, *args, c, d=None, e, **kw) -> "int":
        global G
        x: int
        y = f"{a!r:>{b}} {c=}" + f'{f"{d}"}'
        z = [i async for i in g() if i if not i] if e else {k: v for k, v in kw.items()}
        del x
        try:
            pass
        except* (ValueError, TypeError) as err:
            raise RuntimeError() from err
        match y:
            case {"k": [1, *rest], **others} if rest:
                return -1
            case Point(x=0, y=_) | None as p:
                return p
        return (yield from z)[1:2:3, ...]
    async def g():
        async with a as (b, c), d:
            await e
    lambda *, k=None: k
''')


def test_walks_read_every_child_on_every_field_shape():
    from pr_review.lang.python import children, walk
    t = ast.parse(EDGES)
    expected = list(ast.walk(t))
    assert list(walk(t)) == expected
    assert index_of(t).nodes == _walked(t)
    assert {type(n).__name__ for n in expected} >= {"MatchMapping", "MatchClass", "MatchOr", "MatchAs",
                                                  "TryStar", "JoinedStr", "FormattedValue", "AsyncWith"}
    parents = index_of(t).parents
    for node in expected:
        assert children(node) == list(ast.iter_child_nodes(node))
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, SHARED_LEAVES):
                assert parents[child] is node


def test_parents_of_a_level_wider_than_two_byte_counts():
    t = ast.parse("x = [" + ", ".join(["1"] * 70_000) + "]\n")  # one level of 70,000 constants
    parents = index_of(t).parents
    listed = t.body[0].value
    assert all(parents[c] is listed for c in listed.elts) and parents[listed] is t.body[0]


def test_a_def_walked_again_reads_the_same_nodes_and_a_changed_copy_its_own():
    import copy

    from pr_review.lang.python import walk
    t = tree()
    func = next(n for n in ast.walk(t) if isinstance(n, ast.FunctionDef))
    expected = list(ast.walk(func))
    for _ in range(2):  # the first walk keeps the nodes, the second reads them
        assert list(walk(func)) == expected
    partial = next(n for n in ast.walk(t) if isinstance(n, ast.ClassDef))
    next(iter(walk(partial)))  # a walk stopped early keeps nothing
    assert list(walk(partial)) == list(ast.walk(partial))
    changed = copy.deepcopy(func)
    changed.body = changed.body[:1]
    assert list(walk(changed)) == list(ast.walk(changed))
