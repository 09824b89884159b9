"""Module-level regular expressions compiled on first use.

A review imports every detector module, and their ~220 module-level patterns cost ~30 ms to compile
at import, whether or not the PR ever reaches them: a one-file PR uses a handful. `lazy_re` stands
for `re.compile` there and compiles on the first attribute asked (`.search`, `.sub`, `.pattern`, …);
after that the compiled pattern's methods sit on the object itself, as fast to call as the pattern's.
"""
from __future__ import annotations

import re

_COPIED = ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split", "scanner",
           "pattern", "flags", "groups", "groupindex")


class LazyPattern:
    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)
        self.pattern = pattern  # read without compiling: one pattern built from another's source

    def __getattr__(self, name: str):
        # only reached for what the instance does not hold yet: the first use
        if name.startswith("__"):
            raise AttributeError(name)  # copy/pickle probing a bare instance
        compiled = re.compile(*self._source)
        self.__dict__.update((attr, getattr(compiled, attr)) for attr in _COPIED)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_re({self._source[0]!r}, {self._source[1]!r})"


def lazy_re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return LazyPattern(pattern, flags)  # type: ignore[return-value]
