"""The token never leaves the step in clear: masked for the runner line by line, and scrubbed by us.

The runner masks a registered value only where it appears verbatim on one log line, so a token with
a newline needs one mask per line, and a token that reaches us Markdown-escaped or URL-encoded (a
proxy or an HTTP library echoing a request in its error) is not masked at all. `Scrubber` replaces
every such form in any text before it is printed or written: the log, the job summary, the step
outputs, report.json, the SARIF file and the check run all pass through the one instance.
"""
from __future__ import annotations

import base64
import json
from ..model import record
from typing import TextIO
from urllib.parse import quote, quote_plus

from ..report.escape import markdown_inline

REDACTED = "***"
SHORTEST_SCRUBBED = 4  # a shorter piece of a token line is no secret, and replacing it would garble text


def _encodings(value: str) -> set[str]:
    """The forms `value` takes in the places our messages come from and go to."""
    return {value, markdown_inline(value), quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}


@record(frozen=True)
class Scrubber:
    secrets: tuple[str, ...] = ()

    @classmethod
    def for_token(cls, token: str) -> "Scrubber":
        if not token:
            return cls()
        lines = [line.strip() for line in token.splitlines() if line.strip()]
        # authenticate_git hands git the token as HTTP basic credentials
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        forms = {form for value in {token, *lines} for form in _encodings(value)} | {basic}
        # Longest first, so that a line of the token is not replaced inside the whole token's form.
        return cls(tuple(sorted((f for f in forms if len(f) >= SHORTEST_SCRUBBED), key=len, reverse=True)))

    def masks(self) -> list[str]:
        """Values to register with the runner: one per line, each being what the runner can match."""
        return [form for form in self.secrets if "\n" not in form and "\r" not in form]

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


class ScrubbedStream:
    """A text stream that scrubs whatever is written to it (the step's log)."""

    def __init__(self, stream: TextIO, scrub: Scrubber):
        self._stream = stream
        self._scrub = scrub

    def write(self, text: str) -> int:
        return self._stream.write(self._scrub(text))

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> object:  # encoding, isatty(), fileno() … of the stream underneath
        return getattr(self._stream, name)
