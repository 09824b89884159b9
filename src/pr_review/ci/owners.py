"""Owner sign-off (aiter/vLLM E5): who has to agree before a stable core file changes behaviour.

There is no CODEOWNERS file in these projects; the de-facto owner is the top committer of the path
on the base side, bots excluded. A change counts as a behaviour change when it removes or rewrites
code lines of a Tier 1/2 file (a pure addition keeps existing behaviour).
"""
from __future__ import annotations

import re
from collections import Counter

from ..git import GitError, Repo
from ..git.diff import ChangedFile
from ..model import Owner
from ..profiles import Profile

BOT = re.compile(r"(?i)\[bot\]|^(?:github|github-actions|dependabot|renovate|pre-commit-ci)$|noreply@github\.com$")
NOREPLY = re.compile(r"^(?:\d+\+)?([A-Za-z0-9-]+)@users\.noreply\.github\.com$")
COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|$)")
HISTORY = 2000  # commits of the path read at most


def behaviour_changes(files: list[ChangedFile], profile: Profile) -> list[tuple[ChangedFile, int]]:
    """Tier 1/2 files whose existing code lines the PR removes or rewrites, with their tier."""
    out = []
    for f in files:
        entry = profile.tier_entry(f.path)
        if entry is None or entry.tier > 2 or f.status == "added":
            continue
        if any(not COMMENT.match(text) for _, text in f.removed):
            out.append((f, entry.tier))
    return out


def owners(repo: Repo, rev: str, files: list[ChangedFile], profile: Profile, notify: bool) -> tuple[list[Owner], list[str]]:
    """The top non-bot committer of each behaviour-changed core file; notes for what could not be read."""
    found, notes = [], []
    shallow = repo.is_shallow()
    for changed, tier in behaviour_changes(files, profile):
        path = changed.old_path or changed.path
        try:
            text = repo.text("log", f"--max-count={HISTORY}", "--no-merges", "--format=%aN%x09%aE", rev, "--", path)
        except GitError as exc:
            notes.append(f"The history of {path} could not be read ({exc}); its owner is not named.")
            continue
        authors = [tuple(line.split("\t", 1)) for line in text.splitlines() if "\t" in line]
        people = Counter((name, email) for name, email in authors if not (BOT.search(name) or BOT.search(email)))
        if not people:
            notes.append(f"{path} has no human committer in the history read; its owner is not named.")
            continue
        (name, email), commits = sorted(people.items(), key=lambda item: (-item[1], item[0]))[0]
        login = NOREPLY.match(email)
        found.append(Owner(changed.path, tier, name, login.group(1) if login else "", commits, len(authors),
                           shallow, notify))
    return found, notes
