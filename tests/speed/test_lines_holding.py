"""Text searches narrowed by a string every match holds: the symbols evidence reads one-line patterns on
the lines holding a name, found with str.find (the same lines, in order, as splitting the whole text and
keeping those that hold it); a script's `__main__` guard is looked for only in a text holding `__main__`."""
from __future__ import annotations

import random

from pr_review.evidence.symbols import lines_holding


def test_the_lines_are_those_of_splitting_the_text():
    rng = random.Random(11)
    for _ in range(3000):
        text = "".join(rng.choice(["ab", "a", "b", "\n", "\r\n", " ", "ba", "x"]) for _ in range(rng.randint(0, 30)))
        name = rng.choice(["a", "ab", "ba", "b", "x\n", "zz"])
        if "\n" in name:
            continue  # a name is an identifier
        assert lines_holding(text, name) == "\n".join(line for line in text.split("\n") if name in line)


def test_an_empty_name_holds_every_line():
    assert lines_holding("a\nb\n", "") == "a\nb\n"


def test_the_main_guard_is_found_as_the_pattern_finds_it():
    from pr_review.repofacts import MAIN_GUARD, _has_main_guard
    texts = ['if __name__ == "__main__":\n    main()\n', "x = 1\nif __name__ == '__main__': run()\n",
             "  if __name__ == '__main__':\n", "print('__main__')\n", "if __name__ != '__main__': pass\n", ""]
    for text in texts:
        assert _has_main_guard(text) == (MAIN_GUARD.search(text) is not None)


def test_a_case_insensitive_pattern_is_not_narrowed_by_its_literal_strings():
    import re

    from pr_review.lang.regex import lazy_re, may_match
    pattern = lazy_re(r"fnuz_dtype", re.IGNORECASE)
    assert may_match(pattern)("FNUZ_DTYPE = x") and not may_match(pattern)("float8 = y")
    assert may_match(lazy_re(r"fnuz_dtype"))("x = fnuz_dtype") and not may_match(lazy_re(r"fnuz_dtype"))("FNUZ_DTYPE")
