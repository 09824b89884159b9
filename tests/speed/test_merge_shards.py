"""Shards of `pr-review stats` merge into the statistics of one run over the whole range."""
from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

from pr_review.cli import main as cli
from pr_review.stats import run_stats
from test_corpus import _history, _without_clock

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "merge_shards.py"
spec = importlib.util.spec_from_file_location("merge_shards", SCRIPT)
merge_shards = importlib.util.module_from_spec(spec)
spec.loader.exec_module(merge_shards)


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> tuple[str, list[Path]]:
    root = tmp_path_factory.mktemp("shards")
    repo = str(_history(root / "repo"))
    paths = []
    for k in (1, 2):
        path = root / f"shard-{k}.json"
        assert cli(["stats", "--repo", repo, "--range", "main", "--jobs", "1", "--shard", f"{k}/2",
                    "--json", str(path)]) == 0
        paths.append(path)
    return repo, paths


def test_merged_shards_give_the_whole_run(shards, tmp_path: Path, capsys):
    repo, paths = shards
    whole = io.StringIO()
    run_stats(repo, "main", whole, jobs=1)
    capsys.readouterr()
    assert merge_shards.main([*map(str, paths), "--output", str(tmp_path / "corpus.json")]) == 0
    merged = capsys.readouterr().out
    assert _without_clock(merged).replace(", 2 shards", "") == _without_clock(whole.getvalue())
    corpus = json.loads((tmp_path / "corpus.json").read_text(encoding="utf-8"))
    assert corpus["shards"] == 2 and len(corpus["rows"]) == 3


def test_each_shard_reviews_its_own_part(shards):
    _, paths = shards
    rows = [[r["sha"] for r in json.loads(p.read_text(encoding="utf-8"))["rows"]] for p in paths]
    assert len(rows[0]) == 2 and len(rows[1]) == 1 and not set(rows[0]) & set(rows[1])


def test_a_missing_shard_or_another_run_is_refused(shards, tmp_path: Path, capsys):
    _, paths = shards
    assert merge_shards.main([str(paths[0])]) == 2
    assert "expected shards 1..N" in capsys.readouterr().err
    other = json.loads(paths[1].read_text(encoding="utf-8"))
    other["range"] = "HEAD~1..HEAD"
    (tmp_path / "other.json").write_text(json.dumps(other), encoding="utf-8")
    assert merge_shards.main([str(paths[0]), str(tmp_path / "other.json")]) == 2
    assert "shards of different runs" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{}", encoding="utf-8")
    assert merge_shards.main([str(tmp_path / "junk.json")]) == 2
    assert "not the JSON of `pr-review stats --json`" in capsys.readouterr().err


def test_the_corpus_workflow_runs_every_shard_of_its_split_and_merges_them():
    import yaml

    workflow = yaml.safe_load((SCRIPT.parents[1] / ".github" / "workflows" / "corpus.yml").read_text(encoding="utf-8"))
    shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(workflow["env"]["SHARDS"]) + 1))
    review = next(s for s in workflow["jobs"]["shard"]["steps"] if "pr-review stats" in s.get("run", ""))
    assert '--shard "$SHARD/$SHARDS"' in review["run"] and "--json" in review["run"]
    merge = next(s for s in workflow["jobs"]["merge"]["steps"] if "merge_shards.py" in s.get("run", ""))
    assert "shards/shard-*.json" in merge["run"]
