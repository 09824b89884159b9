"""What a review keeps across processes, the way Python keeps byte code: one dict per kind of data in
one marshal file under the user's cache directory, read whole when first needed and written back
whole at exit by a process that added to it. A file that cannot be read or written is simply not
used; `PR_REVIEW_NO_CACHE=1` turns every one off."""
from __future__ import annotations

import atexit
import binascii
import marshal
import os
from pathlib import Path
from typing import Any, Callable


def cache_file(kind: str, key: str) -> Path | None:
    """The file that keeps `kind` of data for `key` (None when $PR_REVIEW_NO_CACHE is set)."""
    if os.environ.get("PR_REVIEW_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    # crc32: hashlib would load OpenSSL for a file name (a review with no finding needs no hash)
    return Path(base, "pr-review", f"{kind}-{binascii.crc32(key.encode()):08x}.marshal")


class MarshalStore:
    """`entries`, read from `file` (those `valid` accepts) and written back at exit once `keep` added one."""

    def __init__(self, file: Path | None, valid: Callable[[Any], bool] | None = None) -> None:
        self.file = file
        self.entries: dict[Any, Any] = {}
        self.dirty = False
        if file is not None:
            try:
                loaded = marshal.loads(file.read_bytes())
            except (OSError, EOFError, ValueError, TypeError):
                loaded = None
            if isinstance(loaded, dict):
                self.entries = {k: v for k, v in loaded.items() if valid is None or valid(v)}

    def keep(self, key: Any, entry: Any) -> None:
        self.entries[key] = entry
        if self.file is not None and not self.dirty:
            self.dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        """The entries marshalled into the file, whole or not at all, whichever process writes last."""
        assert self.file is not None
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            scratch = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
            scratch.write_bytes(marshal.dumps(self.entries))
            os.replace(scratch, self.file)
        except OSError:
            pass
