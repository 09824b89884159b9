"""Command line: `pr-review review|demo|rules|explain|stats`."""
from __future__ import annotations

import argparse
import gc
import io
import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TextIO

from . import __version__
from .report.escape import command_safe, terminal_safe


class UsageError(Exception):
    """Unusable arguments; reported as one line with exit status 2."""


class CommandSafeWriter(io.TextIOBase):
    """A text stream that passes on whole lines, each made safe for an Actions log (`command_safe`).
    A line is held until it ends, so a command split across writes is seen whole; on a terminal
    (no runner reads it) `flush` passes on the unfinished line too, for progress bars."""

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self._pending = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.target.encoding

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.target.isatty()

    def fileno(self) -> int:
        return self.target.fileno()

    def write(self, text: str) -> int:
        self._pending += text
        end = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
        if end:
            self.target.write(command_safe(self._pending[:end]))
            self._pending = self._pending[end:]
        return len(text)

    def flush(self) -> None:
        if self._pending and self.target.isatty():
            self.finish()
        self.target.flush()

    def finish(self) -> None:
        """Pass on the unfinished last line, if any."""
        if self._pending:
            self.target.write(command_safe(self._pending))
            self._pending = ""
        self.target.flush()


@contextmanager
def command_safe_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr through CommandSafeWriter for the block: every line the CLI writes
    (reports, messages, library warnings, tracebacks) is safe in an Actions log."""
    saved = sys.stdout, sys.stderr
    streams = CommandSafeWriter(sys.stdout), CommandSafeWriter(sys.stderr)
    sys.stdout, sys.stderr = streams
    try:
        yield
    finally:
        for stream in streams:
            stream.finish()
        sys.stdout, sys.stderr = saved


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got '{text}'")
    return int(text)


def _shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, got '{text}'")
    return int(k), int(n)


COMMANDS = {
    "review": "review HEAD (or --head) against the base branch",
    "demo": "review a throw-away repository with real defects and print the result",
    "rules": "list the rule catalog for a profile",
    "explain": "print one rule in full",
    "stats": "derivation statistics over a range of first-parent commits",
    "ci": "review a GitHub PR with its CI failures classified (token: GITHUB_TOKEN)",
}


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; with `command` (the first argument names it), that command's parser alone:
    argparse looks each parser's messages up in the system's message catalogues (a dozen file
    checks each), and a review parses only its own arguments."""
    parser = argparse.ArgumentParser(prog="pr-review", description="Advisory review of a GPU-kernel pull request.",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"pr-review {__version__}")
    # with one command declared, the usage line of an error still lists them all
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}" if command else None)
    for name, text in COMMANDS.items():
        if command in (None, name):
            ARGUMENTS[name](sub.add_parser(name, help=text, formatter_class=HelpFormatter))
    return parser


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, told the terminal's width: left to find it, it imports shutil (with bz2
    and lzma, ~4 ms of every command's start) for each argument declared."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None,
                 **kwargs) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width, **kwargs)  # as argparse narrows shutil's answer


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS when a positive number, else the width of the
    terminal on standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def _review_arguments(review: argparse.ArgumentParser) -> None:
    review.add_argument("--repo", default=".", help="git repository (default: .)")
    review.add_argument("--base", help="base ref (default: origin/HEAD, else main/master)")
    review.add_argument("--head", default="HEAD", help="head ref (default: HEAD)")
    review.add_argument("--title", default="", help="PR title")
    review.add_argument("--body-file", help="file holding the PR description")
    review.add_argument("--profile", choices=["aiter", "atom", "vllm", "generic"], help="override auto-detection")
    review.add_argument("--format", choices=["text", "markdown", "json", "sarif", "github"], default="text",
                        help="github: escaped workflow commands (annotations) for use inside any workflow")
    review.add_argument("--language", choices=["en", "zh"], default="en", help="Markdown language")
    review.add_argument("--output", help="write the report here instead of stdout")
    review.add_argument("--fail-on", choices=list(SEVERITY_RANK),
                        help="exit 1 when a finding of this severity or above is reported (default: always 0)")
    review.add_argument("-q", "--quiet", action="store_true",
                        help="text format: one line per finding and nothing else")
    review.add_argument("--remote", default="origin",
                        help="remote to fetch a missing base/head from ('none': never fetch, no remote is looked up)")
    review.add_argument("--context-out", metavar="DIR",
                        help="also write the derived rules' full text, evidence and tiers for a reviewer")
    review.add_argument("-v", "--verbose", action="store_true",
                        help="text format: also print the seconds each stage, detector and evidence collector took "
                             "(also when RUNNER_DEBUG=1, GitHub's debug logging)")


def _rules_arguments(rules: argparse.ArgumentParser) -> None:
    rules.add_argument("--profile", choices=["aiter", "atom", "vllm", "generic"], default="aiter")


def _explain_arguments(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("rule_id")
    explain.add_argument("--profile", choices=["aiter", "atom", "vllm", "generic"], default="aiter")


def _stats_arguments(stats: argparse.ArgumentParser) -> None:
    stats.add_argument("--repo", default=".")
    stats.add_argument("--range", dest="rev_range", required=True, help="e.g. HEAD~300..HEAD")
    stats.add_argument("--limit", type=_positive, help="at most this many PRs (newest first)")
    stats.add_argument("--profile", choices=["aiter", "atom", "vllm", "generic"])
    stats.add_argument("--jobs", type=_positive, help="reviews at once (default: every core)")
    stats.add_argument("--shard", type=_shard, default=(1, 1), metavar="K/N",
                       help="review only every Nth PR starting with the Kth (one job of a CI matrix)")
    stats.add_argument("--json", dest="json_out", metavar="FILE",
                       help="also write the per-PR rows here, for scripts/merge_shards.py")
    stats.add_argument("--all-commits", action="store_true",
                       help="count every first-parent commit, not only those whose subject ends in (#N)")


def _ci_arguments(ci: argparse.ArgumentParser) -> None:
    ci.add_argument("--repo", required=True, help="OWNER/NAME on GitHub (API: GITHUB_API_URL)")
    ci.add_argument("--pr", type=int, required=True, help="pull-request number")
    ci.add_argument("--checkout", default=".", help="local clone to fetch the PR's commits into (default: .)")
    ci.add_argument("--workflows", default="", help="comma-separated workflow names or files (default: all)")
    ci.add_argument("--window-hours", type=int, default=48, help="base-branch runs compared, ± hours (default: 48)")
    ci.add_argument("--profile", choices=["aiter", "atom", "vllm", "generic"], help="override auto-detection")
    ci.add_argument("--notify-owners", action="store_true", help="@-mention core-file owners in Markdown")
    ci.add_argument("--format", choices=["text", "markdown", "json", "sarif"], default="text")
    ci.add_argument("--language", choices=["en", "zh"], default="en", help="Markdown language")
    ci.add_argument("--output", help="write the report here instead of stdout")


ARGUMENTS = {"review": _review_arguments, "demo": lambda parser: None, "rules": _rules_arguments,
             "explain": _explain_arguments, "stats": _stats_arguments, "ci": _ci_arguments}


def main(argv: list[str] | None = None) -> int:
    with command_safe_streams():
        try:
            return _main(argv)
        except Exception:  # a bug of ours: its traceback goes through the safe streams too
            import traceback  # only here: with textwrap, it costs every review a millisecond

            traceback.print_exc()
            return 1


def _main(argv: list[str] | None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `pr-review rules | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    given = sys.argv[1:] if argv is None else argv
    parser = _parser(given[0] if given and given[0] in COMMANDS else None)
    try:
        args = parser.parse_args(given)
    except SystemExit as exc:  # argparse already printed a one-line usage error
        return 2 if exc.code else 0
    try:
        if args.command in ("review", "ci", "demo", "stats") and not on_path("git"):
            raise UsageError("git is not installed or not on PATH; it is needed to read the repository")
        if args.command == "review":
            return _review(args)
        if args.command == "ci":
            return _ci(args)
        if args.command == "demo":
            from .demo import run_demo
            return run_demo(sys.stdout)
        if args.command == "rules":
            return _rules(args)
        if args.command == "explain":
            return _explain(args)
        if args.command == "stats":
            from .git import GitError, Repo
            from .stats import run_stats
            try:
                Repo.open(args.repo)
            except GitError as exc:
                raise UsageError(str(exc)) from exc
            return run_stats(args.repo, args.rev_range, sys.stdout, args.limit, args.profile, not args.all_commits,
                             args.jobs, args.shard, args.json_out)
    except UsageError as exc:  # one line, whatever the message quotes (a git error, a path)
        print(f"pr-review: {terminal_safe(' '.join(str(exc).splitlines()))}", file=sys.stderr)
        return 2
    return 2


def on_path(program: str) -> bool:
    """Whether `program` is an executable file in a $PATH directory, as `shutil.which` answers on POSIX:
    shutil brings bz2, lzma and fnmatch with it, 3 ms of every review for this one question."""
    if os.name == "nt":  # PATHEXT and the current directory: shutil's to answer
        import shutil
        return shutil.which(program) is not None
    return any(os.access(candidate := os.path.join(directory or ".", program), os.X_OK) and os.path.isfile(candidate)
               for directory in os.get_exec_path())


def _review(args: argparse.Namespace) -> int:
    # One process, one review: the cycle collector would walk the imported modules and then every
    # parsed tree again and again (the review pauses it too, for callers that review many PRs), and at
    # exit once more; the process frees nothing it still needs by ending.
    gc.disable()
    try:
        return _review_once(args)
    finally:
        gc.freeze()  # what is alive at exit is not walked by the interpreter's last collection either


def _review_once(args: argparse.Namespace) -> int:
    from .git import GitError
    from .model import PRInfo
    from .pipeline import ReviewRequest, review
    from .rulesdata import DataError

    if not Path(args.repo).is_dir():
        raise UsageError(f"--repo {args.repo}: no such directory")
    body = ""
    if args.body_file:
        try:
            body = Path(args.body_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"--body-file {args.body_file}: {exc.strerror}") from exc
    request = ReviewRequest(repo_dir=args.repo, base=args.base, head=args.head,
                            pr=PRInfo(title=args.title, body=body), profile=args.profile,
                            remote=None if args.remote == "none" else args.remote)
    try:
        report = review(request)
    except GitError as exc:
        raise UsageError(str(exc)) from exc
    except DataError as exc:
        print(f"pr-review: the rule data is broken: {exc}", file=sys.stderr)
        return 2
    if args.context_out:
        from .catalog import load_catalog
        from .report.context import write_context
        try:
            write_context(report, load_catalog(), Path(args.context_out))
        except OSError as exc:
            raise UsageError(f"--context-out {args.context_out}: cannot be written ({exc.strerror})") from exc
    if args.quiet and args.format == "text":
        from .model import SEVERITY_ICON
        text = "".join(terminal_safe(f"{f.location}: {SEVERITY_ICON[f.severity or 'medium']} {f.title} [{f.tag}] "
                                     f"({f.code})") + "\n" for f in report.findings)
    else:
        verbose = args.verbose or os.environ.get("RUNNER_DEBUG") == "1"
        text = render(report, args.format, args.language, color=args.output is None and sys.stdout.isatty(),
                      verbose=verbose)
    _emit(text, args.output, commands=args.format == "github")
    return failing_exit(report.findings, args.fail_on)


SEVERITY_RANK = {"low": 1, "medium": 2, "high": 3}


def failing_exit(findings: list, fail_on: str | None) -> int:
    """1 when `--fail-on` is given and a finding reaches that severity (ruff's and semgrep's opt-in), else 0:
    by default the review is advisory."""
    if fail_on and any(SEVERITY_RANK[f.severity or "medium"] >= SEVERITY_RANK[fail_on] for f in findings):
        return 1
    return 0


def _emit(text: str, output: str | None, commands: bool = False) -> None:
    """The report to `output`, else to stdout; an `output` that cannot be written is a usage error.
    `commands`: the text is our own escaped workflow commands (`--format github`), which must reach the
    runner as commands, so it bypasses the stdout wrapper that disables every other `::` line."""
    if not output:
        if commands:
            sys.stdout.flush()
            sys.__stdout__.write(text)
            sys.__stdout__.flush()
            return
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--output {output}: cannot be written ({exc.strerror})") from exc


def _ci(args: argparse.Namespace) -> int:
    from .ci.command import CIArgs, CIUsageError, classify_pr

    try:
        report = classify_pr(CIArgs(args.repo, args.pr, args.checkout,
                                    tuple(w.strip() for w in args.workflows.split(",") if w.strip()),
                                    args.window_hours, args.profile, args.notify_owners))
    except CIUsageError as exc:
        raise UsageError(str(exc)) from exc
    _emit(render(report, args.format, args.language, color=args.output is None and sys.stdout.isatty()),
          args.output)
    return 0


def render(report, fmt: str, language: str = "en", color: bool = False, verbose: bool = False) -> str:
    from .catalog import load_catalog
    from .report.render import render_json, render_markdown, render_text
    from .report.sarif import render_sarif

    if fmt == "json":
        return render_json(report)
    if fmt == "markdown":
        return render_markdown(report, language)
    if fmt == "sarif":
        return render_sarif(report, load_catalog())
    if fmt == "github":
        return render_github(report, language)
    return render_text(report, color=color and not os.environ.get("NO_COLOR"), verbose=verbose)


def render_github(report, language: str = "en") -> str:
    """Workflow commands: one annotation per finding, as many as the runner shows (10 per level and step),
    then a notice with the verdict and what was left out."""
    from .github.commands import annotation_commands, command

    lines, left_out = annotation_commands(report.findings, language, len(report.findings))
    counts = report.counts()
    summary = (f"{report.verdict} (advisory): {counts['high']} high, {counts['medium']} medium, {counts['low']} low"
               + (f"; {left_out} more not annotated (the runner shows 10 per level and step)" if left_out else ""))
    return "".join(line + "\n" for line in lines) + command("notice", summary, title="pr-review") + "\n"


def _rules(args: argparse.Namespace) -> int:
    from .catalog import load_catalog
    from .profiles import load_profiles

    catalog = load_catalog()
    profile = load_profiles()[args.profile]
    for rule in sorted(catalog.rules.values(), key=lambda r: (r.group, r.id)):
        if rule.applies_to(profile.name):
            code = rule.code_for(profile.name, profile.code_fallback)
            stage = "stable" if rule.annotates_in(profile.name) else "preview"
            print(f"{rule.id:34} {code:6} {rule.severity:6} {stage:7} {rule.title}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from .catalog import load_catalog
    from .profiles import load_profiles

    catalog = load_catalog()
    profile = load_profiles()[args.profile]
    rule = catalog.rules.get(args.rule_id)
    if rule is None:  # a display code is looked up in the chosen profile's numbering
        by_code = [r for r in catalog.rules.values()
                   if r.code_for(profile.name, profile.code_fallback) == args.rule_id]
        # a rule that refines a concept is shown under the concept's code: the code names the concept
        by_code = [r for r in by_code if not r.refines] or by_code
        if len(by_code) != 1:
            raise UsageError(f"no rule '{args.rule_id}' in profile {profile.name} (see `pr-review rules`)")
        rule = by_code[0]
    from .report.context import format_rule

    print(format_rule(rule, rule.code_for(profile.name, profile.code_fallback)))
    return 0

