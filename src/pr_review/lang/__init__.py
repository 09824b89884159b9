"""Parsers for the PR's files. PR content is untrusted: every parser entry point turns whatever
stops it into `Unparsable`, so one file that cannot be parsed is listed as not checked and costs
only itself."""


class Unparsable(Exception):
    """A file's text that a parser refused or could not finish; the message says why."""


def one_line(text: str, limit: int) -> str:
    """PR code quoted in a finding: on one line (its whitespace runs made one space, so no quoted line can
    start a workflow command of its own) and cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
