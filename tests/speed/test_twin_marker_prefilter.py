"""twin-divergence tests a rewritten block's lines for a few strings before searching its five
safety-marker patterns: the test must let through every line a marker matches."""
from __future__ import annotations

from pathlib import Path

from pr_review.detectors import twins

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
LINES = [
    "offs = pid.to(tl.int64) * stride", "long n = rows;", "size_t k = 0;", "x = tl.load(p, mask=m, other=0.0)",
    "__syncthreads();", "gl.barrier()", "if (row < M) {", "assert n > 0", "TORCH_CHECK(x.is_cuda());",
    "    return a + b", "y = foo(bar)", "", "# comment only",
]


def _fixture_lines() -> list[str]:
    sources = [p for p in sorted(FIXTURES.glob("twin*/**/*")) if p.suffix in (".py", ".cu", ".h", ".hip", ".cpp")]
    return [line for path in sources for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]


def test_the_prefilter_passes_every_line_a_marker_matches_and_drops_plain_code():
    may_hold = twins._may_hold_marker()
    lines = LINES + _fixture_lines()
    marked = [line for line in lines if any(m.search(line) for m in twins.SAFETY_MARKERS.values())]
    assert len(marked) > 20 and all(may_hold(line) for line in marked)
    assert not may_hold("    return a + b") and not may_hold("y = foo(bar)")


def test_without_stored_strings_the_prefilter_is_the_markers_own_search(monkeypatch):
    from pr_review.lang import regex

    monkeypatch.setattr(regex, "required_substrings", lambda pattern: None)
    may_hold = twins._may_hold_marker()
    for line in LINES:
        assert may_hold(line) == any(m.search(line) for m in twins.SAFETY_MARKERS.values())
