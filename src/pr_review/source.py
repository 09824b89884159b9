"""Read-only access to the two sides of a review: file text, tree look-ups, parsed Python.

Everything a detector may know about the repository goes through here, so each file is read
and parsed at most once per side, and whatever cannot be read is recorded as not checked.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Literal

from .git import CatFile, Repo
from .git.catfile import MISSING
from .lang import Unparsable
from .lang.python import parse
from .model import NotChecked

Side = Literal["head", "base"]


@dataclass
class Source:
    repo: Repo
    catfile: CatFile
    base: str  # merge base sha
    head: str
    not_checked: list[NotChecked] = field(default_factory=list)
    _trees: dict[tuple[Side, str], ast.Module | None] = field(default_factory=dict)
    _seen_unreadable: set[tuple[Side, str]] = field(default_factory=set)

    def rev(self, side: Side) -> str:
        return self.head if side == "head" else self.base

    def text(self, path: str, side: Side = "head") -> str | None:
        blob = self.catfile.read(self.rev(side), path)
        if blob.text is None and blob.reason != MISSING:
            if (side, path) not in self._seen_unreadable:
                self._seen_unreadable.add((side, path))
                self.not_checked.append(NotChecked(path, f"{side} side {blob.reason}"))
        return blob.text

    def lines(self, path: str, side: Side = "head") -> list[str]:
        text = self.text(path, side)
        return text.splitlines() if text is not None else []

    def python(self, path: str, side: Side = "head") -> ast.Module | None:
        """The parsed module, or None (unreadable, or not parsable — recorded as not checked)."""
        key = (side, path)
        if key not in self._trees:
            text = self.text(path, side)
            tree = None
            if text is not None:
                try:
                    tree = parse(text, filename=path)
                except Unparsable as exc:
                    self.not_checked.append(NotChecked(path, f"{side} side is {exc}: not parsed"))
            self._trees[key] = tree
        return self._trees[key]

    def exists(self, path: str, side: Side = "head") -> bool:
        """Whether a file or directory is at `path`, asked of the long-lived cat-file process."""
        return self.catfile.read(self.rev(side), path).reason != MISSING

    def grep(self, pattern: str, side: Side = "head", pathspecs: tuple[str, ...] = (), **kw) -> list[tuple[str, int, str]]:
        return self.repo.grep(pattern, self.rev(side), pathspecs, **kw)

    def files(self, side: Side = "head", pathspecs: tuple[str, ...] = ()) -> list[str]:
        return self.repo.ls_tree(self.rev(side), pathspecs)
