"""E4 downstream coverage and E5 owner sign-off, from profile data, workflow files and git history."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ci_support import changed, hours_ago

from pr_review.ci import downstream
from pr_review.ci.collect import Job
from pr_review.ci.owners import owners
from pr_review.git import Repo
from pr_review.profiles import load_profiles

AITER = load_profiles()["aiter"]
WORKFLOWS = {
    ".github/workflows/atom-test.yaml": "jobs:\n  atom:\n    name: Atom Test\n"
                                        "    if: contains(github.event.pull_request.labels.*.name, 'ci:atom')\n",
    ".github/workflows/sglang_downstream.yaml": "jobs:\n  sglang:\n    name: Sglang Downstream\n"
                                                "    if: contains(labels, 'ci:sglang') || contains(labels, 'ci:all')\n",
    ".github/workflows/kimi-downstream.yaml": "name: Kimi Downstream\n# ci:kimi ci:sglang ci:vllm\n",
}


def skipped(name: str) -> Job:
    return Job(1, name, "Downstream", 3, 9, 1, "completed", "skipped", "", hours_ago(1))


def test_an_mla_change_with_downstream_skipped_asks_for_the_minimal_label() -> None:
    files = [changed("aiter/mla.py", added=("return kv * scale",), removed=("return kv",))]
    findings, notes, clear = downstream.check(files, AITER, [skipped("Atom Test"), skipped("Kimi Downstream")], [],
                                              WORKFLOWS.get)
    [finding] = findings
    assert finding.rule == "downstream-ci-skipped" and finding.path == "aiter/mla.py"
    assert "ci:atom" in finding.action and "ci:all" not in finding.action
    assert "MLA" in finding.trigger and "Kimi K2.5" in finding.trigger and "skipped" in finding.trigger
    assert notes == [] and clear is None


def test_ops_no_single_label_covers_take_the_fewest_labels() -> None:
    ops = {"MLA": (["aiter/mla.py"], [], ["Kimi Downstream"]), "GEMM": (["aiter/tuned_gemm.py"], [], ["Atom Test"])}
    jobs, _ = downstream.confirmed_jobs(AITER, WORKFLOWS.get)
    assert downstream.minimal_labels(ops, jobs, AITER.data["downstream_labels"], "ci:all") == ["ci:atom", "ci:sglang"]  # ci:sglang also runs Kimi Downstream; profile order breaks the tie


def test_an_op_no_known_job_runs_asks_for_the_catch_all_label() -> None:
    files = [changed("aiter/jit/core.py", removed=("DEFAULT = 1",))]
    [finding], _, _ = downstream.check(files, AITER, [], [], WORKFLOWS.get)
    assert "ci:all" in finding.action


@pytest.mark.parametrize("labels,jobs", [(["ci:sglang"], []), ([], ["ran"])])
def test_a_label_or_a_downstream_job_that_ran_is_enough(labels: list[str], jobs: list[str]) -> None:
    head = [Job(1, "Atom Test", "Downstream", 3, 9, 1, "completed", "success", "", hours_ago(1))] if jobs else []
    files = [changed("aiter/fused_moe.py", removed=("topk = 8",))]
    findings, notes, clear = downstream.check(files, AITER, head, labels, WORKFLOWS.get)
    assert findings == [] and notes == [] and ("ci:sglang" in clear if labels else "Atom Test ran" in clear)


def test_comment_only_and_unconsumed_changes_need_no_label() -> None:
    files = [changed("aiter/mla.py", added=("# clearer comment",), removed=("# comment",)),
             changed("aiter/utils/log.py", removed=("x = 1",))]
    assert downstream.check(files, AITER, [], [], WORKFLOWS.get) == ([], [], "no op that downstream projects consume changed")


def test_a_repository_without_the_downstream_workflows_is_not_checked() -> None:
    files = [changed("aiter/mla.py", removed=("return kv",))]
    findings, [note], clear = downstream.check(files, AITER, [], [], {}.get)
    assert findings == [] and clear is None and "downstream coverage (E4) was not checked" in note


def test_a_job_its_workflow_no_longer_names_is_left_out_and_said() -> None:
    workflows = {**WORKFLOWS, ".github/workflows/atom-test.yaml": "jobs:\n  atom:\n    name: ATOM benchmark\n"}
    del workflows[".github/workflows/kimi-downstream.yaml"]
    jobs, notes = downstream.confirmed_jobs(AITER, workflows.get)
    assert [j.name for j in jobs] == ["Sglang Downstream"]
    assert any("atom-test.yaml no longer names" in n for n in notes)
    assert any("kimi-downstream.yaml is not in the repository" in n for n in notes)


def _commit(repo: Path, path: str, text: str, author: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    name, email = author.split(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"), "GIT_COMMITTER_NAME": "ci",
           "GIT_COMMITTER_EMAIL": "ci@example.invalid", "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", "commit", "-qm", "c"], check=True, env=env)


@pytest.mark.parametrize("notify", [False, True])
def test_the_owner_of_a_core_file_is_its_top_human_committer(tmp_path: Path, notify: bool) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for n in range(3):
        _commit(tmp_path, "aiter/fused_moe.py", f"v{n}\n", "Alice Chen <1234+alice-c@users.noreply.github.com>")
    _commit(tmp_path, "aiter/fused_moe.py", "v3\n", "Bob <bob@example.invalid>")
    for n in range(5):
        _commit(tmp_path, "aiter/fused_moe.py", f"bot{n}\n",
                "dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>")
    files = [changed("aiter/fused_moe.py", added=("topk = 4",), removed=("topk = 8",)),
             changed("aiter/ops/new_op.py", removed=("x = 1",)),  # Tier 3: no sign-off asked
             changed("aiter/mha_only_added.py", status="added")]
    found, notes = owners(Repo(tmp_path), "HEAD", files, AITER, notify)
    [owner] = found
    assert (owner.path, owner.tier, owner.name, owner.login) == ("aiter/fused_moe.py", 2, "Alice Chen", "alice-c")
    assert (owner.commits, owner.total, owner.notify) == (3, 9, notify)
    assert notes == []


def test_a_pure_addition_to_a_core_file_asks_no_sign_off(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, "aiter/mla.py", "x\n", "Alice <a@example.invalid>")
    files = [changed("aiter/mla.py", added=("def new_kernel(): ...",), removed=("# old note",))]
    assert owners(Repo(tmp_path), "HEAD", files, AITER, False) == ([], [])
