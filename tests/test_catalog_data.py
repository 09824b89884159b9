"""Data tests for the rule catalog (rules/catalog/<group>/<id>.yml) and rules/families.yml.

These read the YAML files directly (yaml.safe_load + jsonschema) so they pin the data contract
independently of the loader in src/. Fixtures are tested elsewhere.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from jsonschema import Draft202012Validator

from design_concepts import DESIGN_CONCEPTS

ROOT = Path(__file__).resolve().parents[1]
RULES_DIR = ROOT / "rules"
CATALOG_DIR = RULES_DIR / "catalog"
FAMILIES_FILE = RULES_DIR / "families.yml"
SCHEMA_DIR = RULES_DIR / "schema"
PROFILE_NAMES = ("aiter", "atom", "vllm", "generic")


# Display codes the design table fixes for a concept (aiter / ATOM columns of design.md §5).
DESIGN_CODES = {
    "api-propagation-incomplete": {"aiter": "B6", "atom": "B5"},
    "unmasked-triton-access": {"aiter": "B2"},
    "phase-size-proxy": {"atom": "B2"},
    "cudagraph-capture-break": {"atom": "B3"},
    "new-dispatch-value-unhandled": {"aiter": "B4", "atom": "B6"},
    "constexpr-check-disabled": {"aiter": "B5", "atom": "B4"},
    "fnuz-by-arch-name": {"aiter": "C1", "atom": "C2"},
    "dtype-hardcoded": {"aiter": "C3", "atom": "C1"},
    "arch-literal-in-dispatch": {"aiter": "C4", "atom": "C3"},
    "conditional-binding": {"aiter": "D1b", "atom": "D1b"},
    "hipblaslt-in-tuning-config": {"aiter": "D3"},
    "defaulted-param-dead": {"aiter": "E2", "atom": "E3"},
    "plugin-bridge-stale": {"aiter": "E3", "atom": "E2"},
    "queue-get-no-timeout": {"aiter": "G1b", "atom": "G1b"},
    "bugfix-without-test": {"atom": "HK3"},
    "incomplete-code": {"aiter": "HK7", "atom": "HK4"},
    "env-var-knob": {"aiter": "HK9", "atom": "HK5"},
    "new-dependency": {"aiter": "HK11", "atom": "HK7"},
    "uncollectable-test": {"aiter": "HK12b"},
    "perf-unmeasured": {"aiter": "P6"},
}

API_PROPAGATION_SUBTYPES = {"param-discard", "attr-missing", "repr-key", "arch-discard", "dispatch-silent",
                            "path-dropped"}
TEXT_FIELDS = ("title", "summary", "impact", "action", "trigger", "fp_check")


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


RULE_VALIDATOR = _validator("rule")
FAMILIES_VALIDATOR = _validator("families")
RULE_FILES = sorted(CATALOG_DIR.rglob("*.yml"))
RULES = {p: yaml.safe_load(p.read_text(encoding="utf-8")) for p in RULE_FILES}
BY_ID = {d["id"]: d for d in RULES.values() if isinstance(d, dict) and "id" in d}
FAMILIES_DATA = yaml.safe_load(FAMILIES_FILE.read_text(encoding="utf-8"))
FAMILIES = {f["id"]: f for f in (FAMILIES_DATA or {}).get("families", [])}


def _rel(path: Path) -> str:
    return path.relative_to(CATALOG_DIR).as_posix()


def test_catalog_is_not_empty_and_holds_only_yml_rule_files():
    assert RULE_FILES, "no rule files under rules/catalog/"
    stray = [p for p in CATALOG_DIR.rglob("*") if p.is_file() and p.suffix != ".yml"]
    assert not stray, f"non-.yml files in the catalog: {stray}"
    nested = [_rel(p) for p in RULE_FILES if len(p.relative_to(CATALOG_DIR).parts) != 2]
    assert not nested, f"rule files must sit at <group>/<id>.yml: {nested}"


@pytest.mark.parametrize("path", RULE_FILES, ids=_rel)
def test_rule_file_validates_against_schema(path):
    errors = sorted(RULE_VALIDATOR.iter_errors(RULES[path]), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}" for e in errors)


@pytest.mark.parametrize("path", RULE_FILES, ids=_rel)
def test_rule_file_name_is_group_and_id(path):
    data = RULES[path]
    assert _rel(path) == f"{data['group']}/{data['id']}.yml"


@pytest.mark.parametrize("path", RULE_FILES, ids=_rel)
def test_rule_text_is_shaped_for_a_report(path):
    data = RULES[path]
    for field in TEXT_FIELDS:
        assert data[field] == data[field].strip() and "\n" not in data[field], f"{field} must be one trimmed line"
    codes = set(data["codes"].values())
    words = set(re.findall(r"[A-Za-z]+[0-9]+[a-z]?", data["title"]))
    assert not codes & words, f"title names a rule code: {sorted(codes & words)}"
    assert re.search(r"\b(Author must|Reviewer should)\b", data["action"]), "action needs 'Author must'/'Reviewer should'"
    refs = [e["ref"] for e in data.get("examples", [])]
    assert len(refs) == len(set(refs)), f"duplicate example refs: {refs}"


def test_rule_ids_are_unique():
    seen = defaultdict(list)
    for path, data in RULES.items():
        seen[data["id"]].append(_rel(path))
    dupes = {k: v for k, v in seen.items() if len(v) > 1}
    assert not dupes, f"rule ids defined more than once: {dupes}"


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_codes_are_unique_per_profile(profile):
    owners = defaultdict(list)
    for data in RULES.values():
        code = data["codes"].get(profile)
        if code:
            owners[code].append(data["id"])
    shared = {code: ids for code, ids in owners.items() if len(ids) > 1}
    assert not shared, f"{profile}: codes shared by several concepts: {shared}"


def test_profile_restricted_rules_carry_codes_only_for_their_profiles():
    bad = {d["id"]: sorted(set(d["codes"]) - set(d["profiles"]))
           for d in RULES.values() if d.get("profiles") and set(d["codes"]) - set(d["profiles"])}
    assert not bad, f"codes for profiles the rule does not apply to: {bad}"


def test_every_design_concept_has_a_rule():
    missing = sorted(DESIGN_CONCEPTS - set(BY_ID))
    assert not missing, f"design.md §5 concepts without a rule file: {missing}"


@pytest.mark.parametrize("rule_id", sorted(DESIGN_CODES))
def test_design_table_codes(rule_id):
    codes = BY_ID[rule_id]["codes"]
    for profile, code in DESIGN_CODES[rule_id].items():
        assert codes.get(profile) == code, f"{rule_id}: {profile} code {codes.get(profile)!r}, design says {code!r}"


def test_api_propagation_subtypes_match_the_design():
    assert set(BY_ID["api-propagation-incomplete"].get("subtypes", [])) == API_PROPAGATION_SUBTYPES


def test_triton_spelling_of_unmasked_access_is_noted():
    rule = BY_ID["unmasked-triton-access"]
    assert rule["codes"]["aiter"] == "B2" and "T1" in rule["summary"]


def test_families_file_validates_against_schema():
    errors = sorted(FAMILIES_VALIDATOR.iter_errors(FAMILIES_DATA), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}" for e in errors)


def test_family_ids_are_unique():
    ids = [f["id"] for f in FAMILIES_DATA["families"]]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def _regexes(condition, where):
    for key, value in condition.items():
        if key == "any":
            for i, sub in enumerate(value):
                yield from _regexes(sub, f"{where}.any[{i}]")
        elif key in ("added_in", "changed_in_def"):
            yield from _regexes(value, f"{where}.{key}")
        elif key == "top_dirs_at_least":
            continue
        elif isinstance(value, str):
            yield f"{where}.{key}", value
        else:
            for i, item in enumerate(value):
                yield f"{where}.{key}[{i}]", item


def test_every_family_regex_compiles():
    bad = []
    for fam in FAMILIES.values():
        for where, pattern in _regexes(fam["when"], fam["id"]):
            try:
                re.compile(pattern)
            except re.error as exc:
                bad.append(f"{where}: {pattern!r}: {exc}")
    assert not bad, "\n".join(bad)


def test_every_family_named_by_a_rule_exists():
    unknown = {d["id"]: sorted(set(d.get("families", [])) - set(FAMILIES)) for d in RULES.values()}
    unknown = {k: v for k, v in unknown.items() if v}
    assert not unknown, f"rules name families that families.yml lacks: {unknown}"


def test_every_rule_a_family_lists_exists():
    unknown = {fid: sorted(set(f.get("rules", [])) - set(BY_ID)) for fid, f in FAMILIES.items()}
    unknown = {k: v for k, v in unknown.items() if v}
    assert not unknown, f"families name rules the catalog lacks: {unknown}"


def test_every_rule_is_derivable_and_every_family_calls_a_rule():
    """A design concept or checklist rule no family calls would never reach a reviewer's checklist.
    (Engine-level structural rules outside the design table may run without derivation.)"""
    called = defaultdict(set)
    for data in RULES.values():
        for fam in data.get("families", []):
            called[fam].add(data["id"])
    for fid, fam in FAMILIES.items():
        called[fid] |= set(fam.get("rules", []))
    must = {rid for rid, d in BY_ID.items() if rid in DESIGN_CONCEPTS or d["detector"] == "checklist"}
    orphan_rules = sorted(must - set().union(set(), *called.values()))
    idle_families = sorted(fid for fid in FAMILIES if not called[fid])
    assert not orphan_rules, f"rules no family derives: {orphan_rules}"
    assert not idle_families, f"families that call no rule: {idle_families}"


def test_any_pr_family_fires_on_every_diff():
    assert FAMILIES["any-pr"]["when"] == {"path": "."}
    assert any("any-pr" in d.get("families", []) for d in RULES.values() if d["group"] == "housekeeping")
