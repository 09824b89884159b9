"""Derivation's search of a PR's added lines reads, for a pattern whose matches all hold one of
a few strings, only the lines holding one: the evidence line it reports is the one a search of every
line reports, for every shipped pattern."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from pr_review.derivation import Lines, _first_line
from pr_review.lang.regex import required_substrings
from pr_review.warm import shipped_patterns

ROOT = Path(__file__).resolve().parents[2]


def _lines() -> list[tuple[str, int, str]]:
    """Code and fixtures of this repository (Python, C++, YAML): lines of every kind."""
    out = []
    for path in sorted([*ROOT.glob("src/**/*.py"), *ROOT.glob("tests/fixtures/rules/**/head/**/*.*")]):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            out += [(str(path.relative_to(ROOT)), n, t) for n, t in enumerate(text.splitlines(), 1)]
    return out


def _line_by_line(patterns: list[str], lines: list[tuple[str, int, str]]) -> str | None:
    compiled = [re.compile(p) for p in patterns]
    hit = next((line for line in lines if any(p.search(line[2]) for p in compiled)), None)
    return None if hit is None else f"{hit[0]}:{hit[1]}: {hit[2].strip()[:120]}"


LINE_PATTERNS = sorted({p for p, flags in shipped_patterns() if not flags})


def test_every_shipped_pattern_finds_the_line_a_search_of_each_line_finds():
    lines = _lines()
    rng = random.Random(20261202)
    for size in (3, 40, 900):
        sample = rng.sample(lines, size)
        for pattern in LINE_PATTERNS:
            assert _first_line(pattern, Lines(sample)) == _line_by_line([pattern], sample), pattern
    for _ in range(20):  # several patterns at once: the first line any of them finds
        patterns = rng.sample(LINE_PATTERNS, 5)
        sample = rng.sample(lines, 600)
        assert _first_line(patterns, Lines(sample)) == _line_by_line(patterns, sample)


def test_most_shipped_patterns_name_the_strings_their_matches_hold():
    held = [p for p in LINE_PATTERNS if required_substrings(p)]
    assert len(held) > len(LINE_PATTERNS) / 2


@pytest.mark.parametrize("pattern, held", [
    (r"\btl\.dot\(|allow_tf32", ("tl.dot(", "allow_tf32")),
    (r"num_(q_|kv_)?heads", ("heads",)),     # an optional group holds nothing for sure
    (r"(abc)+x", ("abc",)),                 # a group repeated at least once does
    (r"(?i)torch", None),                    # case-insensitive: any spelling
    (r"a(?i:bcd)e", ("a",)),
    (r"[a-z]+\s*=", ("=",)),
    (r"\d+", None),
])
def test_the_strings_a_pattern_holds(pattern, held):
    assert required_substrings(pattern) == held
