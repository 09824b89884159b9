"""`python -m pr_review.warm`: fill, once, the caches every review reads — the shipped rules' parsed
YAML and the compiled form of every pattern the engine and its rule data hold (with the strings its
matches hold) — where an install keeps them (the action's cached environment), so that no review
pays for them."""
from __future__ import annotations

import importlib
import pkgutil

from .catalog import family_patterns, load_catalog
from .lang.regex import LazyPattern, compile_shipped, required_substrings
from .profiles import load_profiles


def _lazy_patterns(value, seen: set[int]):
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, LazyPattern):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _lazy_patterns(v, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _lazy_patterns(v, seen)


def shipped_patterns() -> list[tuple[str, int]]:
    """(pattern, flags) of every module-level pattern of the engine and every pattern of the shipped
    families and profiles, each once."""
    import pr_review

    found: list[tuple[str, int]] = []
    for info in pkgutil.walk_packages(pr_review.__path__, "pr_review."):
        if info.name not in ("pr_review.__main__", __name__):  # the command line; this module
            seen: set[int] = set()
            found += [p.source for v in vars(importlib.import_module(info.name)).values() for p in _lazy_patterns(v, seen)]
    for family in load_catalog().families.values():
        found += family_patterns(family.when)
    for profile in load_profiles().values():
        runtime = profile.data.get("runtime") or {}
        found += [(p, 0) for p in [*(runtime.get("static") or []), *(runtime.get("test") or []),
                                   *(profile.data.get("test_dirs") or [])]]
    return list(dict.fromkeys(found))


def main() -> None:
    for pattern, flags in shipped_patterns():
        compile_shipped(pattern, flags)
        if not flags:  # derivation narrows its line searches by these
            required_substrings(pattern)


if __name__ == "__main__":
    main()
