"""The composite action run the way the runner runs it: action.yml's steps, in order, each `run:` as a
bash script with its `env:` (expressions substituted here), the runner's GITHUB_* variables and file
commands, against a real git repository and the fake GitHub on 127.0.0.1.

The `uses:` steps (setup-python, the cache restore and save) are skipped: the test's own interpreter is the
job's python3, and either PR_REVIEW_SKIP_INSTALL=true makes the install reuse it, or a test lays out the
environment a cache hit would restore. No step reaches the network.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import marshal
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from pr_review.warm import shipped_patterns

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    """A helper module of tests/github (no conftest.py there: it would shadow tests/conftest.py)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "github" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


for _name in ("fake_github", "gh_upstream", "gh_support", "gh_fixtures"):
    _load(_name)
gh_support, gh_upstream = sys.modules["gh_support"], sys.modules["gh_upstream"]
fake, upstream = sys.modules["gh_fixtures"].fake, sys.modules["gh_fixtures"].upstream  # pytest fixtures
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# Every action the composite uses, pinned by commit sha to a release that runs on node24.
PINNED_ACTIONS = {
    "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97": "v7.0.0",
    "actions/cache/restore@27d5ce7f107fe9357f9df03efb73ab90386fccae": "v5.0.5",
    "actions/cache/save@27d5ce7f107fe9357f9df03efb73ab90386fccae": "v5.0.5",
    "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f": "v7.0.0",
}


TIMINGS_OUT = os.environ.get("PR_REVIEW_E2E_TIMINGS")


@dataclass
class StepResult:
    name: str
    code: int
    log: str
    seconds: float  # wall time of the step's script, for the README's install figures (never asserted)


@dataclass
class ActionResult:
    steps: list[StepResult]
    outputs: dict[str, str]
    summary: str
    log: str = field(init=False)

    def __post_init__(self) -> None:
        self.log = "".join(step.log for step in self.steps)


def run_action(*, with_: dict[str, str], token: str, event_name: str, event: dict[str, Any], workspace: Path,
               api_url: str, tmp: Path, skip_install: bool = True, env: dict[str, str] | None = None,
               action_path: Path = ROOT, until: str | None = None) -> ActionResult:
    """The action's steps in order (up to the step whose id is `until`), from its copy at `action_path`."""
    meta = yaml.safe_load((action_path / "action.yml").read_text())
    assert meta["runs"]["using"] == "composite"
    unknown = set(with_) - set(meta["inputs"])
    assert not unknown, f"the action has no input {unknown}"
    github = {"token": token, "action_path": str(action_path), "action_ref": ""}  # `uses: ./` has no ref
    inputs = {name: spec.get("default", "") for name, spec in meta["inputs"].items()}
    inputs = {name: substitute(str(value), {"github": github}) for name, value in inputs.items()} | with_
    steps: dict[str, dict[str, dict[str, str]]] = {}
    (tmp / "event.json").write_text(json.dumps(event))
    runner_env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp),
        "LANG": "C.UTF-8", "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(tmp / "event.json"), "GITHUB_REPOSITORY": "acme/kernels",
        "GITHUB_API_URL": api_url, "GITHUB_SERVER_URL": "https://github.test", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_path), "RUNNER_TEMP": str(tmp / "runner-temp"), "RUNNER_OS": "Linux",
        "RUNNER_ARCH": "X64", **({"PR_REVIEW_SKIP_INSTALL": "true"} if skip_install else {}), **(env or {}),
    }
    (tmp / "runner-temp").mkdir(exist_ok=True)
    results, summary = [], ""
    for index, step in enumerate(meta["runs"]["steps"]):
        if "uses" in step:
            assert step["uses"] in PINNED_ACTIONS and "if" in step
            continue
        assert "if" not in step and step["shell"] == "bash"
        assert "${{" not in step["run"], "expressions must reach run: through env:"
        context = {"github": github, "inputs": inputs, "steps": steps}
        files = {"GITHUB_OUTPUT": tmp / f"output{index}", "GITHUB_STEP_SUMMARY": tmp / f"summary{index}"}
        for path in files.values():
            path.touch()
        env = runner_env | {k: str(v) for k, v in files.items()} | {
            key: substitute(str(value), context) for key, value in (step.get("env") or {}).items()}
        script = tmp / f"step{index}.sh"
        script.write_text(step["run"])
        started = time.monotonic()
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=120)
        results.append(StepResult(step.get("name", ""), proc.returncode, proc.stdout + proc.stderr,
                                  time.monotonic() - started))
        assert proc.returncode == 0, f"step {step.get('name')} failed:\n{proc.stdout}\n{proc.stderr}"
        if "id" in step:
            steps[step["id"]] = {"outputs": gh_support.parse_outputs(files["GITHUB_OUTPUT"].read_text())}
        summary += files["GITHUB_STEP_SUMMARY"].read_text()
        if until is not None and step.get("id") == until:
            break
    outputs = {} if until is not None else {  # the action's outputs read the review step's
        name: substitute(spec["value"], {"steps": steps}) for name, spec in meta["outputs"].items()}
    return ActionResult(results, outputs, summary)


def substitute(text: str, context: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        node: Any = context
        parts = match.group(1).split(".")
        for index, part in enumerate(parts):
            if index and parts[index - 1] == "outputs" and isinstance(node, dict) and part not in node:
                return ""  # as on GitHub, an output a step did not set reads as empty
            assert isinstance(node, dict) and part in node, f"unsupported expression {match.group(0)}"
            node = node[part]
        return str(node)

    return EXPRESSION.sub(value, text)


def pull_request_event(upstream: "gh_upstream.Upstream", fork: bool = False) -> dict[str, Any]:
    return {"action": "opened", "number": 7, "pull_request": {
        "number": 7, "title": "[perf] Speed up per-token quant", "body": "Faster.", "state": "open",
        "merged": False, "html_url": "https://github.test/acme/kernels/pull/7", "user": {"login": "dev"},
        "labels": [{"name": "perf"}],
        "head": {"sha": upstream.pr_head, "ref": "feature",
                 "repo": {"full_name": "someone/kernels" if fork else "acme/kernels"}},
        "base": {"sha": upstream.base_sha, "ref": "main", "repo": {"full_name": "acme/kernels"}}}}


def test_every_input_reaches_the_script_through_env() -> None:
    meta = yaml.safe_load((ROOT / "action.yml").read_text())
    review = next(step for step in meta["runs"]["steps"] if step.get("id") == "review")
    mapped = {EXPRESSION.fullmatch(v).group(1) for v in review["env"].values()}
    used_by_uses_steps = {"inputs.python-version", "inputs.setup-python", "inputs.upload-report"}
    assert {f"inputs.{name}" for name in meta["inputs"]} - used_by_uses_steps <= mapped
    assert set(meta["outputs"]) >= {"verdict", "verdict-id", "high", "medium", "low", "report-path", "sarif-path", "check-run-url"}
    assert meta["inputs"]["github-token"]["default"] == "${{ github.token }}"


def test_upload_report_uploads_both_reports_as_an_artifact() -> None:
    meta = yaml.safe_load((ROOT / "action.yml").read_text())
    [upload] = [step for step in meta["runs"]["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert meta["inputs"]["upload-report"]["default"] == "false"
    assert upload["if"] == "inputs.upload-report == 'true' && steps.review.outputs.report-path != ''"
    assert upload["with"]["path"].splitlines() == ["${{ steps.review.outputs.report-path }}",
                                                   "${{ steps.review.outputs.sarif-path }}"]
    assert upload["continue-on-error"] is True  # advisory, like the rest
    assert "${{ strategy.job-index }}" in upload["with"]["name"]  # matrix legs do not collide


def test_pull_request(upstream, fake, tmp_path: Path) -> None:
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    result = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                        workspace=workspace, api_url=fake.url, tmp=tmp_path)
    [check] = fake.check_runs.values()
    report = json.loads(Path(result.outputs["report-path"]).read_text())
    assert check["head_sha"] == upstream.pr_head and check["conclusion"] == "neutral"
    assert check["name"] == "PR review (advisory)"
    assert len(fake.annotations[check["id"]]) == len([f for f in report["findings"] if f["path"]])
    assert result.outputs["verdict"] == "BLOCK" and result.outputs["check-run-url"] == check["html_url"]
    assert [result.outputs[s] for s in ("high", "medium", "low")] == [str(report["counts"][s]) for s in
                                                                      ("high", "medium", "low")]
    assert report["head_sha"] == upstream.pr_head and report["merge_base"] == upstream.base_sha
    assert Path(result.outputs["sarif-path"]).is_file()
    assert "Posted as the check run" in result.summary
    assert result.log.count("write-token") == 1 and "::add-mask::write-token" in result.log


def test_a_failed_install_is_an_advisory_error(upstream, fake, tmp_path: Path) -> None:
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    # pip without an index or its config stands in for a runner that cannot reach PyPI.
    offline_pip = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}
    result = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                        workspace=workspace, api_url=fake.url, tmp=tmp_path, skip_install=False, env=offline_pip)
    assert all(step.code == 0 for step in result.steps)
    assert "::warning title=pr-review::pr-review could not install itself: pip could not install" in result.log
    assert result.outputs["verdict"] == "ERROR" and result.outputs["verdict-id"] == "error"
    assert result.summary.startswith("## ERROR — advisory review")
    assert fake.log == []  # no review ran, so GitHub was never asked


def test_a_cached_environment_is_reused_without_pip(upstream, fake, tmp_path: Path) -> None:
    """What actions/cache restores: an environment whose marker names the current lock. Its dependencies
    come from this interpreter's site-packages (a .pth), so nothing is installed and the review still runs."""
    venv = tmp_path / "runner-temp" / "pr-review-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    lock = (ROOT / "requirements" / "action.lock").read_bytes()
    (venv / "pr-review-lock").write_text(hashlib.sha256(lock).hexdigest()[:16] + "\n")
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    result = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                        workspace=workspace, api_url=fake.url, tmp=tmp_path, skip_install=False,
                        env={"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"})
    install = next(step for step in result.steps if step.name == "Install pr-review")
    assert f"Reusing the cached environment {venv}" in install.log
    if TIMINGS_OUT:  # PR_REVIEW_E2E_TIMINGS=path keeps the cache-hit install time, for the README's figure
        Path(TIMINGS_OUT).write_text(f"cache-hit install step: {install.seconds:.3f} s\n", encoding="utf-8")
    assert Path(purelib, "pr_review_action.pth").read_text().strip() == str(ROOT / "src")
    report = json.loads(Path(result.outputs["report-path"]).read_text())
    assert result.outputs["verdict"] == report["verdict"] and len(fake.check_runs) == 1


def _action_copy(root: Path) -> Path:
    """A runner's copy of the action: its own files, no byte code, and a lock that installs nothing (pip runs
    offline); the dependencies reach the environment through the stand-in for python3 below."""
    shutil.copytree(ROOT / "src" / "pr_review", root / "src" / "pr_review", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", root / "rules")
    (root / "requirements").mkdir()
    (root / "requirements" / "action.lock").write_text("# this test's environment installs nothing\n")
    shutil.copy(ROOT / "action.yml", root / "action.yml")
    return root


def _python3_whose_venvs_see_the_test_dependencies(bin_dir: Path) -> Path:
    """A directory holding `python3`: this interpreter, and an environment it creates (`python3 -m venv DIR`)
    gets a .pth naming this interpreter's site-packages, as if pip had installed the lock there."""
    bin_dir.mkdir()
    wrapper = bin_dir / "python3"
    pth = "import sys, sysconfig; open(sysconfig.get_path('purelib') + '/test_dependencies.pth', 'w').write(sys.argv[1])"
    wrapper.write_text(f'#!/bin/sh\n"{sys.executable}" "$@" || exit $?\n'
                       f'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then\n'
                       f'  "$3/bin/python" -c "{pth}" "{sysconfig.get_path("purelib")}"\nfi\n')
    wrapper.chmod(0o755)
    return bin_dir


def _byte_code(tree: Path) -> dict[str, bytes]:
    return {str(path.relative_to(tree)): path.read_bytes() for path in sorted(tree.rglob("__pycache__/*.pyc"))}


def _pyc(source: Path) -> Path:
    return Path(importlib.util.cache_from_source(str(source)))


CHECKED_HASH = 0b11  # the flags word of a pyc's header: validated by the source's hash, not its mtime


def test_the_environment_carries_checked_byte_code_the_parsed_shipped_rules_and_compiled_patterns(upstream, fake, tmp_path: Path) -> None:
    """A cold install compiles the action's code (checked-hash) and parses its rules into the environment that
    actions/cache saves; the next job's fresh copy of the action gets that byte code back, and a module changed
    since is compiled again rather than served stale."""
    action = _action_copy(tmp_path / "action")
    src, venv = action / "src", tmp_path / "runner-temp" / "pr-review-venv"
    path = os.pathsep.join([str(_python3_whose_venvs_see_the_test_dependencies(tmp_path / "bin")),
                            str(Path(sys.executable).parent), os.environ["PATH"]])
    offline = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PATH": path}
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    first = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                       workspace=workspace, api_url=fake.url, tmp=tmp_path, skip_install=False, env=offline,
                       action_path=action)
    assert first.outputs["verdict"] == json.loads(Path(first.outputs["report-path"]).read_text())["verdict"]
    kept = _byte_code(venv / "pr-review-pycache")
    assert len(kept) == len(list(src.rglob("*.py")))
    assert {int.from_bytes(pyc[4:8], "little") for pyc in kept.values()} == {CHECKED_HASH}
    [shipped] = (venv / "cache" / "pr-review").glob("shipped-*.marshal")
    assert len(marshal.loads(shipped.read_bytes())) == len(list((action / "rules").rglob("*.yml")))
    [patterns] = (venv / "cache" / "pr-review").glob("regex-*.marshal")
    assert len(marshal.loads(patterns.read_bytes())) >= len(shipped_patterns())
    assert not (tmp_path / ".cache").exists()  # HOME's: the review step read the environment's cache instead

    # The next job: a fresh copy of the action (new modification times, no byte code), one module changed since
    # the environment was cached, and the environment restored by actions/cache.
    for pycache in list(src.rglob("__pycache__")):
        shutil.rmtree(pycache)
    later = time.time() + 3600
    for file in action.rglob("*"):
        os.utime(file, (later, later))
    changed = src / "pr_review" / "rulesdata.py"
    changed.write_text(changed.read_text() + '\nEDITED_SINCE_THE_CACHE = "yes"\n')
    second = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                        workspace=workspace, api_url=fake.url, tmp=tmp_path, skip_install=False, env=offline,
                        action_path=action, until="install")
    assert f"Reusing the cached environment {venv}" in second.log
    assert _byte_code(src) == kept  # restored, the changed module's stale byte code included
    assert _pyc(changed).read_bytes()[8:16] != importlib.util.source_hash(changed.read_bytes())

    probe = subprocess.run([str(venv / "bin" / "python"), "-v", "-c",
                            "import pr_review.github.action_main, pr_review.rulesdata as m; print(m.EDITED_SINCE_THE_CACHE)"],
                           cwd=tmp_path / "runner-temp", env={"PATH": path, "HOME": str(tmp_path)},
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "yes", probe.stderr[-2000:]
    used = {pyc for pyc in re.findall(r"^# (\S+\.pyc) matches ", probe.stderr, re.M) if pyc.startswith(str(src))}
    written = set(re.findall(r"^# created '(.+\.pyc)'", probe.stderr, re.M))
    assert len(used) > 30 and str(_pyc(changed)) not in used
    assert written == {str(_pyc(changed))}  # only the changed module was compiled, and its byte code follows it
    fresh = _pyc(changed).read_bytes()
    assert int.from_bytes(fresh[4:8], "little") == CHECKED_HASH
    assert fresh[8:16] == importlib.util.source_hash(changed.read_bytes())


def test_no_module_of_the_checkout_is_imported(upstream, fake, tmp_path: Path) -> None:
    """`python -`, `-c` and `-m` put the working directory first on sys.path; the steps run Python elsewhere, so
    modules a PR adds at its root (named like what the steps import) are never imported."""
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    ran = tmp_path / "checkout-code-ran"
    payload = f"open({str(ran)!r}, 'a').write(__name__ + '\\n')\n"
    for module in ("hashlib.py", "platform.py", "sysconfig.py", "venv/__init__.py", "venv/__main__.py",
                   "pip/__init__.py", "pip/__main__.py", "compileall.py", "actions_toolkit.py",
                   "pr_review/__init__.py", "pr_review/github/__init__.py", "pr_review/github/action_main.py"):
        (workspace / module).parent.mkdir(parents=True, exist_ok=True)
        (workspace / module).write_text(payload)
    action = _action_copy(tmp_path / "action")
    path = os.pathsep.join([str(_python3_whose_venvs_see_the_test_dependencies(tmp_path / "bin")),
                            str(Path(sys.executable).parent), os.environ["PATH"]])
    for skip_install in (False, True):  # a cold install, then a python3 that may already import pr_review
        result = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                            workspace=workspace, api_url=fake.url, tmp=tmp_path, skip_install=skip_install,
                            env={"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PATH": path}, action_path=action)
        assert not ran.exists(), ran.read_text()
        assert result.outputs["verdict"] == json.loads(Path(result.outputs["report-path"]).read_text())["verdict"]


def test_workflow_dispatch_of_an_old_merged_pr(upstream, fake, tmp_path: Path) -> None:
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.main_sha, "refs/remotes/origin/main")
    fake.add_pull(3, head_sha=upstream.old_head, base_sha=upstream.old_base_sha, state="closed", merged=True,
                  title="Add rms_norm", head_ref="old-feature")
    result = run_action(with_={"pr-number": "3", "language": "zh"}, token="write-token",
                        event_name="workflow_dispatch", event={"inputs": {"pr-number": "3"}},
                        workspace=workspace, api_url=fake.url, tmp=tmp_path)
    [check] = fake.check_runs.values()
    assert check["head_sha"] == upstream.old_head
    report = json.loads(Path(result.outputs["report-path"]).read_text())
    assert report["pr"]["state"] == "merged" and report["base_sha"] == upstream.old_base_sha
    assert {f["path"] for f in report["findings"]} == {"aiter/ops/norm.py"}
    assert result.outputs["verdict"] == "NEEDS WORK"
    assert check["output"]["summary"].startswith("# PR #3: Add rms\\_norm")
    assert any("merged" in note for note in report["notes"])


def test_fork_pr_with_a_read_only_token(upstream, fake, tmp_path: Path) -> None:
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    result = run_action(with_={}, token="read-token", event_name="pull_request",
                        event=pull_request_event(upstream, fork=True), workspace=workspace, api_url=fake.url,
                        tmp=tmp_path)
    assert fake.check_runs == {} and [r.status for r in fake.requests("POST")] == [403]
    assert "fork PRs a read-only token" in result.log
    commands = [line for line in result.log.splitlines() if re.match(r"::(error|warning|notice) ", line)]
    assert len(commands) == len(json.loads(Path(result.outputs["report-path"]).read_text())["findings"])
    assert result.outputs["check-run-url"] == "" and result.outputs["verdict"] == "BLOCK"
    assert "No check run was posted" in result.summary


def test_github_answering_502_throughout(upstream, fake, tmp_path: Path) -> None:
    fake.inject(502, message="Bad Gateway")
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    result = run_action(with_={}, token="write-token", event_name="pull_request", event=pull_request_event(upstream),
                        workspace=workspace, api_url=fake.url, tmp=tmp_path)
    assert all(step.code == 0 for step in result.steps)
    # The CI classification asks first; once GitHub is judged down, later calls say so without retrying.
    assert "GitHub did not answer when asked to read this commit's check runs" in result.log, result.log
    assert "Bad Gateway" in result.log
    assert "## 🔴 BLOCK — advisory review" in result.summary
    assert json.loads(Path(result.outputs["report-path"]).read_text())["findings"]
    assert {r.status for r in fake.log} == {502}
