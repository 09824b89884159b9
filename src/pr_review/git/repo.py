"""Thin, explicit wrapper over the git command line.

Every git command is built in `Repo._command` and run by `Repo._exec`, which force the settings the
diff parser depends on (`core.quotePath=false`, no colour) whatever the user's config says, read no
attributes from the PR (see `_command`), and give every command a deadline.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from ..lang.regex import lazy_re

# Deepening steps for a shallow clone (actions/checkout's default is depth 1). Bounded: after
# the last step we unshallow once, then give up with a message.
DEEPEN_STEPS = (50, 200, 1000)

# Deadlines in seconds. A fetch talks to a server that may accept the connection and never answer;
# a local command (which may still fetch blobs lazily in a partial clone) gets a generous one.
FETCH_TIMEOUT = 180.0
LOCAL_TIMEOUT = 600.0
NETWORK_COMMANDS = frozenset({"fetch"})
# Let curl abort a transfer slower than 1 KB/s for 30 s well before the process deadline.
LOW_SPEED = ("-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30")


class GitError(Exception):
    """A git operation failed in a way the user can act on; the message says how."""


# Whether this git has `--attr-source` (2.40+), once known: `Repo.open`'s first call asks (`_probe`).
_attr_source: bool | None = None


def _supports_attr_source() -> bool:
    """Whether this git has `--attr-source`; asked once per process, by its own call only when no
    `_probe` has answered."""
    global _attr_source
    if _attr_source is None:
        _attr_source = subprocess.run(["git", "--attr-source=HEAD", "version"], capture_output=True).returncode == 0
    return _attr_source


# Whether this git greps with Perl regexes (`git grep -P`, git built with PCRE), once known: the
# first search that can use them asks.
_pcre: bool | None = None
# Two or more names, any of which makes a line match (one name is a fixed string to either engine).
NAMES = lazy_re(r"[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)+")

OBJECT_ID = lazy_re(r"[0-9a-f]+")
# The empty tree of each object format: attributes are read from it, i.e. from nowhere.
EMPTY_TREE = {"sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
              "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}


class Repo:
    def __init__(self, root: str | os.PathLike[str], probed: tuple[str, str] | None = None):
        """`probed`: the git directory and object format, when the caller already asked git for them."""
        self.root = Path(root)
        git_dir, object_format = probed or _probe(root, "--absolute-git-dir", "--show-object-format").splitlines()
        self.git_dir = Path(git_dir)
        self.empty_tree = EMPTY_TREE[object_format]
        self.fetch_log: list[str] = []

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "Repo":
        """The repository `path` is in, found by one git call (its top level, git directory and format)."""
        top, git_dir, object_format = _probe(path, "--show-toplevel", "--absolute-git-dir", "--show-object-format"
                                             ).splitlines()
        return cls(top, (git_dir, object_format))

    def _command(self, args: tuple[str, ...]) -> list[str]:
        """The full command line for `git <args>`.

        Attributes change how git reads files (`* -diff` makes every file binary, `merge=ours` hides
        conflicts), and the checkout's `.gitattributes` is the PR's. So git runs on the git directory
        as a bare repository, which reads attributes from neither work tree nor index, with no global
        or system attributes file, and, where git has `--attr-source` (newer git would otherwise read
        HEAD's in a bare repository), from the empty tree."""
        attr_source = (f"--attr-source={self.empty_tree}",) if _supports_attr_source() else ()
        return ["git", f"--git-dir={self.git_dir}", *attr_source, "-c", "core.bare=true",
                "-c", "core.attributesFile=/dev/null", "-c", "core.quotePath=false", "-c", "color.ui=false",
                *LOW_SPEED, *args]

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """A long-lived git process (cat-file --batch) built and isolated like every other command."""
        return subprocess.Popen(self._command(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=_env(), cwd=self.git_dir)

    def _exec(self, args: tuple[str, ...], input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Every git call: the isolated command line, no prompts, C locale for messages, a deadline."""
        network = args[0] in NETWORK_COMMANDS
        timeout = FETCH_TIMEOUT if network else LOCAL_TIMEOUT
        # Its own process group, so a deadline also ends the helpers git starts (git-remote-http),
        # which hold the output pipes open after git itself is killed.
        with subprocess.Popen(self._command(args), stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=self.git_dir,
                              start_new_session=True) as proc:
            try:
                out, err = proc.communicate(input, timeout=timeout)
            except BaseException as exc:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                if not isinstance(exc, subprocess.TimeoutExpired):
                    raise
                target = next((a for a in args[1:] if not a.startswith("-")), "")
                raise GitError(
                    f"git {args[0]}{f' from {target}' if network and target else ''} timed out after {timeout:g} s"
                    + (": the remote did not answer in time" if network else "")) from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def git(self, *args: str, check: bool = True, input: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        """git's output; with `check`, an exit status outside `ok` raises GitError (`git grep` exits 1 when
        it finds nothing)."""
        proc = self._exec(args, input)
        if check and proc.returncode not in ok:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {' '.join(args[:3])} failed: {err[-1][:200] if err else proc.returncode}")
        return proc.stdout

    def text(self, *args: str, check: bool = True, ok: tuple[int, ...] = (0,)) -> str:
        return self.git(*args, check=check, ok=ok).decode("utf-8", "surrogateescape")

    def resolve(self, ref: str) -> str | None:
        out = self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        sha = out.decode().strip()
        return sha or None

    def commits_and_merge_base(self, head: str, base: str) -> tuple[str | None, str | None, str | None]:
        """`resolve(head)`, `resolve(base)` and their `merge_base`, by one `git rev-parse base...head`
        when both are plain names (not an option, a range or a negation): git then prints head's
        commit, base's, and each merge base negated, the first being the one `git merge-base` prints
        (both take git's list of merge bases, in its order). Any other answer (a name is missing or
        read as something else) asks one question at a time."""
        if not any(ref.startswith(("-", "^")) or ".." in ref for ref in (head, base)):
            proc = self._exec(("rev-parse", f"{base}^{{commit}}...{head}^{{commit}}"))
            lines = proc.stdout.decode("utf-8", "replace").splitlines()
            if proc.returncode == 0 and len(lines) >= 2 and self._is_id(lines[0]) and self._is_id(lines[1]) \
                    and all(line[:1] == "^" and self._is_id(line[1:]) for line in lines[2:]):
                return lines[0], lines[1], lines[2][1:] if len(lines) > 2 else None
        head_sha, base_sha = self.resolve(head), self.resolve(base)
        return head_sha, base_sha, self.merge_base(base_sha, head_sha) if head_sha and base_sha else None

    def _is_id(self, text: str) -> bool:
        return len(text) == len(self.empty_tree) and OBJECT_ID.fullmatch(text) is not None

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
        # Names, any of which makes a line match, mean the same to Perl's regexes as to POSIX's, and git
        # runs Perl's compiled to machine code: a search of aiter's Python files for a review's dozen
        # names costs git a sixth less CPU. Not with -w or -o: which match of a line counts differs.
        perl = not (fixed or word or only_matching) and _pcre is not False and NAMES.fullmatch(pattern) is not None
        args = ["grep", "-I", "-z", "--no-color", "--full-name", "-P" if perl else "-F" if fixed else "-E"]
        if word:
            args.append("-w")
        args.append("-l" if files_only else "-n")
        if only_matching:
            args.append("-o")
        args += ["-e", pattern, rev, "--", *pathspecs]
        # -z: paths verbatim and NUL-terminated (a path may hold a newline or a colon), so each hit is
        # `rev:path NUL line NUL text LF`; the text of a line holds no LF, so the LF ends it.
        # a search git cannot make (a pattern too large, an object missing) raises: "nothing found" is exit 1
        fields = (self._perl_grep(args) if perl else self.text(*args, ok=(0, 1))).split("\0")
        prefix = f"{rev}:"
        if files_only:
            return [(p.removeprefix(prefix), 0, "") for p in fields if p]
        hits: list[tuple[str, int, str]] = []
        path = fields[0]
        for i in range(1, len(fields) - 1, 2):
            text, _, next_path = fields[i + 1].partition("\n")
            if fields[i].isdigit():
                hits.append((path.removeprefix(prefix), int(fields[i]), text))
            path = next_path
        return hits

    def _perl_grep(self, args: list[str]) -> str:
        """The output of a `git grep -P`, or of the same search with -E when git refuses it: a git built
        without PCRE (then not asked for Perl regexes again) or a pattern past PCRE's size limit."""
        global _pcre
        proc = self._exec(tuple(args))
        if proc.returncode in (0, 1):  # 1: nothing found
            _pcre = True
            return proc.stdout.decode("utf-8", "surrogateescape")
        if b"USE_LIBPCRE" in proc.stderr:
            _pcre = False
        return self.text(*("-E" if a == "-P" else a for a in args), ok=(0, 1))

    def ls_tree(self, rev: str, pathspecs: tuple[str, ...] = ()) -> list[str]:
        out = self.git("ls-tree", "-r", "--name-only", "-z", rev, "--", *pathspecs, check=False)
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    return {**env, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_ATTR_NOSYSTEM": "1"}


def _probe(path: str | os.PathLike[str], *options: str) -> str:
    """`git rev-parse <options>` in `path`, to find the repository before any command runs in it.

    While `--attr-source` support is unknown the call carries the option (rev-parse reads no
    attributes): a git without it refuses it as an unknown option before anything else, and then
    the call runs again without; so the answer costs no `git version` process of its own."""
    global _attr_source
    ask = _attr_source is None
    proc = _rev_parse(path, ("--attr-source=HEAD",) if ask else (), options)
    if ask and proc.returncode == 0:
        _attr_source = True
    elif ask:
        if proc.stderr.startswith("unknown option: --attr-source"):
            _attr_source = False
        proc = _rev_parse(path, (), options)
    if proc.returncode != 0:
        raise GitError(f"{path} is not a git repository")
    return proc.stdout.strip()


def _rev_parse(path: str | os.PathLike[str], global_options: tuple[str, ...], options: tuple[str, ...]
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(path), *global_options, "rev-parse", *options], capture_output=True,
                          text=True, env=_env(), timeout=LOCAL_TIMEOUT)
