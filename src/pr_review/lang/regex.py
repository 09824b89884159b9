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
from typing import Any

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
    refuses (it validates the code it is given) is compiled afresh."""

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


def compile_shipped(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)` for a pattern the engine or its rule data holds, from the store
    when an earlier process compiled it under this interpreter."""
    if not _STORABLE:
        return re.compile(pattern, flags)
    return _compiled_patterns().compile(pattern, flags)
