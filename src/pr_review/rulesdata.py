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

# Bounds for YAML a repository supplies. Its real files (workflows, config, rules) are a few KB with
# a dozen levels; past these, loading or walking the data costs the runner gigabytes or minutes
# (an alias bomb of 300 bytes expands to 387 million strings), or crashes libyaml's composer
# (its recursion has no depth limit).
MAX_YAML_CHARS = 1_000_000
MAX_YAML_DEPTH = 64
MAX_YAML_EXPANSION = 2_000_000  # nodes plus scalar characters, every alias counted in full


class BoundsError(yaml.YAMLError):
    """YAML refused before it was loaded: too large, nested too deep, or aliases that expand too far."""


def check_yaml_bounds(text: str) -> None:
    """Raise BoundsError unless `text` stays within the bounds above, read as a stream of parser
    events: nothing is composed or constructed, and the first event past a bound stops the read."""
    if len(text) > MAX_YAML_CHARS:
        raise BoundsError(f"larger than {MAX_YAML_CHARS:,} characters")
    expanded: dict[str, int] = {}  # anchor → size of its node with aliases expanded
    open_nodes: list[list[Any]] = []  # [anchor, size so far] of each collection being read
    total = 0

    def close(size: int, anchor: str | None) -> None:
        nonlocal total
        if anchor:
            expanded[anchor] = size
        if open_nodes:
            open_nodes[-1][1] += size
            size = open_nodes[-1][1]
        else:
            total += size
            size = total
        if size > MAX_YAML_EXPANSION:
            raise BoundsError(f"aliases expand it past {MAX_YAML_EXPANSION:,} nodes and characters")

    for event in yaml.parse(text, Loader=SAFE_LOADER):
        if isinstance(event, yaml.ScalarEvent):
            close(1 + len(event.value), event.anchor)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in expanded:
                raise BoundsError(f"alias *{event.anchor} refers to a node that contains it, or to no anchor")
            close(expanded[event.anchor], None)
        elif isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append([event.anchor, 1])
            if len(open_nodes) > MAX_YAML_DEPTH:
                raise BoundsError(f"nested deeper than {MAX_YAML_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = open_nodes.pop()
            close(size, anchor)


def load_untrusted_yaml(text: str) -> Any:
    """YAML from the reviewed repository (its config, rule directories, workflows), loaded only
    within the bounds above. Raises yaml.YAMLError: BoundsError for a bound, the parser's own else."""
    check_yaml_bounds(text)
    return yaml.load(text, Loader=SAFE_LOADER)


@lru_cache(maxsize=1)
def _shipped_root() -> Path:
    return rules_root().resolve()


def load_yaml(path: Path) -> Any:
    """A rule, family or profile file: the shipped ones with the fast loader (checking their bounds
    would cost every review tens of milliseconds), any other (a repository's rules) bounded."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.resolve().is_relative_to(_shipped_root()):
            return yaml.load(text, Loader=SAFE_LOADER)
        return load_untrusted_yaml(text)
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
