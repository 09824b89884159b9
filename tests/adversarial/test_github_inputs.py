"""Typed inputs (issue 9, class 13): a value `str.isdigit()` accepts but `int()` refuses (²) gets the
one-line input error naming the input, like any other misconfigured input — never a traceback."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))  # the fake GitHub and the action harness
from gh_action import Action, action, no_waiting  # noqa: E402,F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: E402,F401 - pytest fixtures

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name,value", [
    ("INPUT_PR_NUMBER", "²"), ("INPUT_PR_NUMBER", "٣"), ("INPUT_MAX_ANNOTATIONS", "²"),
    ("INPUT_MAX_ANNOTATIONS", "1_000"), ("INPUT_TIME_BUDGET", "²"), ("INPUT_TIME_BUDGET", "0"),
    ("INPUT_TIME_BUDGET", "-5"), ("INPUT_TIME_BUDGET", "nan"), ("INPUT_TIME_BUDGET", "inf"),
    ("INPUT_CI_WINDOW_HOURS", "²"), ("INPUT_WAIT_FOR_CI", "²"),
])
def test_digits_int_refuses_are_an_input_error(action: Action, name: str, value: str) -> None:
    input_name = name.removeprefix("INPUT_").lower().replace("_", "-")
    run = action(**{name: value})
    assert run.code == 1
    [line] = [line for line in run.stdout.splitlines() if not line.startswith("::add-mask::")]
    assert line.startswith("::error title=pr-review%3A misconfigured input::")
    assert f"input {input_name}: '{value}'" in line and "Traceback" not in run.stdout
    assert action.fake.log == []


def test_time_budget_is_an_input_of_the_action() -> None:
    meta = yaml.safe_load((ROOT / "action.yml").read_text())
    assert meta["inputs"]["time-budget"]["default"] == "10"
    [review] = [step for step in meta["runs"]["steps"] if step.get("id") == "review"]
    assert review["env"]["INPUT_TIME_BUDGET"] == "${{ inputs.time-budget }}"


def test_a_ci_wait_longer_than_the_budget_is_an_input_error(action: Action) -> None:
    run = action(INPUT_WAIT_FOR_CI="9", INPUT_TIME_BUDGET="10")
    assert run.code == 1 and "input wait-for-ci: 9 minutes do not fit in the review's share of time-budget " \
        "(8 of 10 minutes); raise time-budget" in run.stdout
    assert action(INPUT_WAIT_FOR_CI="9", INPUT_TIME_BUDGET="12").code == 0
