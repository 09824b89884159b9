"""Repository access: one `git diff`, one long-lived `git cat-file --batch`, `git grep` for look-ups."""
from .repo import GitError, Repo
from .catfile import CatFile
from .diff import ChangedFile, parse_diff

__all__ = ["GitError", "Repo", "CatFile", "ChangedFile", "parse_diff"]
