"""The PR does not choose its own rules (issue 9, class 4): the profile is detected on the base side,
like the repository config, so a PR that adds another project's marker file is still reviewed
under the repository's own profile."""
from __future__ import annotations

import json
import subprocess
import sys

VLLM = {"vllm/platforms/rocm.py": "import torch\n", "vllm/model_executor/a.py": "X = 1\n"}


def _profile(repo) -> str:
    result = subprocess.run([sys.executable, "-m", "pr_review", "review", "--repo", str(repo), "--base", "main",
                             "--head", "pr", "--format", "json"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["profile"]


def test_a_pr_adding_another_projects_marker_keeps_the_base_profile(repo_factory):
    repo = repo_factory(VLLM, {"aiter/jit/core.py": "import os\n", "vllm/model_executor/a.py": "X = 2\n"})
    assert _profile(repo) == "vllm"


def test_a_pr_deleting_the_marker_keeps_the_base_profile(repo_factory):
    repo = repo_factory({**VLLM, "aiter/jit/core.py": "import os\n"}, {}, delete=("aiter/jit/core.py",))
    assert _profile(repo) == "aiter"


def test_a_repository_without_markers_stays_generic(repo_factory):
    repo = repo_factory({"src/a.py": "X = 1\n"}, {"aiter/jit/core.py": "import os\n"})
    assert _profile(repo) == "generic"
