"""File contents at a revision through one long-lived `git cat-file --batch` process."""
from __future__ import annotations

import os
import subprocess
from typing import IO

from .repo import Repo
from ..model import record

DEFAULT_SIZE_CAP = 2 * 1024 * 1024
MISSING = "not present at this revision"
BINARY = "binary content"
NOT_A_FILE = ", not a file"  # after "is a tree" or "is a commit" (a submodule)


@record(frozen=True)
class Blob:
    text: str | None  # None when not readable as text; `reason` says why
    reason: str = ""

    @property
    def unsearched(self) -> bool:
        """What `git grep -I` does not search either: no such path, binary content, a tree or submodule."""
        return self.reason in (MISSING, BINARY) or self.reason.endswith(NOT_A_FILE)


class CatFile:
    def __init__(self, repo: Repo | str | os.PathLike[str], size_cap: int = DEFAULT_SIZE_CAP):
        self.repo = repo if isinstance(repo, Repo) else Repo(repo)
        self.size_cap = size_cap
        self._proc: subprocess.Popen[bytes] | None = None
        self._cache: dict[tuple[str, str], Blob] = {}

    def _process(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self.repo.popen("cat-file", "--batch")
        return self._proc

    def read(self, rev: str, path: str) -> Blob:
        key = (rev, path)
        if key not in self._cache:
            self._cache[key] = self._read(rev, path)
        return self._cache[key]

    def peek(self, rev: str, path: str) -> Blob:
        """`read`, without keeping a blob not read before: for a look at many files once (a PR's every
        touched file), which would otherwise stay in memory for the rest of the review."""
        return self._cache.get((rev, path)) or self._read(rev, path)

    def text(self, rev: str, path: str) -> str | None:
        return self.read(rev, path).text

    def _read(self, rev: str, path: str) -> Blob:
        name = self._object_name(rev, path)
        if name is None:
            return Blob(None, MISSING)
        proc = self._process()
        assert proc.stdin and proc.stdout
        proc.stdin.write(f"{name}\n".encode("utf-8", "surrogateescape"))
        proc.stdin.flush()
        header = proc.stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3:  # "<name> missing" or "<name> ambiguous"
            return Blob(None, MISSING)
        _, kind, size_text = header
        size = int(size_text)
        if kind != "blob" or size > self.size_cap:
            _discard(proc.stdout, size + 1)  # never hold more than the cap in memory
            return Blob(None, f"is a {kind}{NOT_A_FILE}" if kind != "blob" else
                        f"larger than the {self.size_cap // 1024} KB cap ({size // 1024} KB)")
        data = proc.stdout.read(size)
        proc.stdout.read(1)  # the newline after each object
        if b"\0" in data[:8000]:
            return Blob(None, BINARY)
        try:
            return Blob(data.decode("utf-8"))
        except UnicodeDecodeError:
            return Blob(None, "not UTF-8 text")

    def _object_name(self, rev: str, path: str) -> str | None:
        """What to ask cat-file for: `rev:path`, or, since it reads one name per line, the object id
        of a path holding a newline (from `ls-tree -z`); None when there is no such path."""
        if "\n" not in path:
            return f"{rev}:{path}"
        entry = self.repo.git("ls-tree", "-z", rev, "--", path, check=False).split(b"\0")[0]
        meta = entry.partition(b"\t")[0].split()
        return meta[2].decode() if len(meta) == 3 else None

    def close(self) -> None:
        if self._proc is not None:
            assert self._proc.stdin and self._proc.stdout
            self._proc.stdin.close()  # end of input: cat-file exits
            self._proc.stdout.close()
            self._proc.wait(timeout=5)
        self._proc = None

    def __enter__(self) -> "CatFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _discard(stream: IO[bytes], size: int, chunk: int = 1 << 20) -> None:
    while size > 0:
        got = len(stream.read(min(chunk, size)))
        if not got:  # the process ended
            return
        size -= got
