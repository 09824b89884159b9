"""Escaping of PR-controlled text (titles, bodies, paths, snippets) for each output format."""
from __future__ import annotations

import re

MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")


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
