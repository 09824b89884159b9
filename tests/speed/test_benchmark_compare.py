"""The benchmark's findings comparison: against a saved baseline or the other engine's rows."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "benchmark.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmark"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_rows_compare_finding_by_finding_whatever_their_order(tmp_path: Path):
    bench = _benchmark()
    one = {"rule": "r", "path": "a.py", "line": 3, "severity": "high", "problem": "p"}
    two = {**one, "line": 9}
    earlier = [{"sha": "a" * 40, "findings": [one, two]}, {"sha": "b" * 40, "error": "boom"}]
    path = tmp_path / "base.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in earlier), encoding="utf-8")
    assert bench.load_rows(str(path)) == earlier
    same = [{"sha": "a" * 40, "findings": [two, one]}, {"sha": "b" * 40, "error": "boom"}]
    assert bench.compare(same, earlier) == []
    moved = [{"sha": "a" * 40, "findings": [one]}, {"sha": "b" * 40, "findings": []}, {"sha": "c" * 40, "findings": []}]
    diffs = bench.compare(moved, earlier)
    assert diffs[0].startswith("aaaaaaaaaa: - ") and '"line": 9' in diffs[0]
    assert diffs[1] == "bbbbbbbbbb: failed before: boom" and diffs[2] == "cccccccccc: not in the baseline"


def test_the_setup_wrapper_reviews_as_python_m_does(tmp_path: Path):
    from conftest import git, make_repo

    bench = _benchmark()
    repo = make_repo(tmp_path / "repo", {"a.py": "import os\n"},
                     {"a.py": "import os\nos.environ.get('AITER_NEW_FLAG')\n"})
    sha = git(repo, "rev-parse", "pr").strip()
    commit = bench.Commit(sha, "add a flag")
    plain, wrapped = (bench.review_one(str(repo), commit, None, None, setup) for setup in (False, True))
    assert "error" not in plain and "error" not in wrapped
    assert wrapped["findings"] == plain["findings"] and wrapped["derived"] == plain["derived"]
    assert "setup_cpu" in wrapped and "setup_cpu" not in plain


def test_repeated_runs_are_passes_that_keep_each_engines_least_cpu_and_alternate_who_goes_first(monkeypatch):
    bench = _benchmark()
    runs: list[tuple[str, str | None]] = []
    cpu = {("a", "old"): iter([9.9, 0.9, 0.5, 0.7]), ("a", "new"): iter([9.9, 0.4, 0.6, 0.3]),  # warm-up first
           ("b", "old"): iter([1.0, 1.0, 1.0]), ("b", "new"): iter([2.0, 2.0, 2.0])}

    def review_one(repo, commit, profile, engine, setup=False):
        runs.append((commit.sha, engine))
        if commit.sha == "c":
            return {"sha": "c", "cpu": 0.1, "error": "exit 1: boom"}
        return {"sha": commit.sha, "cpu": next(cpu[commit.sha, engine]), "findings": []}

    monkeypatch.setattr(bench, "review_one", review_one)
    commits = [bench.Commit("a", "s"), bench.Commit("b", "s"), bench.Commit("c", "s")]
    old, new = bench.run_all("repo", commits, None, 1, ["old", "new"], repeat=3)
    assert [r["cpu"] for r in old[:2]] == [0.5, 1.0] and [r["cpu"] for r in new[:2]] == [0.3, 2.0]
    assert "error" in old[2] and "error" in new[2]
    timed = [r for r in runs[2:] if r[0] == "a"]  # after the two untimed warm-up runs
    assert timed == [("a", "old"), ("a", "new"), ("a", "new"), ("a", "old"), ("a", "old"), ("a", "new")]
    assert runs.count(("c", "old")) == runs.count(("c", "new")) == 1  # a failure is not run again
    # one pass over the commits per run, every other pass in reverse: a slow spell of the machine
    # weighs on one pass, not on every run of the commits it lasts through
    assert "".join(sha for sha, _ in runs[2:]) == "aabbcc" + "bbaa" + "aabb"


def test_a_run_prints_the_machine_speed_before_and_after_its_reviews(tmp_path: Path, monkeypatch, capsys):
    """Figures taken at different times on a shared machine compare only beside its speed then."""
    from conftest import make_repo

    bench = _benchmark()
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    speeds = iter([0.25, 0.5])
    monkeypatch.setattr(bench, "machine_seconds", lambda: next(speeds))
    monkeypatch.setattr(sys, "argv", ["benchmark.py", "--repo", str(repo), "--rev", "pr", "--count", "1", "--jobs", "1"])
    assert bench.main() == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"machine: `{bench.CALIBRATION}` cost 0.250 s CPU before the reviews, 0.500 s after "
                      "(runs taken at different times compare only beside it)")
    assert out[1] == f"Python {sys.version.split()[0]} ({sys.executable}), engine as installed"
    assert out[2].startswith("1 recent commits, CPU s: p50 ")


def test_the_machine_speed_is_printed_before_every_pass(tmp_path: Path, monkeypatch, capsys):
    """A slow spell can last through a pass: the speed before each says which passes ran in one."""
    from conftest import make_repo

    bench = _benchmark()
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    speeds = iter([0.3, 0.2, 0.25])
    monkeypatch.setattr(bench, "machine_seconds", lambda: next(speeds))
    monkeypatch.setattr(sys, "argv", ["benchmark.py", "--repo", str(repo), "--rev", "pr", "--count", "1", "--jobs", "1",
                                      "--repeat", "2"])
    assert bench.main() == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"machine: `{bench.CALIBRATION}` cost 0.300 s CPU before pass 1, 0.200 s before pass 2, 0.250 s after "
        "(runs taken at different times compare only beside it)")


def test_the_machine_speed_is_the_least_cpu_of_children_running_the_fixed_loop(monkeypatch):
    bench = _benchmark()
    seen: list[list[str]] = []
    printed = iter(["0.4\n", "0.3\n", "0.35\n"])

    class Done:
        def __init__(self, argv):
            seen.append(argv)
            self.stdout = next(printed)

    monkeypatch.setattr(bench.subprocess, "run", lambda argv, **kw: Done(argv))
    assert bench.machine_seconds("py") == 0.3
    assert len(seen) == 3 and all(a[:2] == ["py", "-c"] and bench.CALIBRATION in a[2] for a in seen)


def test_the_verdict_counts_the_reviews_it_compared_and_calls_none_identical_when_all_failed():
    bench = _benchmark()
    ok, broken = {"sha": "a" * 40, "findings": []}, {"sha": "b" * 40, "error": "exit 2: the rule data is broken"}
    assert bench.verdict([], [ok, broken], "the baseline") == (
        "findings identical to the baseline on 1 review(s); 1 failed in both runs, not compared")
    assert bench.verdict([], [ok], "--engine's") == "findings identical to --engine's on 1 review(s)"
    assert bench.verdict([], [broken, broken], "--engine's") == "no review succeeded: no findings compared with --engine's"
    assert bench.verdict(["aaaaaaaaaa: - x"], [ok], "the baseline") == "1 difference(s) from the baseline:\naaaaaaaaaa: - x"


def test_one_engine_under_two_interpreters_is_reviewed_back_to_back(tmp_path: Path, monkeypatch, capsys):
    """--against-python alone compares interpreters: the action's Python weighs on every figure."""
    from conftest import make_repo

    bench = _benchmark()
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    seen: list[object] = []
    real = bench.review_one

    def review_one(repo, commit, profile, engine, setup=False):
        seen.append(engine)
        return real(repo, commit, profile, engine, setup)

    monkeypatch.setattr(bench, "review_one", review_one)
    monkeypatch.setattr(bench, "machine_seconds", lambda: 0.25)
    monkeypatch.setattr(sys, "argv", ["benchmark.py", "--repo", str(repo), "--rev", "pr", "--count", "1", "--jobs", "1",
                                      "--engine", "/nowhere/src", "--against-python", sys.executable])
    assert bench.main() == 0  # nothing is under /nowhere: the children import the installed package
    out = capsys.readouterr().out
    assert set(seen) == {bench.Engine(sys.executable, "/nowhere/src")}  # the same engine, twice per commit
    assert f"--against: Python {sys.version.split()[0]} ({sys.executable}), engine /nowhere/src" in out
    assert "findings identical to --engine's on 1 review(s)" in out
