"""Module-level patterns compiled on first use answer as `re.compile`'s would, every one of them
compiles, and importing the detectors compiles none; a pattern compiled by an earlier process
answers as a fresh compile does."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pr_review
from pr_review.lang.regex import CompiledPatterns, lazy_re
from pr_review.warm import shipped_patterns


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


def test_every_shipped_pattern_compiles():
    patterns = shipped_patterns()
    assert sum(1 for _, flags in patterns if flags) > 10 and len(patterns) > 300
    for pattern, flags in patterns:
        assert re.compile(pattern, flags)


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


def _texts() -> list[str]:
    """Lines to match against: this repository's sources and fixtures, and PR-title-like text."""
    root = Path(pr_review.__file__).parents[2]
    lines = ["[ROCm] Fused MoE: 1.3x faster decode on MI300X (gfx942)", "Revert \"fp8 e4m3fnuz\"", ""]
    for path in sorted([*root.glob("src/pr_review/**/*.py"), *root.glob("tests/fixtures/rules/*/*/head/**/*.*")])[::4]:
        try:
            lines += [path.relative_to(root).as_posix(), *path.read_text(encoding="utf-8").splitlines()[:40]]
        except (UnicodeDecodeError, OSError):
            continue
    return lines


def test_a_stored_pattern_answers_as_re_compile_does(tmp_path: Path):
    patterns, texts = shipped_patterns(), _texts()
    assert len(patterns) > 300
    first = CompiledPatterns(tmp_path / "regex.marshal")
    for source, flags in patterns:
        first.compile(source, flags)
    first.save()
    stored = CompiledPatterns(tmp_path / "regex.marshal")
    assert stored.entries.keys() == first.entries.keys()
    for source, flags in patterns:
        restored, fresh = stored.compile(source, flags), re.compile(source, flags)
        assert (restored.pattern, restored.flags, restored.groups, restored.groupindex) == \
            (fresh.pattern, fresh.flags, fresh.groups, fresh.groupindex), source
        for text in texts:
            a, b = restored.search(text), fresh.search(text)
            assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), (source, text)
    assert not stored.dirty  # nothing compiled afresh: nothing to write


def test_an_entry_the_matcher_refuses_is_compiled_afresh(tmp_path: Path):
    store = CompiledPatterns(None)
    store.entries[("a+b", 0)] = (32, [999, 1, 2], 0, {}, (None,))  # not code the matcher accepts
    assert store.compile("a+b").search("xaab").span() == (1, 4)


def test_a_review_process_reuses_what_an_earlier_one_compiled(tmp_path: Path):
    script = ("import sys; from pr_review.lang.regex import compile_shipped, _compiled_patterns\n"
              "before = len(_compiled_patterns().entries)\n"
              "compile_shipped(r'(?P<arch>gfx9\\d\\d)'); print(before)\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("PR_REVIEW_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs == ["0\n", "1\n"]
    assert len(list((tmp_path / "pr-review").glob("regex-*.marshal"))) == 1
    env["PR_REVIEW_NO_CACHE"] = "1"
    assert subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          check=True).stdout == "0\n"


def test_a_later_process_reads_the_strings_a_patterns_matches_hold_from_the_store(tmp_path: Path):
    script = ("import sys; from pr_review.lang import regex\n"
              "if sys.argv[1] == 'stored':\n"
              "    regex._parser.parse = None  # a parse would fail: the answer must come from the store\n"
              "print(regex.required_substrings(r'\\btl\\.dot\\(|allow_tf32'), regex.required_substrings(r'(?i)torch'))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("PR_REVIEW_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-c", script, when], env=env, capture_output=True, text=True,
                           check=True).stdout for when in ("fresh", "stored")]
    assert runs == ["('tl.dot(', 'allow_tf32') None\n"] * 2
