#!/usr/bin/env python3
"""Review first-parent commits of a repository as PRs (parent..commit), one whole process each,
and report the CPU time each review costs.

    python scripts/benchmark.py --repo /tmp/aiter --count 60 --largest 5 --jsonl before.jsonl \
        --engine /tmp/old-checkout/src        # an older engine, as the baseline
    python scripts/benchmark.py --repo /tmp/aiter --count 60 --largest 5 --jsonl after.jsonl \
        --baseline before.jsonl              # the installed engine, compared with it
    python scripts/benchmark.py --repo /tmp/aiter --count 60 --largest 5 \
        --engine /tmp/old/src --against /tmp/new/src   # both, back to back per commit
    python scripts/benchmark.py --repo /tmp/aiter --count 60 --largest 5 \
        --python python3.11 --against-python python3.12   # one engine under two interpreters

Each review runs `python -m pr_review review --format json` in its own process; its CPU time is
the child's user + sys (not its waiting; a loaded machine still inflates it by a fifth or more,
shared caches and cores: compare two engines with --against, which reviews each commit with both
back to back, rather than runs taken at different times, and --repeat N keeps each review's least
CPU of N runs, one per pass over the commits), its memory the child's peak RSS. The machine's own speed is printed beside the
figures (a fixed Python loop's CPU before each pass and after the reviews). Reviews run in parallel (`--jobs`,
default: every core). Prints p50/p95/max CPU seconds over the last `--count` commits and per commit
for the `--largest` commits by changed lines among the last `--largest-of`. With --jsonl, writes one row per
review (times, findings — annotated and preview —, derived rules, notes, per-step timings); with
--baseline, compares findings against such a file and prints every difference. With --setup,
also the CPU each review spends outside the pipeline's stages: interpreter start, imports, argument
parsing and output (the catalog load is in the context stage, the detector imports in theirs).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from pr_review.progress import Progress


@dataclass(frozen=True)
class Engine:
    """What reviews: an interpreter (it runs the action, so its version weighs on every figure) and the
    pr_review package under `src`, a checkout's src/ (None: the one that interpreter has installed)."""

    python: str = sys.executable
    src: str | None = None

    def describe(self) -> str:
        version = subprocess.run([self.python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip() or "?"
        return f"Python {version} ({self.python}), engine {self.src or 'as installed'}"


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    largest: bool = False  # one of the largest by changed lines, reported one by one


def first_parent_log(repo: str, rev: str, count: int, *extra: str) -> str:
    return subprocess.run(["git", "-C", repo, "log", "--first-parent", f"-{count}", *extra, rev],
                          check=True, capture_output=True, text=True, errors="replace").stdout


def recent_commits(repo: str, rev: str, count: int) -> list[Commit]:
    out = first_parent_log(repo, rev, count, "--format=%H%x09%s")
    return [Commit(*line.split("\t", 1)) for line in out.splitlines() if "\t" in line]


def largest_commits(repo: str, rev: str, among: int, keep: int) -> list[Commit]:
    """The `keep` commits with the most changed lines (against the first parent) of the last `among`."""
    out = first_parent_log(repo, rev, among, "--diff-merges=first-parent", "--numstat", "--format=@%H%x09%s")
    sizes: dict[Commit, int] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("@"):
            current = Commit(*line[1:].split("\t", 1), largest=True)
            sizes[current] = 0
        elif current is not None and line.count("\t") >= 2:
            added, removed = line.split("\t")[:2]
            sizes[current] += (int(added) if added.isdigit() else 0) + (int(removed) if removed.isdigit() else 0)
    return sorted(sizes, key=lambda c: -sizes[c])[:keep]


def child_environment(engine: str | None) -> dict[str, str]:
    """Children byte-compile into a private cache, as an installed package is: without it (say
    PYTHONDONTWRITEBYTECODE=1 in the caller's environment) every review would compile every
    module from source and measure that instead. `engine` (a checkout's src/) goes first on the
    children's path, to measure another version of the engine."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir(), "pr-review-benchmark-pycache"))
    if engine:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (engine, env.get("PYTHONPATH")) if p)
    return env


# Runs `python -m pr_review ARGS` as -m does, and writes to the file named by $PR_REVIEW_STAGES_CPU
# the CPU time (its own and its children's, git's) spent inside the pipeline's stages: the rest of
# the child's CPU is the review's fixed cost (interpreter start, imports, argument parsing, output).
STAGES_CPU = """
import atexit, gc, os, resource, runpy, sys
from contextlib import contextmanager
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
gc.disable()  # as `review` does before it imports the pipeline
import pr_review.pipeline as pipeline
inside, stage = [0.0], pipeline.Timer.stage.__wrapped__
@contextmanager
def timed(self, name):
    start = cpu()
    try:
        with contextmanager(stage)(self, name):
            yield
    finally:
        inside[0] += cpu() - start
pipeline.Timer.stage = timed
atexit.register(lambda: open(os.environ["PR_REVIEW_STAGES_CPU"], "w").write(str(inside[0])))
sys.argv[0] = "pr_review"
runpy.run_module("pr_review", run_name="__main__", alter_sys=True)
"""


def review_one(repo: str, commit: Commit, profile: str | None, engine: Engine | None, setup: bool = False) -> dict:
    """One whole-process review; the row holds its CPU time, peak RSS and findings, or its error. With
    `setup`, also the CPU time spent outside the pipeline's stages (`STAGES_CPU`)."""
    engine = engine or Engine()
    cmd = [engine.python, *(["-c", STAGES_CPU] if setup else ["-m", "pr_review"]), "review", "--repo", repo,
           "--base", f"{commit.sha}^1", "--head", commit.sha, "--title", commit.subject, "--format", "json",
           "--remote", "none"]
    if profile:
        cmd += ["--profile", profile]
    row: dict = {"sha": commit.sha, "subject": commit.subject, "largest": commit.largest}
    env = child_environment(engine.src)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".cpu") as stages:
        env["PR_REVIEW_STAGES_CPU"] = stages.name
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        # wait4 rather than wait(): it returns this child's own resource usage
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        row["wall"] = round(time.perf_counter() - start, 3)
        row["cpu"] = round(usage.ru_utime + usage.ru_stime, 3)
        row["rss_mb"] = round(usage.ru_maxrss / 1024, 1)
        inside = stages.read()
        if setup and inside:
            row["setup_cpu"] = round(row["cpu"] - float(inside), 3)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode("utf-8", "replace")
    if child.returncode != 0:
        row["error"] = f"exit {child.returncode}: {stderr.strip()[-500:]}"
        return row
    try:
        report = json.loads(stdout)
    except ValueError as exc:
        row["error"] = f"output is not JSON: {exc}"
        return row
    row.update({
        "files": report["stats"]["files"], "families": report["stats"]["families"],
        "derived": [c["rule"] for c in report["checklist"]],
        "findings": sorted(
            ({"rule": f["rule"], "path": f["path"], "line": f["line"], "severity": f["severity"],
              "problem": f["problem"]} for f in report["findings"] + report.get("preview_findings", [])),
            key=lambda f: (f["path"], f["line"] or 0, f["rule"], f["problem"])),
        "not_checked": len(report["not_checked"]),
        "notes": report["notes"],
        "timings": report.get("timings", {}), "step_timings": report.get("step_timings", {}),
        "broken": [n for n in report["notes"] if n.startswith(("detector ", "evidence ")) and "failed" in n],
    })
    return row


def run_all(repo: str, commits: list[Commit], profile: str | None, jobs: int,
            engines: list[Engine], setup: bool = False, repeat: int = 1,
            speeds: list[float] | None = None) -> list[list[dict]]:
    """Rows per engine, in commit order. With two engines each commit is reviewed by both back to
    back, which one goes first alternating, so the machine's load weighs on both alike. With
    `repeat`, every commit is reviewed that many times, in as many passes over the list (every other
    pass in reverse order), and each review keeps its run of least CPU: load only ever adds to a
    review's CPU, and a machine its neighbours slow for minutes at a time slows one pass, where runs
    taken back to back would all land in the slow minutes. `speeds`, when given, gets the machine's speed
    (`machine_seconds`) before each pass, to tell a pass run in a slow spell from one run in a quiet one."""
    best: dict[tuple[int, int], dict] = {}  # (commit, engine) → the run of least CPU so far
    progress = Progress(len(commits) * repeat)
    for engine in engines:
        review_one(repo, commits[0], profile, engine)  # untimed: fills the byte-code cache

    def both(i: int, run: int) -> dict[int, dict]:
        order = range(len(engines)) if (i + run) % 2 == 0 else reversed(range(len(engines)))
        # a review that failed fails again: once is enough
        return {k: review_one(repo, commits[i], profile, engines[k], setup) for k in order
                if "error" not in best.get((i, k), {})}
    for run in range(repeat):
        if speeds is not None:
            speeds.append(machine_seconds())
        passed = range(len(commits)) if run % 2 == 0 else reversed(range(len(commits)))
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # threads only wait: the work is in the children
            futures = {pool.submit(both, i, run): i for i in passed}
            for future in as_completed(futures):
                i, by_engine = futures[future], future.result()
                for k, row in by_engine.items():
                    kept = best.get((i, k))
                    if kept is None or "error" in row or row["cpu"] < kept["cpu"]:
                        best[(i, k)] = row
                    if "error" in row and not progress.enabled:
                        print(f"{row['sha'][:10]} FAILED: {row['error']}", file=sys.stderr)
                progress.advance(failed=any("error" in row for row in by_engine.values()))
    return [[best[(i, k)] for i in range(len(commits)) if (i, k) in best] for k in range(len(engines))]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summarize(rows: list[dict]) -> list[str]:
    lines = []
    recent = [r for r in rows if not r["largest"] and "error" not in r]
    if recent:
        cpu = [r["cpu"] for r in recent]
        slowest = max(recent, key=lambda r: r["cpu"])
        lines.append(f"{len(recent)} recent commits, CPU s: p50 {statistics.median(cpu):.2f}  "
                     f"p95 {percentile(cpu, 0.95):.2f}  max {slowest['cpu']:.2f} ({slowest['sha'][:10]})  "
                     f"mean {statistics.mean(cpu):.2f}")
        lines.append(f"  wall s (noisy on a shared machine): p50 {statistics.median(r['wall'] for r in recent):.2f}  "
                     f"peak RSS {max(r['rss_mb'] for r in recent):.0f} MB")
        setup = [r["setup_cpu"] for r in recent if "setup_cpu" in r]
        if setup:
            lines.append(f"  CPU s outside the stages (start, imports, arguments, output): p50 {statistics.median(setup):.3f}  "
                         f"p95 {percentile(setup, 0.95):.3f}")
    for r in rows:
        if r["largest"] and "error" not in r:
            lines.append(f"largest {r['sha'][:10]}: {r['cpu']:.2f} s CPU, {r['rss_mb']:.0f} MB, "
                         f"{r['files']} files — {r['subject'][:60]}")
    failed = [r for r in rows if "error" in r]
    if failed:
        lines.append(f"{len(failed)} review(s) failed: " + ", ".join(r["sha"][:10] for r in failed))
    broken = sum(len(r.get("broken", [])) for r in rows)
    if broken:
        lines.append(f"WARNING: {broken} detector/evidence failure(s); see the notes in --jsonl output")
    return lines


# A fixed pure-Python workload, timed in a child before and after the reviews: a shared machine's speed
# drifts by a third over hours, so figures taken at different times compare only beside it.
CALIBRATION = "sum(i * i for i in range(3_000_000))"


def machine_seconds(python: str = sys.executable, runs: int = 3) -> float:
    """The least CPU seconds of `runs` children running CALIBRATION."""
    code = f"import time; t = time.process_time(); {CALIBRATION}; print(time.process_time() - t)"
    return min(float(subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout)
               for _ in range(runs))


def load_rows(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def compare(rows: list[dict], earlier: list[dict]) -> list[str]:
    """Every difference in findings (and failures) between this run and earlier rows (a saved --jsonl
    baseline, or the --engine rows of a run --against another engine)."""
    baseline = {row["sha"]: row for row in earlier}
    diffs = []
    for row in rows:
        before = baseline.get(row["sha"])
        if before is None:
            diffs.append(f"{row['sha'][:10]}: not in the baseline")
            continue
        if ("error" in before) != ("error" in row):
            diffs.append(f"{row['sha'][:10]}: failed {'before' if 'error' in before else 'now'}: "
                         f"{before.get('error') or row.get('error')}")
            continue
        if "error" in row:
            continue
        old = {json.dumps(f, sort_keys=True) for f in before["findings"]}
        new = {json.dumps(f, sort_keys=True) for f in row["findings"]}
        for f in sorted(old - new):
            diffs.append(f"{row['sha'][:10]}: - {f}")
        for f in sorted(new - old):
            diffs.append(f"{row['sha'][:10]}: + {f}")
    return diffs


def verdict(diffs: list[str], rows: list[dict], earlier: str) -> str:
    """The comparison's one-line outcome, saying how many reviews it compared: two runs that both
    failed every review (a broken engine snapshot, say) hold no findings to call identical."""
    if diffs:
        return f"{len(diffs)} difference(s) from {earlier}:\n" + "\n".join(diffs)
    compared = sum("error" not in r for r in rows)
    if not compared:
        return f"no review succeeded: no findings compared with {earlier}"
    failed = len(rows) - compared
    return (f"findings identical to {earlier} on {compared} review(s)"
            + (f"; {failed} failed in both runs, not compared" if failed else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--rev", default="HEAD", help="where the first-parent history starts (default HEAD)")
    parser.add_argument("--count", type=int, default=60, help="review the last N first-parent commits")
    parser.add_argument("--largest", type=int, default=0, help="also review the N largest by changed lines …")
    parser.add_argument("--largest-of", type=int, default=300, help="… among the last M first-parent commits")
    parser.add_argument("--profile")
    parser.add_argument("--engine", metavar="SRC", help="review with the pr_review package under SRC (e.g. an older "
                        "checkout's src/) instead of the installed one")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="reviews at once (default: all cores)")
    parser.add_argument("--jsonl", help="write one row per review here (a baseline for --baseline)")
    parser.add_argument("--baseline", help="compare findings with this earlier --jsonl and print differences")
    parser.add_argument("--against", metavar="SRC", help="also review each commit with the package under SRC, back "
                        "to back with --engine, and compare the two (CPU figures from one run share its load)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs the reviews (default: "
                        "this one; the action installs 3.11 unless its python-version says otherwise)")
    parser.add_argument("--against-python", metavar="PYTHON", help="the interpreter for --against (default: --python); "
                        "without --against, compares --engine under the two interpreters")
    parser.add_argument("--against-jsonl", help="write the --against engine's rows here, as --jsonl does --engine's")
    parser.add_argument("--setup", action="store_true", help="also measure the CPU time each review spends outside "
                        "the pipeline's stages (the children run pr_review through a small wrapper that times them)")
    parser.add_argument("--repeat", type=int, default=1, help="review each commit N times, in N passes over the "
                        "commits (per engine, interleaved), and keep the run of least CPU: on a shared machine the "
                        "least of 3-5 runs is the stable figure")
    args = parser.parse_args()

    commits = recent_commits(args.repo, args.rev, args.count)
    if args.largest:
        seen = {c.sha for c in commits}
        commits += [c for c in largest_commits(args.repo, args.rev, args.largest_of, args.largest) if c.sha not in seen]
    engines = [Engine(args.python, args.engine)]
    if args.against or args.against_python:
        engines.append(Engine(args.against_python or args.python, args.against or args.engine))
    speeds: list[float] = []
    runs = run_all(args.repo, commits, args.profile, max(1, args.jobs), engines, args.setup, max(1, args.repeat), speeds)
    before = f"{speeds[0]:.3f} s CPU before the reviews" if len(speeds) == 1 else \
        ", ".join(f"{speed:.3f} s{' CPU' if i == 0 else ''} before pass {i + 1}" for i, speed in enumerate(speeds))
    print(f"machine: `{CALIBRATION}` cost {before}, {machine_seconds():.3f} s after "
          "(runs taken at different times compare only beside it)")
    rows = runs[0]
    print(engines[0].describe())
    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as sink:
            sink.writelines(json.dumps(r) + "\n" for r in rows)
    print("\n".join(summarize(rows)))
    if args.baseline:
        print(verdict(compare(rows, load_rows(args.baseline)), rows, "the baseline"))
    if len(engines) > 1:
        other = runs[1]
        if args.against_jsonl:
            with open(args.against_jsonl, "w", encoding="utf-8") as sink:
                sink.writelines(json.dumps(r) + "\n" for r in other)
        print(f"--against: {engines[1].describe()}, reviewed back to back:")
        print("\n".join(summarize(other)))
        ratios = [b["cpu"] / a["cpu"] for a, b in zip(rows, other) if a.get("cpu") and b.get("cpu")]
        if ratios:
            print(f"CPU ratio against/engine per commit: median {statistics.median(ratios):.3f}")
        print(verdict(compare(other, rows), other, "--engine's"))
        rows = rows + other
    return 0 if rows and not any("error" in r for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
