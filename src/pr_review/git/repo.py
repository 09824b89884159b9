"""Thin, explicit wrapper over the git command line.

Every call goes through `Repo.git`, which forces the settings the diff parser depends on
(`core.quotePath=false`, no colour, no external diff) whatever the user's config says.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

# Deepening steps for a shallow clone (actions/checkout's default is depth 1). Bounded: after
# the last step we unshallow once, then give up with a message.
DEEPEN_STEPS = (50, 200, 1000)


class GitError(Exception):
    """A git operation failed in a way the user can act on; the message says how."""


class Repo:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.fetch_log: list[str] = []

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "Repo":
        probe = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True,
        )
        if probe.returncode != 0:
            raise GitError(f"{path} is not a git repository")
        return cls(probe.stdout.strip())

    def _exec(self, args: tuple[str, ...], input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Every git call: settings the diff parser relies on, no prompts, C locale for messages."""
        cmd = ["git", "-C", str(self.root), "-c", "core.quotePath=false", "-c", "color.ui=false", *args]
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        return subprocess.run(cmd, capture_output=True, input=input, env=env)

    def git(self, *args: str, check: bool = True, input: bytes | None = None) -> bytes:
        proc = self._exec(args, input)
        if check and proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {' '.join(args[:3])} failed: {err[-1] if err else proc.returncode}")
        return proc.stdout

    def text(self, *args: str, check: bool = True) -> str:
        return self.git(*args, check=check).decode("utf-8", "surrogateescape")

    def resolve(self, ref: str) -> str | None:
        out = self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        sha = out.decode().strip()
        return sha or None

    def is_shallow(self) -> bool:
        return self.text("rev-parse", "--is-shallow-repository", check=False).strip() == "true"

    def remotes(self) -> list[str]:
        return self.text("remote", check=False).split()

    def default_branch(self) -> str:
        """`origin/HEAD` when the clone knows it, else the first of main/master that exists."""
        out = self.text("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False).strip()
        if out:
            return out.removeprefix("refs/remotes/")
        for name in ("origin/main", "origin/master", "main", "master"):
            if self.resolve(name):
                return name
        raise GitError("cannot find the default branch (no origin/HEAD, main or master); pass --base")

    def run(self, *args: str) -> tuple[int, bytes]:
        """Run git and return (exit status, stdout) for callers that branch on the status."""
        proc = self._exec(args)
        return proc.returncode, proc.stdout

    def run_ok(self, *args: str) -> bool:
        return self.run(*args)[0] == 0

    def merge_base(self, a: str, b: str) -> str | None:
        out = self.git("merge-base", a, b, check=False).decode().strip()
        return out or None

    def ensure_commit(self, ref: str, remote: str | None) -> str:
        """Resolve `ref`, fetching it from `remote` when the clone does not have it."""
        sha = self.resolve(ref)
        if sha:
            return sha
        if remote:
            name = ref.removeprefix(f"{remote}/")
            if re.fullmatch(r"[0-9a-f]{40}", name) or name.startswith("refs/"):
                refspec, dest = name, "FETCH_HEAD"
            else:  # a branch name: keep it as a remote-tracking ref for later runs
                refspec, dest = f"+refs/heads/{name}:refs/remotes/{remote}/{name}", f"{remote}/{name}"
            # In a shallow clone fetch shallow too; find_merge_base deepens in bounded steps.
            depth = ("--depth=50",) if self.is_shallow() else ()
            if self.run_ok("fetch", "--no-tags", "--quiet", *depth, remote, refspec):
                self.fetch_log.append(f"fetched {name} from {remote}")
                sha = self.resolve(dest)
                if sha:
                    return sha
        raise GitError(
            f"ref '{ref}' is not in this clone"
            + (f" and could not be fetched from '{remote}'" if remote else "")
            + "; fetch it first or pass an existing ref"
        )

    def find_merge_base(self, base_sha: str, head_sha: str, remote: str | None) -> str:
        """Merge base of base and head, deepening a shallow clone in bounded steps."""
        found = self.merge_base(base_sha, head_sha)
        if found:
            return found
        if remote and self.is_shallow():
            for step in DEEPEN_STEPS:
                if self.run_ok("fetch", "--no-tags", "--quiet", f"--deepen={step}", remote, base_sha, head_sha):
                    self.fetch_log.append(f"deepened by {step}")
                found = self.merge_base(base_sha, head_sha)
                if found:
                    return found
            if self.run_ok("fetch", "--no-tags", "--quiet", "--unshallow", remote):
                self.fetch_log.append("unshallowed")
            found = self.merge_base(base_sha, head_sha)
            if found:
                return found
        raise GitError(
            f"no merge base between {base_sha[:12]} and {head_sha[:12]}"
            + (" after deepening the shallow clone" if self.is_shallow() or self.fetch_log else "")
            + "; the histories are unrelated or the clone is missing commits (use fetch-depth: 0)"
        )

    def grep(self, pattern: str, rev: str, pathspecs: tuple[str, ...] = (), *, fixed: bool = False,
             word: bool = False, files_only: bool = False, only_matching: bool = False,
             ) -> list[tuple[str, int, str]]:
        """`git grep` over a tree (not the work tree): [(path, line, text)].

        With `files_only` the line is 0 and the text empty; with `only_matching` the text is the match."""
        args = ["grep", "-I", "--no-color", "--full-name", "-F" if fixed else "-E"]
        if word:
            args.append("-w")
        args.append("-l" if files_only else "-n")
        if only_matching:
            args.append("-o")
        args += ["-e", pattern, rev, "--", *pathspecs]
        out = self.text(*args, check=False)
        hits: list[tuple[str, int, str]] = []
        prefix = f"{rev}:"
        for raw in out.splitlines():
            raw = raw.removeprefix(prefix)
            if files_only:
                hits.append((raw, 0, ""))
                continue
            path, _, rest = raw.partition(":")
            num, _, text = rest.partition(":")
            if num.isdigit():
                hits.append((path, int(num), text))
        return hits

    def ls_tree(self, rev: str, pathspecs: tuple[str, ...] = ()) -> list[str]:
        out = self.git("ls-tree", "-r", "--name-only", "-z", rev, "--", *pathspecs, check=False)
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
