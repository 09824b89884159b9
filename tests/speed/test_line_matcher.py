"""LineMatcher finds long blocks through anchor lines instead of looking at every pair of equal lines:
its blocks and opcodes must be difflib's, on lists alike and unlike, over any sub-range."""
from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from pr_review.lang import matching
from pr_review.lang.matching import LineMatcher


def _mutated(rng: random.Random, seq: list[int], alphabet: int) -> list[int]:
    """A copy of `seq` with a few lines dropped, inserted or rewritten, as a copied file differs."""
    out = list(seq)
    for _ in range(rng.randint(0, 8)):
        k, op = rng.randrange(len(out) + 1), rng.random()
        if op < 0.4:
            del out[k:k + rng.randint(1, 4)]
        elif op < 0.8:
            out[k:k] = [rng.randint(0, alphabet) for _ in range(rng.randint(1, 4))]
        else:
            out[k:k + 2] = [rng.randint(0, alphabet)]
    return out


def _pairs(rng: random.Random, count: int, longest: int):
    for _ in range(count):
        alphabet = rng.randint(1, 8)  # few distinct lines: many equal pairs, many ties
        a = [rng.randint(0, alphabet) for _ in range(rng.randint(0, longest))]
        b = _mutated(rng, a, alphabet) if rng.random() < 0.7 else \
            [rng.randint(0, alphabet) for _ in range(rng.randint(0, longest))]
        yield a, b


def _assert_as_difflib(a: list[int], b: list[int], rng: random.Random) -> None:
    plain, anchored = SequenceMatcher(None, a, b, autojunk=False), LineMatcher(a, b)
    assert anchored.get_opcodes() == plain.get_opcodes()
    alo, blo = rng.randint(0, len(a)), rng.randint(0, len(b))
    ranges = (alo, rng.randint(alo, len(a)), blo, rng.randint(blo, len(b)))
    assert anchored.find_longest_match(*ranges) == plain.find_longest_match(*ranges)


def test_anchored_search_on_every_range_answers_as_difflib(monkeypatch):
    # short spacings and no size floor: the anchored search decides nearly every range
    monkeypatch.setattr(matching, "ANCHORED_FROM", 0)
    monkeypatch.setattr(matching, "SPACINGS", (5, 2))
    rng = random.Random(7)
    for a, b in _pairs(rng, 2500, 60):
        _assert_as_difflib(a, b, rng)


@pytest.mark.parametrize("seed", range(3))
def test_long_near_copies_answer_as_difflib_with_the_shipped_settings(seed):
    rng = random.Random(seed)
    for a, b in _pairs(rng, 8, 1500):
        _assert_as_difflib(a, b, rng)


def test_lines_of_text_are_matched_as_difflib_matches_them():
    base = [f"x{i % 37} = load(p + {i % 11})" if i % 5 else "" for i in range(3000)]
    copy = base[:700] + ["mask = offs < n"] + base[700:2100] + base[2300:] + [")"] * 40
    assert LineMatcher(base, copy).get_opcodes() == SequenceMatcher(None, base, copy, autojunk=False).get_opcodes()
    assert LineMatcher(base, copy).ratio() == SequenceMatcher(None, base, copy, autojunk=False).ratio()
