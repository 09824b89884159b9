"""Where the shipped rule data lives, and schema validation that names the file and field at fault."""
from __future__ import annotations

import json
import marshal
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kept import MarshalStore, cache_file

if TYPE_CHECKING:
    from types import ModuleType

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


def _yaml() -> ModuleType:
    """PyYAML, imported when first needed: with the shipped data cached (`ShippedCache`) a review of
    a repository without a config file reads no YAML, and the import costs it tens of milliseconds."""
    import yaml

    return yaml


def _safe_loader() -> type:
    # libyaml's loader when PyYAML was built with it
    yaml = _yaml()
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def __getattr__(name: str) -> Any:
    """`SAFE_LOADER` and `BoundsError` (a `yaml.YAMLError`) exist once PyYAML is imported."""
    if name == "SAFE_LOADER":
        return _safe_loader()
    if name == "BoundsError":
        return _bounds_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# Bounds for YAML a repository supplies. Its real files (workflows, config, rules) are a few KB with
# a dozen levels; past these, loading or walking the data costs the runner gigabytes or minutes
# (an alias bomb of 300 bytes expands to 387 million strings), or crashes libyaml's composer
# (its recursion has no depth limit).
MAX_YAML_CHARS = 1_000_000
MAX_YAML_DEPTH = 64
MAX_YAML_EXPANSION = 2_000_000  # nodes plus scalar characters, every alias counted in full


@lru_cache(maxsize=1)
def _bounds_error() -> type:
    class BoundsError(_yaml().YAMLError):  # type: ignore[name-defined]
        """YAML refused before it was loaded: too large, nested too deep, or aliases that expand too far."""

    BoundsError.__module__, BoundsError.__qualname__ = __name__, "BoundsError"
    return BoundsError


def check_yaml_bounds(text: str) -> None:
    """Raise BoundsError unless `text` stays within the bounds above, read as a stream of parser
    events: nothing is composed or constructed, and the first event past a bound stops the read."""
    yaml, BoundsError = _yaml(), _bounds_error()  # noqa: N806
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

    for event in yaml.parse(text, Loader=_safe_loader()):
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
    return _yaml().load(text, Loader=_safe_loader())


@lru_cache(maxsize=1)
def _shipped_root() -> Path:
    return rules_root().resolve()


@lru_cache(maxsize=1)
def _shipped_prefixes() -> tuple[str, ...]:
    """The shipped `rules/` as a path prefix, as `rules_root` names it and resolved."""
    return tuple({os.path.abspath(rules_root()) + os.sep, str(_shipped_root()) + os.sep})


def _shipped_path(path: Path) -> str | None:
    """`path` as an absolute path when it lies in the shipped `rules/`, else None. A path named under
    `rules_root()` (every path the loaders list) is recognised by its text: resolving it walks each of
    its directories with a system call, and the ~90 shipped files cost a review milliseconds. Any other
    form (relative, with `.`, `..` or a hidden name, or a link) is resolved."""
    named = os.fspath(path)
    prefixes = _shipped_prefixes()
    if named.startswith(prefixes) and f"{os.sep}." not in named:
        return named
    resolved = str(path.resolve())
    return resolved if resolved.startswith(prefixes) else None


def yaml_files(directory: Path, recursive: bool = True) -> list[Path]:
    """The `*.yml` files in `directory` (and below it when `recursive`), in the order
    `sorted(directory.rglob("*.yml"))` (`glob`) gives, listed with os.walk and sorted by their
    parts before they become paths: pathlib's glob and comparisons cost more than reading the
    shipped catalog does."""
    found: list[tuple[tuple[str, ...], str]] = []
    for parent, _, files in os.walk(directory):
        parts = Path(parent).parts
        found += [((*parts, name), os.path.join(parent, name)) for name in files if name.endswith(".yml")]
        if not recursive:
            break
    return [Path(text) for _, text in sorted(found)]


def load_yaml(path: Path) -> Any:
    """A rule, family or profile file: the shipped ones with the fast loader (checking their bounds
    would cost every review tens of milliseconds) through `ShippedCache`, any other (a repository's
    rules) bounded."""
    try:
        shipped = _shipped_path(path)
        if shipped is not None:
            return _shipped_cache().load(shipped)
        return load_untrusted_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, _yaml().YAMLError) as exc:
        raise DataError(f"{path}: cannot be read as YAML: {exc}") from exc


class ShippedCache(MarshalStore):
    """The shipped YAML files, loaded once and kept as `marshal` bytes (`kept.MarshalStore`):
    constructing ~90 files' objects from YAML costs a review more than everything else it does on a
    small PR. An entry is used while its file's size and modification time are unchanged, or, when
    only the time changed (a fresh checkout of the same rules, a cache restored on a CI runner),
    while its content hashes the same; each load unmarshals fresh objects, so no caller sees
    another's changes."""

    def __init__(self, file: Path | None) -> None:
        # path → (modification time ns, size, blake2b of the bytes, marshal of the data)
        super().__init__(file, valid=lambda entry: isinstance(entry, tuple) and len(entry) == 4)

    def load(self, path: str | Path) -> Any:
        """The data of the YAML file at `path` (an absolute path)."""
        stat = os.stat(path)
        key = str(path)
        entry = self.entries.get(key)
        if entry is not None and entry[:2] == (stat.st_mtime_ns, stat.st_size):
            return marshal.loads(entry[3])
        with open(path, "rb") as file:
            raw = file.read()
        import hashlib  # here: it loads OpenSSL, and a warm cache needs no hash

        digest = hashlib.blake2b(raw, digest_size=16).digest()
        if entry is not None and entry[1:3] == (len(raw), digest):
            self.keep(key, (stat.st_mtime_ns, len(raw), digest, entry[3]))
            return marshal.loads(entry[3])
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as open() in text mode reads it
        data = _yaml().load(text, Loader=_safe_loader())
        try:
            self.keep(key, (stat.st_mtime_ns, len(raw), digest, marshal.dumps(data)))
        except ValueError:  # a type marshal does not keep (a YAML date): read this file every time
            pass
        return data


@lru_cache(maxsize=1)
def _shipped_cache() -> ShippedCache:
    return ShippedCache(cache_file("shipped", f"{_shipped_root()}|{sys.version_info[:2]}"))


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
