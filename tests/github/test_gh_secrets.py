"""The scrubber: every form of the token a message can carry, replaced; masks the runner can match."""
from __future__ import annotations

import base64
import io
import json
from urllib.parse import quote

from pr_review.github.secrets import REDACTED, Scrubber, ScrubbedStream
from pr_review.report.escape import markdown_inline

TOKEN = "ghs_ab+cd/ef_GH12"


def test_every_form_of_the_token_is_replaced() -> None:
    scrub = Scrubber.for_token(TOKEN)
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    for form in (TOKEN, markdown_inline(TOKEN), quote(TOKEN, safe=""), json.dumps(TOKEN)[1:-1], basic):
        assert scrub(f"before {form} after") == f"before {REDACTED} after", form


def test_a_token_with_newlines_is_replaced_line_by_line_and_masked_per_line() -> None:
    scrub = Scrubber.for_token("ghs_FirstPart\n  ghs_SecondPart\n")
    assert scrub("a ghs_SecondPart b ghs_FirstPart") == f"a {REDACTED} b {REDACTED}"
    masks = scrub.masks()
    assert "ghs_FirstPart" in masks and "ghs_SecondPart" in masks
    assert all("\n" not in mask and "\r" not in mask for mask in masks)  # the runner matches within one line


def test_short_pieces_and_no_token_leave_text_alone() -> None:
    assert Scrubber.for_token("ghs_LongEnoughLine\nab")("ab cab") == "ab cab"  # a 2-character line is no secret
    assert Scrubber.for_token("")("anything ghs_x") == "anything ghs_x"
    assert Scrubber.for_token("").masks() == []


def test_the_stream_scrubs_what_is_written() -> None:
    out = io.StringIO()
    stream = ScrubbedStream(out, Scrubber.for_token(TOKEN))
    stream.write(f"token {TOKEN}\n")
    stream.flush()
    assert out.getvalue() == f"token {REDACTED}\n"
