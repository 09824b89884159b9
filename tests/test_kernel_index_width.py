"""int32-index-overflow's width classification: what bounds a product, what widens it, what makes it a
runtime value — for Triton and C++ alike, with no names consulted."""
from __future__ import annotations

import ast

import pytest

from pr_review.detectors.index_width import BOUNDED, RUNTIME, WIDE, _TritonWidth, cpp_products
from pr_review.lang.triton import Kernel, language_aliases

KERNEL = '''
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, table_ptr, stride, n, wide: tl.int64, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    pid64 = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    lane = offs % BLOCK
    page = tl.load(table_ptr + pid)
    both = tl.where(offs < n, page, 0)
    tile = tl.arange(0, BLOCK) * BLOCK
'''


@pytest.fixture(scope="module")
def width() -> _TritonWidth:
    tree = ast.parse(KERNEL)
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    return _TritonWidth(Kernel.build(func, language_aliases(tree)))


@pytest.mark.parametrize("expr, kind", [
    ("pid", RUNTIME), ("stride", RUNTIME), ("page", RUNTIME), ("both", RUNTIME), ("offs", RUNTIME),
    ("pid64", WIDE), ("wide", WIDE), ("offs.to(tl.int64)", WIDE),
    ("BLOCK", BOUNDED), ("lane", BOUNDED), ("tile", BOUNDED), ("3", BOUNDED), ("offs < n", BOUNDED),
])
def test_triton_operand_kinds(width: _TritonWidth, expr: str, kind: int) -> None:
    assert width.kind(ast.parse(expr, mode="eval").body) == kind


CPP = '''
template <typename T, int TILE>
__global__ void k(const T* x, T* out, const int* table, int stride, int64_t wide_stride, int n)
{
    const int row = blockIdx.x;
    const int page = table[row];
    const int lane = threadIdx.x;
    constexpr int kStep = 64;
    out[page * stride + lane] = x[row * wide_stride + lane * stride];
    out[row * TILE + lane] = x[static_cast<int64_t>(row) * stride];
    out[lane * kStep] = x[(row % TILE) * stride];
    float scale = n * 0.5f;
}
'''


def test_cpp_reports_only_unwidened_runtime_products_that_reach_an_address() -> None:
    products = [p.text for _, p in cpp_products(CPP, set(range(1, 20)))]
    assert products == ["page * stride"]


def test_a_product_recomputed_in_a_kernel_is_one_finding_that_keeps_any_scale_shown():
    from pr_review.detectors.index_width import Product, _repeats_folded
    from pr_review.detectors.shapes import Extent

    scale = Extent("logits", 2 ** 34, "Kimi-K2", "(131072 × 163840)", ())
    load = Product(12, "row * stride_lm", ("row", "stride_lm"))
    store = Product(13, "row*stride_lm", ("row", "stride_lm"), scale=scale)  # spelled apart, scaled at the store
    other = Product(20, "page * stride_blk", ("page", "stride_blk"))
    folded = _repeats_folded([store, other, load])
    assert [(p.line, p.scale, again) for p, again in folded] == [(12, scale, [13]), (20, None, [])]
