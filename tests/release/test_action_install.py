"""The action's own install: requirements/action.lock pins, with hashes, exactly what pyproject.toml asks for,
on every Python the project supports; and every action the composite and the workflows use is pinned by sha."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "action.lock"
REGENERATE = "regenerate it with the command in its header"
SUPPORTED = ["3.10", "3.11", "3.12", "3.13"]
PINNED_USES = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def lock_pins() -> list[tuple[Requirement, list[str]]]:
    """(requirement, hashes) for each entry of the lock; continuation lines joined the way pip reads them."""
    text = re.sub(r"\\\n", " ", LOCK.read_text())
    pins = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        spec, *hashes = re.split(r"\s+--hash=", line)
        pins.append((Requirement(spec), [h.strip() for h in hashes]))
    return pins


def environment(python: str) -> dict[str, str]:
    return default_environment() | {"python_version": python, "python_full_version": f"{python}.0",
                                     "sys_platform": "linux", "platform_system": "Linux",
                                     "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def pins_for(python: str) -> dict[str, Requirement]:
    env = environment(python)
    return {canonicalize_name(req.name): req for req, _ in lock_pins() if req.marker is None or req.marker.evaluate(env)}


def test_every_lock_entry_is_an_exact_pin_with_hashes() -> None:
    for req, hashes in lock_pins():
        [spec] = req.specifier
        assert spec.operator == "==", f"{req} is not pinned exactly: {REGENERATE}"
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"{req.name} lacks hashes"


@pytest.mark.parametrize("python", SUPPORTED)
def test_the_lock_satisfies_pyproject_on_every_supported_python(python: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = pins_for(python)
    for dependency in map(Requirement, project["dependencies"]):
        if dependency.marker is not None and not dependency.marker.evaluate(environment(python)):
            continue
        pin = pins.get(canonicalize_name(dependency.name))
        assert pin is not None, f"{dependency.name} is missing from {LOCK.name} for Python {python}: {REGENERATE}"
        version = next(iter(pin.specifier)).version
        assert dependency.specifier.contains(version, prereleases=True), (
            f"{LOCK.name} pins {pin.name}=={version}, outside pyproject's {dependency}: {REGENERATE}")


def test_the_tomllib_backport_is_locked_for_python_310_only() -> None:
    assert "tomli" in pins_for("3.10") and "tomli" not in pins_for("3.11")


def uses_of(path: Path) -> list[str]:
    data = yaml.safe_load(path.read_text())
    steps = data["runs"]["steps"] if "runs" in data else [
        step for job in data["jobs"].values() for step in job.get("steps", [])]
    return [step["uses"] for step in steps if "uses" in step and not step["uses"].startswith("./")]


def test_every_action_used_is_pinned_by_commit_sha() -> None:
    files = [ROOT / "action.yml", *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
    for path in files:
        for uses in uses_of(path):
            assert PINNED_USES.match(uses), f"{path.name}: {uses} is not pinned to a commit sha"


def test_action_metadata_fits_the_marketplace() -> None:
    meta = yaml.safe_load((ROOT / "action.yml").read_text())
    assert len(meta["description"]) < 125  # the Marketplace cuts longer descriptions
    assert meta["branding"]["color"] in {"white", "black", "yellow", "blue", "green", "orange", "red", "purple",
                                         "gray-dark"}


def test_ci_tests_every_supported_python() -> None:
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert ci["jobs"]["test"]["strategy"]["matrix"]["python"] == SUPPORTED
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == f">={SUPPORTED[0]}"


def test_dependabot_watches_the_actions_and_the_python_dependencies() -> None:
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    ecosystems = {update["package-ecosystem"]: update for update in config["updates"]}
    assert "/" in ecosystems["github-actions"]["directories"]  # action.yml's pins reach every user
    assert ecosystems["pip"]["directory"] == "/"
