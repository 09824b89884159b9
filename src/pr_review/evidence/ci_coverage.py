"""ci_coverage: whether any CI job will ever run each test file the PR adds.

Reads the head tree's `.github/workflows/*.y*ml` (so a PR that wires its new directory into CI is
judged with that change) and, through them, the shell scripts they execute. Only what executes counts:
`pytest …` paths (minus `--ignore`), `python file.py`, `python -m unittest a.b.c`, and `find DIR
[-maxdepth N] -name 'test_*.py'` in an executed script (the test-split scripts), with `TEST_DIR=…`
assignments resolved through the `if` branch they share with the `find`. A mention in a labelling
or reporting step is not a run. Jobs gated on a PR label, and workflows that only run by hand, are
recorded separately: a test only they reach is reported with that reason. The profile's `test_dirs`
stand in only when no workflow step executes tests (the workflows are the current truth, a profile
list can be stale).
"""
from __future__ import annotations

import re
from typing import Iterator

from ..detectors.base import ReviewInput
from ..model import NotChecked, field, record
from ..rulesdata import load_untrusted_yaml
from . import Artifact, collector
from ._util import is_test_file
from ..lang.regex import lazy_re

SCRIPT = lazy_re(r"""(?:^|[\s"'(=;&|])((?:\./)?[\w.-]+(?:/[\w.-]+)*\.sh)\b""")
PYTEST = lazy_re(r"\bpytest\b((?:[^\n;&|\"']|\"[^\"]*\"|'[^']*')*)")
# `pip install pytest pytest-timeout`: pytest named as a package to install, not run (a Dockerfile's RUN line)
PACKAGE_INSTALL = lazy_re(r"\b(?:pip3?|uv|conda|mamba|micromamba|pipx|poetry|apt(?:-get)?|dnf|yum)\b[^;&|]*\b(?:install|add)\b[^;&|]*$")
PY_FILE = lazy_re(r"\bpython3?(?:\.\d+)?\s+(?:-u\s+)?((?:\./)?[\w.-]+(?:/[\w.-]+)*\.py)\b")
UNITTEST = lazy_re(r"-m\s+unittest\s+((?:(?!-)[\w.]+\s*)+)")
FIND = lazy_re(r"""\bfind\s+(["']?[$\w{}./-]+["']?)([^\n|;)]*)""")
ASSIGN = lazy_re(r"""^\s*(?:export\s+|local\s+)?([A-Za-z_]\w*)=["']?([\w./-]+)["']?\s*(?:#.*)?$""")
COND = lazy_re(r"^\s*(?:if|elif)\b(.*)$")
LABEL_GATE = lazy_re(r"labels|label\.name|contains\([^)]*'ci:|run_\w+_tests")
MAX_SCRIPT_DEPTH = 2
HAND_TRIGGERS = {"workflow_dispatch", "workflow_call", "repository_dispatch"}


@record
class Coverage:
    root: str  # directory ('' = repository root) or exact file
    depth: int | None = None  # None: recursive; 1: files directly in root
    exact: bool = False
    excludes: tuple[str, ...] = ()
    source: str = ""  # the workflow/script line that runs it
    runner: str = "pytest"  # pytest | script (`python file.py`, a test-split `find`) | unittest
    computed: bool = False  # the files come from a variable set at run time (`pytest $TEST_FILES`)

    def covers(self, path: str) -> bool:
        if self.computed:
            return False  # which files a computed list holds is not known statically
        if self.exact:
            return path == self.root
        if any(path == e or path.startswith(e.rstrip("/") + "/") for e in self.excludes):
            return False
        prefix = self.root.rstrip("/") + "/" if self.root else ""
        if not path.startswith(prefix):
            return False
        rest = path[len(prefix):]
        return self.depth is None or rest.count("/") < self.depth


@record
class TestReach:
    path: str
    # run | label-gated | manual-only | unrun | excluded (a CI command leaves it out on purpose)
    # | computed (CI runs pytest on a list it computes at run time: undecided)
    status: str
    reason: str
    runner: str = ""  # how CI runs it, when it does


@record
class CICoverage:
    checked: bool = False
    tests: list[TestReach] = field(default_factory=list)
    runs: list[Coverage] = field(default_factory=list)
    gated: list[Coverage] = field(default_factory=list)
    manual: list[Coverage] = field(default_factory=list)


def _norm_path(token: str) -> str:
    token = token.strip("\"'")
    while token.startswith("./"):
        token = token[2:]
    return token.rstrip("/")


def _lines_of(text: str) -> list[str]:
    return re.sub(r"\\\n\s*", " ", text).splitlines()


def analyse_commands(text: str, source: str, read_script, depth: int = 0) -> list[Coverage]:
    """Coverage declared by shell text that is executed (a workflow `run:` or a script it calls)."""
    out: list[Coverage] = []
    assigns: list[tuple[str, str, str]] = []  # (var, value, branch condition)
    finds: list[tuple[str, str, str]] = []  # (dir token, rest, branch condition)
    cond = ""
    # each pattern runs only on the lines holding the text every match of it holds (a workflow's lines
    # mostly hold none): the patterns' searches were most of this collector's time
    for line in _lines_of(text):
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue
        m = COND.match(line)
        if m:
            cond = m.group(1).strip()
        elif re.match(r"^\s*(fi|else)\b", line):
            cond = ""
        a = ASSIGN.match(line) if "=" in line else None
        if a:
            assigns.append((a.group(1), _norm_path(a.group(2)), cond))
        for m in _pytest_runs(line):
            paths, excludes, unknown = _pytest_args(m.group(1))
            where = f"{source}: {stripped[:100]}"
            if not paths and not unknown:
                out.append(Coverage("", None, False, tuple(excludes), where))
            elif not paths and "${{" in m.group(1):  # the files another step computed: not readable here
                out.append(Coverage("", None, False, tuple(excludes), where, computed=True))
            for p in paths:
                out.append(Coverage(p, None, p.endswith(".py"), tuple(excludes), where))
        for m in PY_FILE.finditer(line) if "python" in line else ():
            out.append(Coverage(_norm_path(m.group(1)), exact=True, source=f"{source}: {stripped[:100]}", runner="script"))
        for m in UNITTEST.finditer(line) if "unittest" in line else ():
            for module in m.group(1).split():
                out.append(Coverage(module.replace(".", "/") + ".py", exact=True, source=f"{source}: {stripped[:100]}",
                                    runner="unittest"))
        for m in FIND.finditer(line) if "find" in line else ():
            finds.append((m.group(1).strip("\"'"), m.group(2), cond))
        if depth < MAX_SCRIPT_DEPTH:
            for m in SCRIPT.finditer(line) if ".sh" in line else ():
                script = _norm_path(m.group(1))
                body = read_script(script)
                if body is not None:
                    out += analyse_commands(body, script, read_script, depth + 1)
    # a test-split script finds the files and runs each one: as scripts unless it hands them to pytest
    runner = "pytest" if finds and any(True for line in _lines_of(text) for _ in _pytest_runs(line)) else "script"
    for token, rest, fcond in finds:
        if not re.search(r"test|\.py", rest) and "test" not in token:
            continue
        md = re.search(r"-maxdepth\s+(\d+)", rest)
        level = int(md.group(1)) if md else None
        var = re.match(r"^\$\{?(\w+)\}?$", token)
        if var:
            values = [v for name, v, c in assigns if name == var.group(1) and c == fcond] or \
                     [v for name, v, _ in assigns if name == var.group(1)]
        else:
            values = [_norm_path(token)]
        for value in values:
            if "$" in value:
                continue
            out.append(Coverage(value if value != "." else "", level, False, (), f"{source}: find {token}{rest[:60]}",
                                runner))
    return out


def _pytest_runs(line: str) -> Iterator[re.Match[str]]:
    """The pytest invocations of one command line: `pytest …` and `python -m pytest …`, not `pip install pytest`."""
    if "pytest" not in line:
        return iter(())
    return (m for m in PYTEST.finditer(line) if not PACKAGE_INSTALL.search(line[:m.start()]))


def _pytest_args(args: str) -> tuple[list[str], list[str], bool]:
    """(paths, --ignore paths, whether some argument is an unresolved variable)."""
    paths: list[str] = []
    excludes: list[str] = []
    unknown = False
    tokens = re.findall(r"\"[^\"]*\"|'[^']*'|\S+", re.sub(r"\$\{\{.*?\}\}", "$EXPR", args))  # an expression: one argument
    skip_next = False
    for i, tok in enumerate(tokens):
        tok = tok.strip("\"'")
        if skip_next:
            skip_next = False
            continue
        if tok.startswith(("--ignore=", "--ignore-glob=")):
            excludes.append(_norm_path(tok.split("=", 1)[1]))
        elif tok in ("--ignore", "--deselect"):
            if i + 1 < len(tokens):
                excludes.append(_norm_path(tokens[i + 1]))
            skip_next = True
        elif tok in ("-k", "-m", "-n", "-p", "--junitxml", "-c", "--rootdir", "--maxfail", "--timeout", "-o",
                     "--durations", "--reruns", "--dist", "--tb", "-W", "--log-level", "--basetemp"):
            skip_next = True
        elif "$" in tok and not tok.startswith("-"):
            unknown = True
        elif tok.startswith("-") or "=" in tok or tok in (">", ">>", "2>&1", "tee"):
            continue
        elif "/" in tok or tok.endswith(".py") or re.match(r"^[\w.-]+$", tok):
            p = _norm_path(tok.split("::", 1)[0])
            if p and p not in ("-v", "-q", "-s", "-x"):
                paths.append(p)
    return paths, excludes, unknown


def _workflows(review: ReviewInput) -> dict[str, dict]:
    """The head's workflow files that parse to a mapping with jobs, by path."""
    import yaml  # here: only a PR that adds a test reads workflow YAML
    docs: dict[str, dict] = {}
    for path in review.source.files("head", (".github/workflows",)):
        text = review.source.text(path) if path.endswith((".yml", ".yaml")) else None
        if text is None:
            continue
        try:
            doc = load_untrusted_yaml(text)  # the PR's own workflow files: bounded
        except yaml.YAMLError as exc:
            review.source.not_checked.append(NotChecked(path, f"workflow not read as YAML: {exc}"))
            continue
        if isinstance(doc, dict) and isinstance(doc.get("jobs"), dict):
            docs[path] = doc
    return docs


def _calls_from_automatic(docs: dict[str, dict]) -> dict[str, bool]:
    """Reusable workflows (`uses: ./.github/workflows/x.yml`) that an automatically triggered workflow calls,
    directly or through other reusable ones: path -> whether every such call is label-gated."""
    called: dict[str, bool] = {}
    frontier = [(path, False) for path, doc in docs.items()
                if not (_triggers(doc) and _triggers(doc) <= HAND_TRIGGERS)]
    while frontier:
        path, caller_gated = frontier.pop()
        for job in docs[path]["jobs"].values():
            uses = job.get("uses") if isinstance(job, dict) else None
            if not isinstance(uses, str) or not uses.startswith("./"):
                continue
            target = uses[2:].split("@", 1)[0]
            gated = caller_gated or bool(LABEL_GATE.search(str(job.get("if", ""))))
            if target in docs and (target not in called or (called[target] and not gated)):
                called[target] = gated if target not in called else called[target] and gated
                frontier.append((target, gated))
    return called


def _triggers(doc: dict) -> set[str]:
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on:` key as True
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return {str(x) for x in on}
    if isinstance(on, dict):
        return {str(k) for k in on}
    return set()


@collector("ci_coverage")
def ci_coverage(review: ReviewInput) -> Artifact:
    new_tests = [f.path for f in review.files
                 if f.status in ("added", "renamed") and f.language == "python" and is_test_file(f.path)
                 and not (f.status == "renamed" and _same_dir(f.old_path or "", f.path))]
    data = CICoverage()
    if not new_tests:
        return Artifact("ci_coverage", ["The PR adds no new test file, so CI reachability was not exercised."], data)
    scripts: dict[str, str | None] = {}

    def read_script(path: str) -> str | None:
        if path not in scripts:
            scripts[path] = review.source.text(path) if "/" in path or review.source.exists(path) else None
        return scripts[path]

    docs = _workflows(review)
    called = _calls_from_automatic(docs)
    for path, doc in docs.items():
        triggers = _triggers(doc)
        by_hand = bool(triggers) and triggers <= HAND_TRIGGERS
        manual = by_hand and path not in called
        for job_name, job in doc["jobs"].items():
            if not isinstance(job, dict):
                continue
            gated = bool(LABEL_GATE.search(str(job.get("if", "")))) or (by_hand and called.get(path, False))
            for step in job.get("steps") or []:
                if not isinstance(step, dict) or not isinstance(step.get("run"), str):
                    continue
                step_gated = gated or bool(LABEL_GATE.search(str(step.get("if", ""))))
                found = analyse_commands(step["run"], f"{path} ({job_name})", read_script)
                (data.gated if step_gated else data.manual if manual else data.runs).extend(found)
    profile_dirs = bool(review.profile.data.get("test_dirs"))
    data.checked = bool(data.runs or data.gated or data.manual or profile_dirs)
    if not data.checked:
        skipped = ("SKIPPED: no workflow in .github/workflows executes tests and the profile lists no CI test "
                   "directories, so reachability cannot be judged.")
        return Artifact("ci_coverage", [skipped], data)
    lines: list[str] = []
    tree_run: dict[str, str] = {}
    for path in new_tests:
        run = next((c for c in data.runs if c.covers(path)), None)
        if run is not None:
            data.tests.append(TestReach(path, "run", run.source, run.runner))
        elif not data.runs and review.profile.ci_runs(path):
            data.tests.append(TestReach(path, "run", f"profile {review.profile.name}: test_dirs"))
        elif (gate := next((c for c in data.gated if c.covers(path)), None)) is not None:
            data.tests.append(TestReach(path, "label-gated", f"runs only when a PR label is set ({gate.source})"))
        elif (hand := next((c for c in data.manual if c.covers(path)), None)) is not None:
            data.tests.append(TestReach(path, "manual-only", f"runs only when the workflow is started by hand ({hand.source})"))
        elif (listed := next((c for c in data.runs if c.computed), None)) is not None:
            reason = (f"CI runs pytest on a list of files it computes at run time ({listed.source}); whether the "
                      "list holds this test is not decided statically")
            data.tests.append(TestReach(path, "computed", reason))
            review.source.not_checked.append(NotChecked(path, f"CI reach: {reason}"))
        else:
            parent = path.rsplit("/", 1)[0] if "/" in path else "."
            excluded = next((c for c in data.runs if not c.exact and _under(path, c.root) and
                             any(path == e or path.startswith(e.rstrip("/") + "/") for e in c.excludes)), None)
            if excluded is not None:
                skip = next(e for e in excluded.excludes if path == e or path.startswith(e.rstrip("/") + "/"))
                reason = f"CI runs `{excluded.root or '.'}` but excludes `{skip}` on purpose ({excluded.source})"
                data.tests.append(TestReach(path, "excluded", reason))
                continue
            root = path.split("/", 1)[0] if "/" in path else ""
            if root and root not in tree_run:
                tree_run[root] = _tests_ci_never_runs(review, data, root, set(new_tests))
            if root and tree_run[root]:
                # the repository runs none of the tests under this tree in CI (developer-run unit tests):
                # a new one there follows the convention, and there is no CI directory to move it to
                data.tests.append(TestReach(path, "excluded", f"{tree_run[root]}; tests there are run by hand"))
                continue
            data.tests.append(TestReach(path, "unrun", f"no workflow job runs tests in `{parent}/`"))
    unrun = [t for t in data.tests if t.status != "run"]
    if not unrun:
        lines.append(f"Every new test file ({len(new_tests)}) lands where a CI job runs it.")
    for t in data.tests:
        if t.status == "run":
            lines.append(f"run: {t.path} — {t.reason}")
        else:
            lines.append(f"UNRUN-TEST: {t.path} — {t.reason}")
    return Artifact("ci_coverage", lines, data)


def _tests_ci_never_runs(review: ReviewInput, data: CICoverage, root: str, new: set[str]) -> str:
    """Why a new test under `root/` follows a convention of tests CI never runs, or "" when CI runs some test
    already under `root/`. A tree with no test yet learns the convention from the whole repository: where CI
    runs none of its tests, a new tree of them is run by hand like the rest (ATOM's first `test/` tree)."""
    def existing(pathspecs: tuple[str, ...]) -> list[str]:
        return [p for p in review.source.files("head", pathspecs)
                if p.endswith(".py") and p not in new and is_test_file(p)]

    tests, where = existing((root,)), f"under `{root}/`"
    if not tests:
        tests, where = existing(()), "anywhere in the repository"
    if not tests or any(c.covers(p) for p in tests for c in data.runs):
        return ""  # nothing to learn the convention from, or CI runs some: judge the new test on its own
    return f"CI runs no existing test {where} either"


def _under(path: str, root: str) -> bool:
    return not root or path.startswith(root.rstrip("/") + "/")


def _same_dir(a: str, b: str) -> bool:
    return a.rsplit("/", 1)[0] == b.rsplit("/", 1)[0]
