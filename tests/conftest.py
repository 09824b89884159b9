"""Shared test helpers: throw-away git repositories built from base/head file trees."""
from __future__ import annotations

import gc
import shutil
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _cycle_collector_handed_back():
    """`pr-review review` turns the cycle collector off and freezes the heap for the rest of its process
    (one process, one review). A test that runs the CLI in-process hands the collector back; otherwise
    every later test's cyclic garbage stays, and the suite once peaked at 5 GB."""
    yield
    if not gc.isenabled() or gc.get_freeze_count():
        gc.unfreeze()
        gc.enable()


GIT_ID = ["-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false",
          "-c", "init.defaultBranch=main"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *GIT_ID, *args], check=True, capture_output=True,
                          text=True).stdout


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def make_repo(root: Path, base: dict[str, str | bytes], head: dict[str, str | bytes],
              delete: tuple[str, ...] = ()) -> Path:
    """A repository whose `main` holds `base` and whose `pr` branch overlays `head` and deletes `delete`."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write_tree(root, base)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr")
    write_tree(root, head)
    for path in delete:
        (root / path).unlink()
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "pr")
    return root


def copy_tree(src: Path, dest: Path) -> None:
    """`src` copied over `dest`, every file written now: a file keeping its source's modification time
    over a same-sized one can look unchanged to `git add`, and the fixture's diff comes out empty."""
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True, copy_function=shutil.copyfile)


@pytest.fixture
def repo_factory(tmp_path):
    counter = iter(range(1000))

    def build(base, head, delete=()):
        return make_repo(tmp_path / f"repo{next(counter)}", base, head, delete)

    return build
