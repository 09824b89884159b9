"""scripts/release_check.py: the tag, the package version and CHANGELOG.md agree, and the notes are the section."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "release_check.py"
_spec = importlib.util.spec_from_file_location("release_check", SCRIPT)
release_check = sys.modules["release_check"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(release_check)

CHANGELOG = """# Changelog

## [Unreleased]

### Added

- Something new.

## [1.2.0] - 2026-12-01

### Fixed

- A crash on Python 3.10.

## [1.1.0] - 2026-11-02

- Older.

[Unreleased]: https://github.com/rocm/pr-review-action/compare/v1.2.0...HEAD
[1.2.0]: https://github.com/rocm/pr-review-action/releases/tag/v1.2.0
"""


def project(tmp_path: Path, version: str, changelog: str = CHANGELOG) -> Path:
    (tmp_path / "src" / "pr_review").mkdir(parents=True)
    (tmp_path / "src" / "pr_review" / "__init__.py").write_text(f'"""Doc."""\n\n__version__ = "{version}"\n')
    (tmp_path / "CHANGELOG.md").write_text(changelog)
    return tmp_path


def test_an_agreeing_tag_gives_the_section_as_notes_and_the_major_tag(tmp_path: Path) -> None:
    release, problems = release_check.check("v1.2.0", project(tmp_path, "1.2.0"))
    assert problems == []
    assert (release.version, release.major, release.tag) == ("1.2.0", "v1", "v1.2.0")
    assert release.notes == "### Fixed\n\n- A crash on Python 3.10.\n"


def test_the_last_section_stops_at_the_link_references(tmp_path: Path) -> None:
    release, problems = release_check.check("v1.1.0", project(tmp_path, "1.1.0"))
    assert problems == [] and release.notes == "- Older.\n"


@pytest.mark.parametrize("tag, version, changelog, expected", [
    ("v1.2.1", "1.2.0", CHANGELOG, ["says __version__ = '1.2.0', the tag says '1.2.1'",
                                    "has no `## [1.2.1] - YYYY-MM-DD` section"]),
    ("v1.3.0", "1.3.0", CHANGELOG, ["has no `## [1.3.0] - YYYY-MM-DD` section"]),
    ("v1.2.0", "1.2.0", CHANGELOG.replace("## [1.2.0] - 2026-12-01", "## [1.2.0]"), ["[1.2.0] has no YYYY-MM-DD date"]),
    ("v1.2.0", "1.2.0", CHANGELOG.replace("## [Unreleased]", "## Next"), ["has no `## [Unreleased]` section"]),
    ("v1.2.0", "1.2.0", CHANGELOG.replace("### Fixed\n\n- A crash on Python 3.10.\n", ""), ["[1.2.0] is empty"]),
    ("1.2.0", "1.2.0", CHANGELOG, ["is not vMAJOR.MINOR.PATCH"]),
    ("v1.2", "1.2.0", CHANGELOG, ["is not vMAJOR.MINOR.PATCH"]),
])
def test_each_disagreement_is_named(tmp_path: Path, tag: str, version: str, changelog: str,
                                    expected: list[str]) -> None:
    release, problems = release_check.check(tag, project(tmp_path, version, changelog))
    assert release is None and len(problems) == len(expected)
    assert all(want in got for want, got in zip(expected, problems)), problems


def test_this_repository_agrees_with_itself() -> None:
    """The version in src/pr_review/__init__.py has its CHANGELOG section, so tagging it would release."""
    version = release_check.package_version(ROOT / "src" / "pr_review" / "__init__.py")
    release, problems = release_check.check(f"v{version}")
    assert problems == [] and release.notes.strip()


def test_the_command_line_prints_outputs_and_writes_the_notes(tmp_path: Path) -> None:
    version = release_check.package_version(ROOT / "src" / "pr_review" / "__init__.py")
    notes = tmp_path / "notes.md"
    proc = subprocess.run([sys.executable, str(SCRIPT), f"v{version}", "--notes", str(notes)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"version={version}", f"major=v{version.split('.')[0]}", f"tag=v{version}"]
    assert notes.read_text().strip()
    bad = subprocess.run([sys.executable, str(SCRIPT), "v99.0.0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stdout == "" and "release_check: " in bad.stderr


def test_the_release_workflow_runs_ci_then_checks_publishes_and_moves_the_major_tag() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v[0-9]+.[0-9]+.[0-9]+"]  # YAML 1.1 reads `on` as True
    assert workflow["jobs"]["ci"]["uses"] == "./.github/workflows/ci.yml"
    release = workflow["jobs"]["release"]
    assert release["needs"] == "ci" and release["permissions"] == {"contents": "write"}
    runs = [step.get("run", "") for step in release["steps"]]
    assert any(run.startswith("python scripts/release_check.py \"$TAG\" --notes") for run in runs)
    assert any("gh release create" in run and "--notes-file" in run for run in runs)
    assert any("git/refs/tags/$MAJOR" in run for run in runs)
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert "workflow_call" in ci[True]
