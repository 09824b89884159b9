#!/usr/bin/env python3
"""Check that a release tag, the package version and CHANGELOG.md agree, and extract the release notes.

    python scripts/release_check.py v1.2.3 [--notes notes.md]

The version lives in one place, `src/pr_review/__init__.py` (hatch reads it from there). The tag must be
`v` + that version, and CHANGELOG.md must have a dated, non-empty `## [X.Y.Z] - YYYY-MM-DD` section, whose
body becomes the GitHub release's notes. Prints `version=…`, `major=v…` and `tag=…` lines for
$GITHUB_OUTPUT. Exits 1 with one line per disagreement. Standard library only: it runs before any install.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"v(?P<version>(?P<major>0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*))")
SECTION = re.compile(r"^## \[(?P<name>[^\]]+)\](?: - (?P<date>\S+))?[ \t]*$", re.MULTILINE)
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Release:
    tag: str
    version: str
    major: str
    notes: str


def package_version(init: Path) -> str:
    """`__version__` as assigned in the package's __init__.py (parsed: importing it needs the dependencies)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    raise ValueError(f"{init}: no `__version__ = \"…\"` assignment")


def changelog_sections(text: str) -> dict[str, tuple[str | None, str]]:
    """Section name ("Unreleased", "1.2.3") → (date or None, body without the heading)."""
    heads = list(SECTION.finditer(text))
    sections = {}
    for head, following in zip(heads, heads[1:] + [None]):
        end = following.start() if following else len(text)
        body = text[head.end():end]
        body = re.split(r"^\[[^\]]+\]:\s", body, maxsplit=1, flags=re.MULTILINE)[0]  # link references close the file
        sections[head["name"]] = (head["date"], body.strip())
    return sections


def check(tag: str, root: Path = ROOT) -> tuple[Release | None, list[str]]:
    problems: list[str] = []
    match = TAG.fullmatch(tag)
    if match is None:
        return None, [f"tag {tag!r} is not vMAJOR.MINOR.PATCH"]
    version = match["version"]
    init = root / "src" / "pr_review" / "__init__.py"
    declared = package_version(init)
    if declared != version:
        problems.append(f"{init.relative_to(root)} says __version__ = {declared!r}, the tag says {version!r}")
    sections = changelog_sections((root / "CHANGELOG.md").read_text(encoding="utf-8"))
    if "Unreleased" not in sections:
        problems.append("CHANGELOG.md has no `## [Unreleased]` section to collect the next release's changes")
    date, notes = sections.get(version, (None, ""))
    if version not in sections:
        problems.append(f"CHANGELOG.md has no `## [{version}] - YYYY-MM-DD` section")
    else:
        if date is None or not DATE.fullmatch(date):
            problems.append(f"CHANGELOG.md's section [{version}] has no YYYY-MM-DD date")
        if not notes:
            problems.append(f"CHANGELOG.md's section [{version}] is empty")
    release = Release(tag=tag, version=version, major=f"v{match['major']}", notes=notes + "\n")
    return (None if problems else release), problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag", help="the pushed tag, e.g. v1.2.3")
    parser.add_argument("--notes", type=Path, help="write the CHANGELOG section here, for the release body")
    args = parser.parse_args(argv)
    release, problems = check(args.tag)
    for problem in problems:
        print(f"release_check: {problem}", file=sys.stderr)
    if release is None:
        return 1
    if args.notes:
        args.notes.write_text(release.notes, encoding="utf-8")
    print(f"version={release.version}\nmajor={release.major}\ntag={release.tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
