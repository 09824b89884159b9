"""What a detector sees: the changed files, the profile, the PR, and read-only source access."""
from __future__ import annotations

import ast
import re
from fnmatch import fnmatchcase
from typing import Any, Callable, Iterator, TypeVar

from ..git.diff import ChangedFile, changed_paths
from ..lang.index import index_of
from ..lang.python import FUNCTION_TYPES, imported_module_path
from ..model import PRInfo, field, record
from ..profiles import Profile
from ..repofacts import RepoFacts
from ..source import Source, word_regex
from ..triage import FileCode, Staleness
from ..lang.regex import lazy_re

T = TypeVar("T")
TEST_PATH = lazy_re(r"(^|/)(tests?|op_tests|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")


@record(eq=False)  # never compared whole: a review's own, by identity
class ReviewInput:
    """Everything a detector may read about the review."""

    files: list[ChangedFile]
    profile: Profile
    pr: PRInfo
    source: Source
    code: dict[str, FileCode] = field(default_factory=dict)  # per path: added/removed lines that are code
    families: dict[str, list[str]] = field(default_factory=dict)  # fired derivation families → evidence
    evidence: dict[str, Any] = field(default_factory=dict)  # evidence artifacts' data, by name
    stale: Staleness | None = None  # set when the PR no longer merges onto the base tip
    facts: RepoFacts | None = None  # how the repository works; built from profile and source when not given

    def __post_init__(self) -> None:
        if self.facts is None:
            self.facts = RepoFacts(self.profile, self.source)

    def once(self, key: str, compute: Callable[["ReviewInput"], T]) -> T:
        """`compute(self)`, computed once per review and kept on it under `key`: for what several detectors,
        an evidence collector and the review's search plan all ask."""
        if key not in self.__dict__:
            self.__dict__[key] = compute(self)
        return self.__dict__[key]

    def changed(self, *languages: str, include_tests: bool = True) -> Iterator[ChangedFile]:
        """Readable changed files on the head side, optionally of given languages."""
        for f in self.files:
            if f.status == "deleted" or f.skipped:
                continue
            if languages and f.language not in languages:
                continue
            if not include_tests and self.is_test(f.path):
                continue
            yield f

    def base_python(self, f: ChangedFile) -> ast.Module | None:
        """The file's parsed base side (under its old name when renamed); None for a new file."""
        return None if f.is_new else self.source.python(f.old_path or f.path, "base")

    def cut_from(self, f: ChangedFile) -> Iterator[ast.Module]:
        """The parsed base sides of the other Python files the PR removes lines from: where code that
        appears new in `f` (a kernel split into a new module, a module split into a package) was cut from."""
        for other in self.files:
            if other is not f and not other.skipped and other.language == "python" and other.removed:
                tree = self.source.python(other.old_path or other.path, "base")
                if tree is not None:
                    yield tree

    def base_word_lines(self, names: list[str]) -> dict[str, list[tuple[str, int, str]]]:
        """Per name (an identifier), the lines of the base tree's Python files holding it as a word, as a
        search of the base tree would find them, without that search: a file the PR leaves alone is the same
        on both sides, so the head tree's search (the review's planned one, when the names are planned)
        answers for it, and the base sides of the files the PR touches are read from their texts."""
        touched = self.once("_changed_paths", lambda r: changed_paths(r.source.repo, r.source.base, r.source.head))
        pattern = "|".join(map(re.escape, names))
        hits = self.source.word_lines(names, "base", sorted(p for p in touched if fnmatchcase(p, "*.py")))
        if hits is None:  # a touched file the review cannot read: the base tree is searched instead
            hits = self.source.grep(pattern, "base", ("*.py",), word=True)
        else:
            hits += [h for h in self.source.grep(pattern, "head", ("*.py",), word=True) if h[0] not in touched]
        return {n: [h for h in hits if word_regex(n).search(h[2])] for n in names}

    def base_text(self, f: ChangedFile, new_file: str | None = None) -> str | None:
        """The file's base-side text (under its old name when renamed); `new_file` for a new file."""
        return new_file if f.is_new else self.source.text(f.old_path or f.path, "base")

    def defs_reached(self, path: str, tree: ast.Module, name: str) -> list[tuple[ast.Module, ast.FunctionDef]]:
        """Every def `name` can mean in module `path`: its own top-level defs first, then one hop through each
        `from … import` of it anywhere in the module — arch switches import one name from several modules
        (`if arch == "gfx950": from …gfx950… import k`)."""
        found = [(tree, d) for d in tree.body if isinstance(d, FUNCTION_TYPES) and d.name == name]
        for node in index_of(tree).of_type(ast.ImportFrom):
            alias = next((a for a in node.names if (a.asname or a.name) == name), None)
            if alias is None:
                continue
            module = imported_module_path(path, node)
            for candidate in (module + ".py", module + "/__init__.py"):
                other = self.source.python(candidate) if self.source.exists(candidate) else None
                if other is not None:
                    found += [(other, d) for d in other.body if isinstance(d, FUNCTION_TYPES) and d.name == alias.name]
        return found  # type: ignore[return-value]

    def is_test(self, path: str) -> bool:
        return bool(TEST_PATH.search(path)) or self.profile.is_test(path)

    def python_files(self, include_tests: bool = True, added_matching: re.Pattern[str] | None = None,
                     removed_only: bool = False) -> Iterator[tuple[ChangedFile, ast.Module]]:
        """Changed Python files with added lines (`removed_only`: or with deleted lines only), parsed on the
        head side.

        `added_matching` skips, before parsing, files none of whose added lines match it."""
        for f in self.changed("python", include_tests=include_tests):
            if not (f.added or removed_only and f.removed):
                continue
            if added_matching is not None and not any(added_matching.search(t) for _, t in f.added):
                continue
            tree = self.source.python(f.path)
            if tree is not None:
                yield f, tree
