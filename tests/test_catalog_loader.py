"""The catalog loader (src/pr_review/catalog.py): what it derives from the data and what it refuses."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pr_review.catalog import load_catalog, load_families
from pr_review.rulesdata import DataError


def test_a_rule_split_from_a_concept_keeps_its_code_and_must_name_a_rule(tmp_path):
    split = load_catalog().rules["removed-api-still-used"]
    assert split.refines == "api-propagation-incomplete"
    assert (split.code_for("aiter"), split.code_for("atom")) == ("B6", "B5")  # the seeds' concept, measured apart
    text = (Path(split.source).read_text().replace("id: removed-api-still-used", "id: own-split")
            .replace("refines: api-propagation-incomplete", "refines: no-such-rule"))
    (tmp_path / "own-split.yml").write_text(text)
    with pytest.raises(DataError, match="refines: 'no-such-rule' is not a rule"):
        load_catalog(extra_dirs=(tmp_path,))


@pytest.mark.parametrize("when", [
    {"added_in": {"path": r"\.py$", "line": "(unclosed"}},
    {"changed_in_def": {"name": "(unclosed"}},
    {"any": [{"path": "ok"}, {"changed_in_def": {"decorator": "[bad"}}]},
])
def test_a_bad_regex_nested_in_a_condition_is_refused(tmp_path, when):
    path = tmp_path / "families.yml"
    path.write_text(yaml.safe_dump({"families": [{"id": "f", "description": "A family with one bad pattern.", "when": when}]}))
    with pytest.raises(DataError, match="bad regex"):
        load_families(path)
