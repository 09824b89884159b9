"""Regular expressions the engine ships: compiled on first use, and compiled once per interpreter.

A review imports every detector module, and their ~220 module-level patterns cost ~30 ms to compile
at import, whether or not the PR ever reaches them: a one-file PR uses a handful. `lazy_re` stands
for `re.compile` there and compiles on the first attribute asked (`.search`, `.sub`, `.pattern`, …);
after that the compiled pattern's methods sit on the object itself, as fast to call as the pattern's.

Even so a median review compiled ~200 patterns (the module-level ones it reaches, the rule data's
family and path patterns) for ~25 ms of its ~0.3 s: `re` parses and translates each in Python.
`compile_shipped` keeps what that translation produces (the matcher's code, a list of ints) in the
user's cache, per interpreter version, the way Python keeps byte code, and hands it straight to the
matcher the next time. Only patterns written in the engine or its rule data go there: a pattern
built from a PR's names would grow the cache with every review.
"""
from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Any, Callable

from ..kept import MarshalStore, cache_file

_COPIED = ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split", "scanner",
           "pattern", "flags", "groups", "groupindex")


class LazyPattern:
    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.source = (pattern, flags)
        self.pattern = pattern  # read without compiling: one pattern built from another's source

    def __getattr__(self, name: str):
        # only reached for what the instance does not hold yet: the first use
        if name.startswith("__"):
            raise AttributeError(name)  # copy/pickle probing a bare instance
        compiled = compile_shipped(*self.source)
        self.__dict__.update((attr, getattr(compiled, attr)) for attr in _COPIED)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_re({self.source[0]!r}, {self.source[1]!r})"


def lazy_re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return LazyPattern(pattern, flags)  # type: ignore[return-value]


class CompiledPatterns(MarshalStore):
    """(pattern, flags) → what `re`'s compiler hands the matcher (flags, code, group count, group
    names both ways), kept in a marshal file (`kept.MarshalStore`). A stored entry the matcher
    refuses (it validates the code it is given) is compiled afresh. ("required", pattern) →
    `required_substrings(pattern)`."""

    def compile(self, pattern: str, flags: int = 0) -> re.Pattern[str]:
        key = (pattern, int(flags))
        entry = self.entries.get(key)
        if entry is not None:
            try:
                return _sre.compile(pattern, *entry)
            except (TypeError, ValueError, RuntimeError):
                pass
        parsed = _parser.parse(pattern, key[1])
        indexgroup: list[Any] = [None] * parsed.state.groups
        for name, index in parsed.state.groupdict.items():
            indexgroup[index] = name
        # as re._compiler.compile builds it (3.11-3.13); its opcodes are int subclasses marshal refuses
        entry = (int(key[1] | parsed.state.flags), [int(op) for op in _compiler._code(parsed, key[1])],
                 parsed.state.groups - 1, dict(parsed.state.groupdict), tuple(indexgroup))
        compiled = _sre.compile(pattern, *entry)
        self.keep(key, entry)
        return compiled


try:  # CPython's compiler, which the store reads and feeds
    import _sre
    from re import _compiler, _parser
    _STORABLE = hasattr(_compiler, "_code") and hasattr(_parser, "parse")
except ImportError:
    _STORABLE = False


@lru_cache(maxsize=1)
def _compiled_patterns() -> CompiledPatterns:
    return CompiledPatterns(cache_file("regex", f"{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}"))


@lru_cache(maxsize=4096)
def compile_shipped(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)` for a pattern the engine or its rule data holds, from the store
    when an earlier process compiled it under this interpreter; once per process, as `re` keeps its own."""
    if not _STORABLE:
        return re.compile(pattern, flags)
    return _compiled_patterns().compile(pattern, flags)


def required_substrings(pattern: str) -> tuple[str, ...] | None:
    """Strings one of which every match of `pattern` holds (the longest such its syntax shows), or None
    when it shows none: a search may skip text holding none of them. Read from `re`'s own parse of the
    pattern, so the syntax is Python's; a case-insensitive part says nothing. The answer is kept with
    the compiled patterns (a parse costs ~0.1 ms, and a review asks it of ~100 rule patterns): only ask
    it of a pattern the engine or its rule data holds."""
    if not _STORABLE:
        return None
    store = _compiled_patterns()
    key = ("required", pattern)
    if key in store.entries:
        return store.entries[key]
    try:
        parsed = _parser.parse(pattern, 0)
    except re.error:
        return None
    held = None if parsed.state.flags & re.IGNORECASE else _required(parsed)
    store.keep(key, held)
    return held


def may_match(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """A test that is False for a text `pattern` cannot match, and cheaper than the search: whether the
    text holds one of its `required_substrings`, or, when the pattern shows none (or matches regardless of
    case), the search itself. For a pattern the engine or its rule data holds."""
    held = None if pattern.flags & re.IGNORECASE else required_substrings(pattern.pattern)
    if held is None:
        return lambda text: pattern.search(text) is not None
    return lambda text: any(s in text for s in held)


def _required(items) -> tuple[str, ...] | None:
    best: tuple[str, ...] | None = None
    run: list[str] = []

    def consider(found: tuple[str, ...] | None) -> None:
        nonlocal best
        if found and all(found) and (best is None or min(map(len, found)) > min(map(len, best))):
            best = found

    for op, arg in items:
        if op == _C.LITERAL:
            run.append(chr(arg))
            continue
        consider(("".join(run),))  # a run of literals ends: every match holds it
        run = []
        if op == _C.SUBPATTERN:  # (group, flags added, flags removed, items)
            if not arg[1] & re.IGNORECASE:
                consider(_required(arg[3]))
        elif op == _C.BRANCH:  # one of the alternatives, each holding one of its own strings
            alternatives = [_required(branch) for branch in arg[1]]
            if all(alternatives):
                consider(tuple(dict.fromkeys(s for alt in alternatives for s in alt)))  # type: ignore[union-attr]
        elif op in _REPEATS and arg[0] >= 1:  # (min, max, items): repeated at least once
            consider(_required(arg[2]))
        elif op == getattr(_C, "ATOMIC_GROUP", None):
            consider(_required(arg))
    consider(("".join(run),))
    return best


try:
    from re import _constants as _C
    _REPEATS = tuple(getattr(_C, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_C, name))
except ImportError:
    _STORABLE = False
