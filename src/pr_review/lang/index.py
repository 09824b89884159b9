"""One parsed Python tree and the tables every detector and evidence collector asks of it.

A review parses each file side once (`Source.python`); `index_of(tree)` then builds, on first use
and once per tree, what detectors used to rebuild each for itself: the node list in `ast.walk`
order, the parent map, nodes by type, the function table, call sites by callee name and literals
by line. Everything is read-only: a detector that changed a tree or a table would change what
every later detector sees.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from functools import cached_property
from array import array
from itertools import chain, compress, islice, repeat
from operator import sub
from typing import Iterator, TypeVar

from .python import INDEXED_FIELDS, SCOPE_TYPES, SHARED_LEAVES, dotted_name, push_children, qualified_functions

Node = TypeVar("Node", bound=ast.AST)


class PythonIndex:
    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        self._by_type: dict[type, list[ast.AST]] = {}

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the tree but the shared leaves (SHARED_LEAVES: `Load`, `Add`, `Eq`, …, a third of a
        tree's nodes, one object however many nodes hold it, read from its holder), in the order `ast.walk`
        yields them (breadth first)."""
        return self._walked[0]

    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        """Each node's parent. Built on first use: about half the parsed trees are never asked, and
        the map costs a tenth of a tree's memory (21 MB over the 120 trees of aiter 044f906a8d).
        Read off the walk rather than by reading every node's fields again: the node list after the
        root is each node's children in turn, and the walk counted them."""
        nodes = self.nodes
        counts = chain.from_iterable(map(sub, marks, chain((0,), marks)) for marks in self._child_marks)
        # in the order the fields were read, so a shared node (the Load/Store/operator singletons)
        # keeps the last parent that holds it, as assigning child by child does
        parents = dict(zip(islice(nodes, 1, None), chain.from_iterable(map(repeat, nodes, counts))))
        del self._child_marks  # read once
        return parents

    @property
    def depth(self) -> int:
        """Levels of the tree, its shared leaves counted (1: the root alone)."""
        return self._walked[1]

    @cached_property
    def _walked(self) -> tuple[list[ast.AST], int]:
        # One pass, level by level, for both, reading only the fields that can hold nodes
        # (CHILD_FIELDS): `ast.walk` and `ast.iter_child_nodes` cost two generators per node, the
        # largest share of a review's time on big files. Iterative, so a tree of any depth is safe.
        # Per level, how many children the level's nodes had up to each of them (for `parents`).
        nodes: list[ast.AST] = []
        level: list[ast.AST] = [self.tree]
        depth = 0
        self._child_marks: list[array] = []
        fields = INDEXED_FIELDS
        while level:
            depth += 1
            nodes.extend(level)
            below: list[ast.AST] = []
            push, extend = below.append, below.extend
            marks = array("H")  # two bytes a node until a level holds 65,536 nodes
            mark = marks.append
            for node in level:
                push_children(node, push, extend, fields)
                try:
                    mark(len(below))
                except OverflowError:
                    marks = array("I", marks)
                    mark = marks.append
                    mark(len(below))
            self._child_marks.append(marks)
            if not below and any(map(fields.leafy.__contains__, map(type, level))):
                depth += 1  # the deepest level holds a node with a shared leaf under it
            level = below
        return nodes, depth

    def of_type(self, kind: type[Node]) -> list[Node]:
        """The nodes of one type (subclasses included), in `ast.walk` order; not of a shared leaf type,
        which the index leaves out."""
        if kind not in self._by_type:
            if any(issubclass(k, SHARED_LEAVES) for k in (kind if isinstance(kind, tuple) else (kind,))):
                raise ValueError(f"the index leaves out shared leaves such as {kind}: read them from their holders")
            exact = self._by_exact_type
            # a plain node class (not ast.Num & co., whose isinstance is custom) with no subclass in
            # the tree: its own bucket; an abstract type (ast.stmt) or a tuple: the buckets interleave
            if type(kind) is type and not any(t is not kind and issubclass(t, kind) for t in exact):
                self._by_type[kind] = exact.get(kind, [])
            elif all(type(k) is type for k in (kind if isinstance(kind, tuple) else (kind,))):
                # the node list filtered by the tree's own types that are `kind`, in C (a third of
                # an isinstance per node)
                kinds = {t for t in exact if issubclass(t, kind)}
                self._by_type[kind] = list(compress(self.nodes, map(kinds.__contains__, map(type, self.nodes))))
            else:
                self._by_type[kind] = [n for n in self.nodes if isinstance(n, kind)]
        return self._by_type[kind]  # type: ignore[return-value]

    @cached_property
    def _by_exact_type(self) -> dict[type, list[ast.AST]]:
        # one pass over the node list for every concrete type, instead of one per type asked for
        out: dict[type, list[ast.AST]] = {}
        get = out.get
        for kind, node in zip(map(type, self.nodes), self.nodes):
            bucket = get(kind)
            if bucket is None:
                out[kind] = [node]
            else:
                bucket.append(node)
        return out

    @cached_property
    def functions(self) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """Every def by qualified name (`Class.method`, `outer.inner`); see `qualified_functions`."""
        return qualified_functions(self.tree)

    @cached_property
    def calls_by_name(self) -> dict[str, list[ast.Call]]:
        """Call sites by the last part of the callee's dotted name (`f` for `f(…)`, `m.f(…)`, `a.b.f(…)`)."""
        out: dict[str, list[ast.Call]] = defaultdict(list)
        for call in self.of_type(ast.Call):
            name = dotted_name(call.func)
            if name:
                out[name.rsplit(".", 1)[-1]].append(call)
        return dict(out)

    def calls_to(self, name: str) -> list[ast.Call]:
        return self.calls_by_name.get(name, [])

    @cached_property
    def literals_by_line(self) -> dict[int, list[ast.Constant]]:
        out: dict[int, list[ast.Constant]] = defaultdict(list)
        for node in self.of_type(ast.Constant):
            out[node.lineno].append(node)
        return dict(out)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        parents = self.parents
        while node in parents:
            node = parents[node]
            yield node

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The innermost function, class or lambda enclosing `node`, else the tree itself."""
        return next((a for a in self.ancestors(node) if isinstance(a, SCOPE_TYPES)), self.tree)


INDEX_ATTRIBUTE = "_pr_review_index"  # not an AST field: ast.dump, unparse and compare ignore it


def index_of(tree: ast.AST) -> PythonIndex:
    """The index of `tree`, built once and kept on the tree itself, so it lives exactly as long as the
    tree. (A weak-keyed table leaked: the index holds the tree, so no entry ever died, and a `stats`
    worker kept every tree of every PR it had reviewed — 1.8 GB after 150 PRs.)"""
    index = tree.__dict__.get(INDEX_ATTRIBUTE)
    if index is None:
        index = PythonIndex(tree)
        setattr(tree, INDEX_ATTRIBUTE, index)
    return index


def release(tree: ast.AST) -> None:
    """Drop the index kept on `tree`: the index refers back to the tree, so without this a tree
    nobody holds any more waits for the cycle collector (paused during a review) to be freed."""
    tree.__dict__.pop(INDEX_ATTRIBUTE, None)
