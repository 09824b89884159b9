"""Escaping of PR-controlled text (titles, bodies, paths, snippets) for each output format."""
from __future__ import annotations

import re

from ..lang.regex import lazy_re

MD_SPECIAL = lazy_re(r"([\\`*_{}\[\]()#+!|~>])")


def markdown_inline(text: str) -> str:
    """Text safe inside a Markdown paragraph or table cell: no HTML, no mentions, no markup."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = MD_SPECIAL.sub(r"\\\1", text)
    text = re.sub(r"@(?=[A-Za-z0-9])", "@\u200b", text)  # no @mention notifications
    return text.replace("\r", " ").replace("\n", " ")


def markdown_code(text: str) -> str:
    """Inline code span that survives backticks in the content; mentions in code do not notify."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_block(text: str, language: str = "") -> str:
    """Fenced block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def markdown_url(url: str) -> str:
    """A link target: only http(s) URLs (others become `#`), with the characters that end a target encoded."""
    url = str(url).strip()
    if not re.match(r"https?://", url):
        return "#"
    return "".join(f"%{ord(c):02X}" if c in " ()<>[]`\"" or ord(c) < 32 else c for c in url)


def workflow_data(text: str) -> str:
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


# What a terminal or a rendered summary must never receive from a PR: C0 controls but tab and
# newline (ESC starts OSC 52 clipboard writes and screen clears; CR overwrites a line), DEL, C1
# controls (0x9B is an 8-bit CSI), bidi embeddings, overrides, isolates and marks (they reorder
# what is shown), Unicode line and paragraph separators, and lone surrogates (undecodable bytes of
# a non-UTF-8 path, which no strict encoder can write).
UNSAFE_CHARS = lazy_re("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                          "\ud800-\udfff]")
# The runner reads its log line by line (LF, CR or CRLF), trims leading whitespace and runs a line
# that starts with `::`; the legacy form `##[command]` it finds anywhere in a line.
RUNNER_LINE = lazy_re(r"[^\r\n]*(?:\r\n|\r|\n|$)")
LEGACY_COMMAND = "##["
NEUTRAL = "\u200b"  # zero-width space: not whitespace to the runner, invisible to a reader


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for an undecodable byte: show the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal or a viewer would act on shown as an escape (`\\x1b`)."""
    return UNSAFE_CHARS.sub(_visible, str(text))


def _neutral_line(line: str) -> str:
    body = line.lstrip()
    if body.startswith("::"):
        line = line[:len(line) - len(body)] + NEUTRAL + body
    return line.replace(LEGACY_COMMAND, "##" + NEUTRAL + "[")


def command_safe(text: str) -> str:
    """`text` in which no line is a workflow command: a zero-width space goes before a leading `::`
    and inside `##[`. Idempotent, and ordinary text is returned unchanged."""
    text = str(text)
    if "::" not in text and LEGACY_COMMAND not in text:
        return text
    return "".join(_neutral_line(m.group()) for m in RUNNER_LINE.finditer(text) if m.group())


def safe_text(text: str) -> str:
    """Plain text for a terminal or an Actions log: the one sanitiser of the text outputs."""
    return command_safe(terminal_safe(text))


# C0 controls are escaped by `json.dumps` itself; these are not. A lone surrogate (a non-UTF-8
# path) as `\udcXX` decodes back to the same string and can always be written.
JSON_UNSAFE = lazy_re("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def json_safe(dumped: str) -> str:
    """JSON text (from `json.dumps`) with the characters above, and `##[`, as `\\uXXXX` escapes:
    the decoded data is unchanged, the raw text is safe in a terminal and a log."""
    dumped = JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)
    return dumped.replace(LEGACY_COMMAND, "##\\u005b")
