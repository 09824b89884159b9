"""The copy detectors pair a line with its most similar counterpart, skipping pairs whose cheap bounds
rule them out before building a matcher: the answers must be those of matching every pair in full."""
from __future__ import annotations

import random
from difflib import SequenceMatcher

from pr_review.detectors import twins


def _lines(rng: random.Random, count: int) -> list[str]:
    # short texts over a small alphabet: many pairs near the 0.6 threshold, and ties
    return ["".join(rng.choice("ab(x)+*") for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_the_length_bound_is_the_matchers_own():
    rng = random.Random(3)
    for a, b in zip(_lines(rng, 400), _lines(rng, 400)):
        assert twins._length_ratio(a, b) == SequenceMatcher(None, a, b).real_quick_ratio()


def test_the_most_alike_line_is_the_best_ratio_of_all_pairs():
    rng = random.Random(5)
    for _ in range(1200):
        text, others = _lines(rng, 1)[0], _lines(rng, 12)
        within = range(rng.randint(0, 4), rng.randint(4, 12))
        best = max(((SequenceMatcher(None, text, others[k]).ratio(), k) for k in within), default=(0.0, -1))
        ratio, at = twins._most_alike(text, ((k, others[k]) for k in within), twins.PAIR_SIMILARITY)
        if best[0] >= twins.PAIR_SIMILARITY:
            assert (ratio, at) == best
            assert twins._best(text, others, within) == best[1]
        else:
            assert ratio < twins.PAIR_SIMILARITY and twins._best(text, others, within) == -1
