"""int32-index-overflow's sizing class: which size tests choose an addressing width from a tensor's logical
size while its strides reach the kernel, and which are sound or only guard."""
from __future__ import annotations

import ast

import pytest

from pr_review.detectors.index_width_span import _span_choices

LAUNCHER = '''
import torch
LIMIT = torch.iinfo(torch.int32).max

def launch(x, y):
    {body}
    k[(1,)](x, y, x.stride(0), WIDE=wide)
'''


def _choices(body: str) -> list[tuple[str, list[str], bool]]:
    text = LAUNCHER.format(body=body.strip().replace("\n", "\n    "))
    tree = ast.parse(text)
    lines = set(range(1, len(text.splitlines()) + 1))
    return [(ast.unparse(c), list(loose), top) for c, _, loose, top, _ in _span_choices(tree, lines)]


@pytest.mark.parametrize("body, tensors, top_byte", [
    ("wide = x.numel() > LIMIT", ["x"], False),  # a module constant holding iinfo(int32).max
    ("n = x.nelement() * x.element_size()\nwide = not n <= 2**31 - 1", ["x"], True),  # through a local and `not`
    ("wide = torch.int64 if x.numel() >= 2**31 else torch.int32", ["x"], False),  # an offsets dtype
    ("wide = max(x.numel(), y.numel()) >= 2**31", ["x"], False),  # y's strides are not handed on
])
def test_choices_that_fire(body: str, tensors: list[str], top_byte: bool) -> None:
    [(_, loose, top)] = _choices(body)
    assert (loose, top) == (tensors, top_byte)


@pytest.mark.parametrize("body", [
    "x = x.contiguous()\nwide = x.numel() > LIMIT",
    "assert x.is_contiguous()\nwide = x.numel() > LIMIT",
    "x = torch.empty_like(y)\nwide = x.numel() > LIMIT",
    "if x.numel() > LIMIT:\n    raise ValueError('too large')\nwide = False",  # a guard, not a choice
    "wide = sum((n - 1) * s for n, s in zip(x.shape, x.stride())) >= 2**31",  # sized by the strides
    "wide = x.numel() > 4096",  # not an int32 bound
])
def test_sound_or_guarding_tests_are_clear(body: str) -> None:
    assert _choices(body) == []


@pytest.mark.parametrize("body, moved", [
    ("q = p + row * s\ntl.store(q + offs, x)", True),  # a per-row base kept in a name
    ("p += row * s\ntl.store(p + offs, x)", True),
    ("x = gl.amd.cdna4.buffer_load(ptr=p + row * s, offsets=offs)", True),  # a buffer op's base
    ("x = _load_rows(p + row * s, offs)", True),  # a helper's base
    ("x = tl.load(p + row * s + offs)", False),  # a full address
    ("x = gl.amd.cdna4.buffer_load(p, offs)", False),  # the unmoved base
    ("x = _load_rows(p, offs)", False),
    ("t = p.dtype.element_ty", False),  # no address at all
])
def test_moved_base(body: str, moved: bool) -> None:
    from pr_review.detectors.index_width_span import _moves_base
    tree = ast.parse("def k(p, s, offs, x):\n    row = 0\n    " + body.replace("\n", "\n    "))
    assert _moves_base(tree, tree.body[0], "p") is moved


def test_side_ruled_out_by_an_assertion() -> None:
    # aiter 26aecec7ce: the buffer-load flag of a gfx1250-only launcher
    body = 'assert arch == "gfx1250"\nwide = not (arch != "gfx1250" and x.numel() <= LIMIT)'
    assert _choices(body) == []
    assert len(_choices('assert arch == "gfx950"\nwide = not (arch != "gfx1250" and x.numel() <= LIMIT)')) == 1
