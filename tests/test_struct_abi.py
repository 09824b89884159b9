"""pinned-struct-abi-shift's reading of layouts and pins: which assertions fix where fields sit, and how an
edit moves them (anonymous unions as one slot, a replaced tail)."""
from __future__ import annotations

import pytest

from pr_review.detectors.struct_abi import _assertions_on, _pins_layout, _shift, _structs

BASE = '''struct ncclWorkElem {
  union {
    uint8_t flagBits;
    struct { uint8_t isUsed:1, redOpArgIsPtr:1, regUsed:1, oneNode:1; };
  };
  uint8_t nWarps;
  uint32_t root;
};
'''
# nccl ab2b89c4c3 (2.21.5-1): `regUsed` leaves the bit-field and becomes a byte of its own after the union
HEAD = BASE.replace("redOpArgIsPtr:1, regUsed:1,", "redOpArgIsPtr:1,").replace(
    "  };\n  uint8_t nWarps;", "  };\n  uint8_t regUsed;\n  uint8_t nWarps;")


def _fields(text: str) -> list[str]:
    return [n for n, _ in _structs(text)["ncclWorkElem"][2]]


def test_anonymous_union_is_one_slot() -> None:
    assert _fields(BASE) == ["{flagBits}", "nWarps", "root"]
    assert _shift(_fields(BASE), _fields(HEAD)) == \
        ("inserts `regUsed` after `{flagBits}`, before fields that already existed", 1)


def test_every_declarator_is_a_field() -> None:
    assert [n for n, _ in _structs("struct S { int a, b; float c:3, d:5; };")["S"][2]] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("base, head, moved", [
    (["id", "data", "name", "padding"], ["id", "data", "name", "use_count"], False),  # the tail replaced
    (["a", "b", "pad"], ["a", "b", "x", "y"], False),
    (["a", "pad", "b"], ["a", "x", "b"], True),  # b may move: the sizes of pad and x are not compared
    (["a", "b"], ["a", "b", "c"], False),  # appended
    (["a", "b", "c"], ["a", "b"], False),  # the last field dropped: nothing followed it
    (["a", "b", "c"], ["a", "c"], True),  # dropped mid-struct: c moves up
    (["a", "b", "c"], ["a", "c", "b"], True),  # reordered
])
def test_replaced_tail_moves_nothing(base: list[str], head: list[str], moved: bool) -> None:
    assert (_shift(base, head) is not None) == moved


@pytest.mark.parametrize("assertion, pins", [
    ("static_assert(sizeof(K) == 48, \"asm\");", True),
    ("static_assert((sizeof(struct K)) == sizeof(Mirror), \"\");", True),
    ("static_assert(offsetof(K, num_heads) == 32, \"asm\");", True),
    ("_Static_assert(sizeof(K)==16, \"abi\");", True),
    ("static_assert(sizeof(K) <= 128, \"push-constant limit\");", False),
    ("static_assert(sizeof(K) % 8 == 0, \"multiple of 8\");", False),
    ("static_assert(sizeof(K) < sizeof(ncclUniqueId), \"fits\");", False),
    ("static_assert((4096 - 16) / sizeof(K) >= 16, \"count\");", False),
    ("static_assert(sizeof(KOther) == 48, \"\");", False),
])
def test_layout_pins(assertion: str, pins: bool) -> None:
    [node] = list(_assertions_on(assertion, 1))
    assert _pins_layout(node, "K") is pins


@pytest.mark.parametrize("base, head, how, first", [
    (["a", "b", "c", "d"], ["a", "c", "d"], "removes `b`", 1),  # reported at c, now where b was
    (["a", "b", "c", "d"], ["a", "c", "b", "d"], "moves `c` ahead of `b` (reorders its fields)", 1),
])
def test_shift_names_the_first_field_out_of_place(base: list[str], head: list[str], how: str, first: int) -> None:
    assert _shift(base, head) == (how, first)


def test_struct_and_pin_after_a_bare_macro_line_are_read() -> None:
    # aiter's asm_mla_v4.cu on PR branches #3112/#3990: `AITER_CTYPES_ERROR_DEF` (no `;`) right before the kargs
    # struct made tree-sitter read the struct as a function and swallow an assertion placed after it
    text = ("AITER_CTYPES_ERROR_DEF  // expands to definitions\n\n"
            "struct __attribute__((packed)) KernelArgs\n{\n    void* ptr_q;\n    unsigned int n;\n};\n"
            "AITER_C_ITFS\nstatic_assert(sizeof(KernelArgs) == 12, \"12 bytes\");\n")
    assert [n for n, _ in _structs(text)["KernelArgs"][2]] == ["ptr_q", "n"]
    assert [_pins_layout(a, "KernelArgs") for a in _assertions_on(text, 9)] == [True]
