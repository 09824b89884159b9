"""Secrets stay masked (issue 9, class 5): every line of the token is masked, and the token — raw,
Markdown-escaped or URL-encoded — never reaches the log, the job summary, the step outputs,
report.json or the check run, even when GitHub (or a proxy) echoes it in an error message."""
from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))  # the fake GitHub and the action harness
from gh_action import Action, Run, action, no_waiting  # noqa: E402,F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: E402,F401 - pytest fixtures

from pr_review.report.escape import markdown_inline  # noqa: E402

TOKEN = "ghs_S3cret/tok+en_part"
TWO_LINES = "ghs_FirstLineOfIt\nghs_SecondLineOfIt"


def forms(secret: str) -> list[str]:
    """The token as a proxy, a Markdown renderer or a URL would carry it, line by line."""
    parts = [line for line in secret.splitlines() if line] + [secret]
    return sorted({f for part in parts for f in (part, markdown_inline(part), quote(part, safe=""))})


def leaks(action: Action, run: Run, secret: str) -> list[str]:
    """Where a form of `secret` was printed or written, other than the mask commands themselves."""
    places = {"log": "\n".join(line for line in run.stdout.splitlines() if not line.startswith("::add-mask::"))}
    for path in action.tmp.rglob("*"):
        if path.is_file() and ".git" not in path.parts and path.name != "event.json":
            places[str(path.relative_to(action.tmp))] = path.read_text(errors="replace")
    for check in action.fake.check_runs.values():
        places[f"check run {check['id']}"] = repr(check) + repr(action.fake.annotations[check["id"]])
    return sorted(f"{where}: {form!r}" for where, text in places.items() for form in forms(secret) if form in text)


def test_a_token_with_a_newline_is_masked_on_every_line(action: Action) -> None:
    action.fake.tokens[TWO_LINES] = "write"
    run = action(INPUT_GITHUB_TOKEN=TWO_LINES)
    masks = [line for line in run.stdout.splitlines() if line.startswith("::add-mask::")]
    assert "::add-mask::ghs_FirstLineOfIt" in masks and "::add-mask::ghs_SecondLineOfIt" in masks
    assert leaks(action, run, TWO_LINES) == []


@pytest.mark.parametrize("echo", [TOKEN, markdown_inline(TOKEN), quote(TOKEN, safe="")], ids=["raw", "md", "url"])
def test_an_error_echoing_the_token_is_scrubbed_from_every_exit(action: Action, echo: str) -> None:
    action.fake.tokens[TOKEN] = "write"
    action.fake.inject(502, message=f"proxy refused Authorization: token {echo}")
    run = action(INPUT_GITHUB_TOKEN=TOKEN)
    assert run.code == 0 and run.outputs["verdict"] not in ("", "ERROR")  # the review itself still stands
    assert "proxy refused Authorization: token ***" in run.stdout
    assert leaks(action, run, TOKEN) == []


def test_an_error_reading_the_pull_request_is_scrubbed(action: Action) -> None:
    action.fake.tokens[TOKEN] = "write"
    action.fake.inject(404, message=f"no PR for token {TOKEN}")
    action.event_name, action.event = "workflow_dispatch", {"inputs": {"pr-number": "7"}}
    run = action(INPUT_GITHUB_TOKEN=TOKEN, INPUT_PR_NUMBER="7")
    assert run.outputs["verdict"] == "ERROR"
    assert leaks(action, run, TOKEN) == []


def test_text_posted_in_the_check_run_is_scrubbed(action: Action) -> None:
    action.fake.tokens[TOKEN] = "write"
    action.event = action.pull_request(title=f"Speed up quant (token {TOKEN})")
    run = action(INPUT_GITHUB_TOKEN=TOKEN)
    assert len(action.fake.check_runs) == 1
    assert leaks(action, run, TOKEN) == []


def test_what_the_review_prints_is_scrubbed(action: Action, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A library printing the token (a warning on stderr, a debug line on stdout) goes through the scrubber."""
    from pr_review.github import action_main

    review = action_main.review

    def chatty(request):
        print(f"debug: GET with token {TOKEN}")
        print(f"warning: proxy echoed {quote(TOKEN, safe='')}", file=sys.stderr)
        return review(request)

    monkeypatch.setattr(action_main, "review", chatty)
    action.fake.tokens[TOKEN] = "write"
    run = action(INPUT_GITHUB_TOKEN=TOKEN)
    assert "debug: GET with token ***" in run.stdout
    assert "warning: proxy echoed ***" in capsys.readouterr().err
    assert leaks(action, run, TOKEN) == []
