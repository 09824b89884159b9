"""C++/HIP/CUDA through tree-sitter: a real parse, so comments, strings and guards are told apart."""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser, Tree


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_cpp.language()))


def parse(text: str) -> Tree:
    return _parser().parse(text.encode("utf-8"))


def walk(node: Node) -> Iterator[Node]:
    cursor = node.walk()
    visited_children = False
    while True:
        if not visited_children:
            yield cursor.node
            if cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited_children = False
        elif cursor.goto_parent():
            visited_children = True
        else:
            return


def comments(tree: Tree) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of every comment, 1-based lines."""
    out = []
    for node in walk(tree.root_node):
        if node.type == "comment":
            text = node.text.decode("utf-8", "replace") if node.text else ""
            out.append((node.start_point[0] + 1, node.end_point[0] + 1, text))
    return out


def function_spans(tree: Tree) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function definition, 1-based."""
    spans = []
    for node in walk(tree.root_node):
        if node.type != "function_definition":
            continue
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type not in ("identifier", "field_identifier",
                                                                   "qualified_identifier", "operator_name",
                                                                   "destructor_name"):
            declarator = declarator.child_by_field_name("declarator")
        name = declarator.text.decode("utf-8", "replace") if declarator is not None and declarator.text else "?"
        spans.append((node.start_point[0] + 1, node.end_point[0] + 1, name))
    return spans
