"""Where the shipped rule data lives, and schema validation that names the file and field at fault."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


def rules_root() -> Path:
    """`rules/` inside the installed package, else at the top of a source checkout."""
    packaged = Path(__file__).parent / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "rules"


class DataError(Exception):
    """A rule, family, profile or config file is malformed; the message names file and field."""


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    # imported here: jsonschema costs more to import than a small review costs to run, and only
    # data that did not ship with the package (a repository's rules) is validated on a review
    from jsonschema import Draft202012Validator

    schema = json.loads((rules_root() / "schema" / f"{name}.schema.json").read_text())
    return Draft202012Validator(schema)


def schema_errors(data: Any, schema: str, source: str) -> list[str]:
    errors = sorted(validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{source}: {'.'.join(str(p) for p in e.absolute_path) or '<top level>'}: {e.message}" for e in errors]


# libyaml's loader when PyYAML was built with it: the catalog is read on every review.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: cannot be read as YAML: {exc}") from exc


def load_validated(path: Path, schema: str, validate: bool = True) -> Any:
    """The YAML at `path`, checked against `schema` unless `validate` is False: the shipped data,
    which the data tests validate, is not re-validated on every review."""
    data = load_yaml(path)
    if not validate:
        return data
    errors = schema_errors(data, schema, str(path))
    if errors:
        raise DataError("\n".join(errors))
    return data
