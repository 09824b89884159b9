"""Module-level patterns compiled on first use answer as `re.compile`'s would, every one of them
compiles, and importing the detectors compiles none."""
from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

import pytest

import pr_review
from pr_review.lang.regex import LazyPattern, lazy_re


def test_a_lazy_pattern_answers_as_the_compiled_one():
    texts = ["x = torch.bfloat16", "FP8 max 448.0", "", "a\nb", "ÄÖ ü"]
    for source, flags in ((r"(?P<dt>bfloat16|fp8)\b", re.IGNORECASE), (r"^\w+", re.MULTILINE), (r"\s+", 0)):
        lazy, compiled = lazy_re(source, flags), re.compile(source, flags)
        for text in texts:
            assert bool(lazy.search(text)) == bool(compiled.search(text))
            assert lazy.findall(text) == compiled.findall(text)
            assert lazy.sub("_", text) == compiled.sub("_", text)
            assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
            assert bool(lazy.match(text)) == bool(compiled.match(text))
            assert bool(lazy.fullmatch(text)) == bool(compiled.fullmatch(text))
            assert lazy.split(text) == compiled.split(text)
        assert (lazy.pattern, lazy.flags, lazy.groups) == (compiled.pattern, compiled.flags, compiled.groups)


def test_a_broken_pattern_fails_on_first_use():
    broken = lazy_re(r"(unclosed")
    with pytest.raises(re.error):
        broken.search("x")


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


def test_every_module_level_lazy_pattern_compiles():
    found = []
    for info in pkgutil.walk_packages(pr_review.__path__, "pr_review."):
        if info.name == "pr_review.__main__":
            continue  # runs the command line
        module = importlib.import_module(info.name)
        seen: set[int] = set()
        for value in vars(module).values():
            found.extend(_lazy_patterns(value, seen))
    assert len(found) > 50
    for pattern in found:
        assert re.compile(pattern.pattern, pattern.flags)


def test_importing_the_detectors_compiles_none_of_their_patterns():
    # every detector and evidence module, and the lang helpers: a module-level re.compile in any of
    # them is paid by every review, whether or not the PR reaches it
    script = (
        "import importlib, pkgutil\n"
        "import pr_review.detectors as d, pr_review.evidence as e, pr_review.lang as l, pr_review.repofacts as facts\n"
        "from pr_review.lang.regex import LazyPattern\n"
        "d.all_detectors()\n"
        "mods = [importlib.import_module(f'{p.__name__}.{i.name}') for p in (d, e, l) for i in pkgutil.iter_modules(p.__path__)]\n"
        "mods.append(facts)\n"
        "lazy = [v for m in mods for v in vars(m).values() if isinstance(v, LazyPattern)]\n"
        "assert len(lazy) > 100, len(lazy)\n"
        "assert all('search' not in v.__dict__ for v in lazy), [v for v in lazy if 'search' in v.__dict__]\n"
        "import re\n"
        "eager = [f'{m.__name__}.{k}' for m in mods for k, v in vars(m).items() if isinstance(v, re.Pattern)]\n"
        "assert not eager, eager\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_a_lazy_patterns_source_is_read_without_compiling():
    lazy = lazy_re(r"^(?P<base>\w+?)_x$")
    assert lazy.pattern == r"^(?P<base>\w+?)_x$" and "search" not in vars(lazy)
