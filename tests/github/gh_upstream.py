"""A throw-away "GitHub-side" git repository with pull-request refs, and checkouts made the way
actions/checkout makes them (one commit at depth 1), for the event and end-to-end tests.

Commit dates are fixed so that every build yields the same shas (stable snapshots).
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pr_review.demo import BASE_FILES, PR_FILES

GIT_ENV = {"GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid", "GIT_COMMITTER_NAME": "dev",
           "GIT_COMMITTER_EMAIL": "dev@example.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}

REVIEW_CONFIG = "tools/pr-review.yml"  # a repository config outside the default path (input `config`)
OLD_PR_FILES = {
    "aiter/ops/norm.py": (
        "import os\n\n"
        "EPS = float(os.environ.get(\"AITER_NORM_EPS\", \"1e-6\"))\n\n\n"
        "def rms_norm(x):\n"
        "    # TODO: fuse with the residual add\n"
        "    return x * (x.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()\n"
    ),
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
                           *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@dataclass(frozen=True)
class Upstream:
    bare: Path
    url: str
    base_sha: str  # main when PR #7 was opened
    old_base_sha: str  # main when PR #3 was opened
    old_head: str  # PR #3 head, merged long ago
    pr_head: str  # PR #7 head (open)
    merge_sha: str  # refs/pull/7/merge
    main_sha: str  # main today

    def has(self, sha: str) -> bool:
        return subprocess.run(["git", "-C", str(self.bare), "cat-file", "-e", f"{sha}^{{commit}}"],
                              capture_output=True).returncode == 0


def build_upstream(root: Path) -> Upstream:
    """main: base ── old PR #3 merged ── more; PR #7 branches from `base` with the demo's defects."""
    work = root / "upstream-work"
    work.mkdir(parents=True)
    git(work, "init", "-q")
    # The publishing tests need findings of every kind, so the repository opts into preview rules.
    old_base = _commit(work, {**BASE_FILES, ".github/pr-review.yml": "preview: true\n",
                              REVIEW_CONFIG: "preview: true\ndisable: [syspath-mutation]\n"}, "base")
    git(work, "checkout", "-q", "-b", "old-feature")
    old_head = _commit(work, OLD_PR_FILES, "Add rms_norm")
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--no-ff", "-m", "Merge pull request #3", "old-feature")
    base = _commit(work, {"README.md": "aiter\n"}, "Add a README")
    git(work, "checkout", "-q", "-b", "feature")
    pr_head = _commit(work, PR_FILES, "Speed up per-token quant")
    git(work, "checkout", "-q", "--detach", base)
    git(work, "merge", "-q", "--no-ff", "-m", f"Merge {pr_head} into {base}", pr_head)
    merge = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "main")
    main = _commit(work, {"docs/usage.md": "Usage\n"}, "Document usage")
    bare = root / "upstream.git"
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    for ref, sha in (("refs/pull/3/head", old_head), ("refs/pull/7/head", pr_head), ("refs/pull/7/merge", merge)):
        git(bare, "update-ref", ref, sha)
    for branch in ("feature", "old-feature"):  # PR branches live in forks or were deleted after merging
        git(bare, "branch", "-D", branch)
    git(bare, "config", "uploadpack.allowReachableSHA1InWant", "true")  # as on github.com
    return Upstream(bare, f"file://{bare}", base, old_base, old_head, pr_head, merge, main)


def checkout(upstream: Upstream, workspace: Path, sha: str, ref: str) -> Path:
    """What actions/checkout leaves behind by default: `origin`, one commit at depth 1, detached."""
    workspace.mkdir(parents=True)
    git(workspace, "init", "-q")
    git(workspace, "remote", "add", "origin", upstream.url)
    git(workspace, "fetch", "-q", "--no-tags", "--depth=1", "origin", f"+{sha}:{ref}")
    git(workspace, "checkout", "-q", "--detach", ref)
    return workspace
