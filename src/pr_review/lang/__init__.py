"""Parsers for the PR's files. PR content is untrusted: every parser entry point turns whatever
stops it into `Unparsable`, so one file that cannot be parsed is listed as not checked and costs
only itself."""


class Unparsable(Exception):
    """A file's text that a parser refused or could not finish; the message says why."""
