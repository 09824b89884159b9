"""Shipped data is validated by the tests, not on every review; a repository's own data still is;
a review does not import what only other commands need."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pr_review.catalog import load_catalog, load_rules
from pr_review.cli import _parser
from pr_review.profiles import load_profiles
from pr_review.rulesdata import DataError, rules_root, yaml_files


def test_shipped_catalog_and_profiles_pass_the_loaders_validation():
    validated = load_catalog(validate_shipped=True)
    assert validated.rules.keys() == load_catalog().rules.keys()
    assert load_profiles(rules_root() / "profiles").keys() == load_profiles().keys()


def test_yaml_files_lists_what_pathlib_glob_does_in_its_order(tmp_path: Path):
    for name in ("b.yml", "a.yml", "B.yml", "x.yaml", "note.txt", "sub/z.yml", "sub/a.yml", "sub-a/c.yml",
                 "sub/deeper/d.yml", ".hidden/e.yml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("id: x\n", encoding="utf-8")
    assert yaml_files(tmp_path) == sorted(tmp_path.rglob("*.yml"))
    assert yaml_files(tmp_path, recursive=False) == sorted(tmp_path.glob("*.yml"))
    assert yaml_files(tmp_path / "missing") == []
    for directory in (rules_root(), rules_root() / "catalog"):
        assert yaml_files(directory) == sorted(directory.rglob("*.yml"))


def test_a_repository_rule_is_still_validated(tmp_path: Path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my-rule.yml").write_text("id: my-rule\ngroup: mine\nseverity: extreme\n", encoding="utf-8")
    with pytest.raises(DataError, match="my-rule.yml"):
        load_rules(tmp_path)


def test_a_profile_directory_given_explicitly_is_validated(tmp_path: Path):
    (tmp_path / "generic.yml").write_text("name: generic\nunknown_key: 1\n", encoding="utf-8")
    with pytest.raises(DataError, match="generic.yml"):
        load_profiles(tmp_path)


def test_a_python_only_review_imports_no_schema_template_http_traceback_tree_sitter_inspect_or_shutil(tmp_path: Path):
    from conftest import make_repo

    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    # What the interpreter loaded before the review is not the review's cost: a system Python's site
    # hooks (a .pth file) may import shutil at start.
    script = textwrap.dedent(f"""
        import sys
        before = set(sys.modules)
        from pr_review.cli import main
        main(["review", "--repo", {str(repo)!r}, "--base", "main", "--head", "pr", "--format", "json",
              "--output", {str(tmp_path / "report.json")!r}])
        print(sorted(m for m in ("jsonschema", "jinja2", "ghapi", "httpx2", "traceback", "tree_sitter", "tree_sitter_cpp",
                                "dataclasses", "inspect", "shutil")
                     if m in sys.modules and m not in before))
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
    assert (tmp_path / "report.json").read_text(encoding="utf-8").startswith("{")


@pytest.mark.parametrize("argv", [
    ["review", "--repo", "r", "--base", "b", "--head", "h", "--format", "json", "-q", "--fail-on", "high"],
    ["review"], ["demo"], ["rules", "--profile", "atom"], ["explain", "some-rule"],
    ["stats", "--range", "HEAD~3..HEAD", "--jobs", "2", "--shard", "1/2"],
    ["ci", "--repo", "o/n", "--pr", "7", "--format", "sarif"],
])
def test_a_command_parses_alike_with_its_parser_alone_and_with_all(argv):
    assert _parser(argv[0]).parse_args(argv) == _parser().parse_args(argv)


@pytest.mark.parametrize("argv", [["review", "--bogus"], ["review", "--format", "pdf"], ["stats"], ["explain"]])
def test_a_commands_usage_errors_read_as_with_every_command_declared(argv, capsys):
    errors = []
    for parser in (_parser(argv[0]), _parser()):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and "usage: pr-review" in errors[0]



def _records() -> list[type]:
    """Every class of the engine made with `model.record`."""
    import importlib
    import pkgutil

    import pr_review

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(pr_review.__path__, "pr_review."):
        if not info.name.endswith("__main__"):
            module = importlib.import_module(info.name)
            found.update({f"{c.__module__}.{c.__qualname__}": c for c in vars(module).values()
                          if isinstance(c, type) and "_record_fields" in vars(c)})
    return list(found.values())


@pytest.mark.parametrize("cls", _records(), ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_record_reprs_compares_and_hashes_as_its_plain_dataclass_twin(cls):
    """`model.record` makes its classes without the dataclasses module; each record answers as a
    dataclass of the same fields and options would."""
    import dataclasses

    from pr_review import model

    own = model.fields(cls)
    frozen = cls.__setattr__ is not object.__setattr__
    compared = cls.__eq__ is not object.__eq__

    def option(value):
        return dataclasses.MISSING if value is model.MISSING else value

    twin = dataclasses.make_dataclass(cls.__name__, [
        (f.name, "object", dataclasses.field(default=option(f.default), default_factory=option(f.default_factory),
                                             hash=f.hash, compare=f.compare)) for f in own], frozen=frozen, eq=compared,
        namespace={"__post_init__": cls.__post_init__} if hasattr(cls, "__post_init__") else None)
    twin.__qualname__ = cls.__qualname__
    values = {f.name: f"v{i}" for i, f in enumerate(own)}
    one, same, as_twin = cls(**values), cls(**values), twin(**values)
    assert repr(one) == repr(as_twin)
    if compared:
        assert one == same and not one != same and one.__eq__(as_twin) is NotImplemented
        for f in own:
            other = cls(**{**values, f.name: "changed"})
            assert (one == other) == (twin(**values) == twin(**{**values, f.name: "changed"})), f.name
    else:
        assert one != same and one == one
    if frozen:
        assert hash(one) == hash(as_twin) == hash(same)
    elif compared:
        with pytest.raises(TypeError):
            hash(one)
        with pytest.raises(TypeError):
            hash(as_twin)
    assert model.asdict(one) == dataclasses.asdict(as_twin)
    assert repr(model.replace(one, **{own[0].name: "x"})) == repr(dataclasses.replace(as_twin, **{own[0].name: "x"}))
    positional = tuple(values.values())
    assert shown(cls(*positional)) == shown(twin(*positional))
    optional = [f.name for f in own if f.default is not model.MISSING or f.default_factory is not model.MISSING]
    required = {name: value for name, value in values.items() if name not in optional}
    assert shown(cls(**required)) == shown(twin(**required))  # what __post_init__ makes of the defaults aside
    if frozen:
        with pytest.raises(model.FrozenInstanceError):
            one.__setattr__(own[0].name, "x")
        with pytest.raises(AttributeError):  # dataclasses' FrozenInstanceError is an AttributeError too
            one.__setattr__(own[0].name, "x")


def shown(value) -> str:
    """A repr without the addresses of the objects in it."""
    return re.sub(r" at 0x[0-9a-f]+>", ">", repr(value))


def test_a_record_takes_its_arguments_as_a_dataclass_would():
    from collections import namedtuple

    from pr_review.model import FrozenInstanceError, asdict, field, fields, record, replace

    calls = []

    @record(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: list = field(default_factory=list)
        seen: int = field(default=0, compare=False)

        def __post_init__(self) -> None:
            calls.append(self.x)

    assert repr(Point(1)).endswith(".Point(x=1, y=0, tags=[], seen=0)") and calls == [1]
    assert Point(1, 2, ["a"]) == Point(x=1, tags=["a"], y=2)
    assert Point(1, seen=1) == Point(1, seen=2) and hash(Point(1, tags=(), seen=1)) == hash(Point(1, tags=(), seen=2))
    assert Point(1).tags is not Point(1).tags  # a factory runs per object
    assert Point.y == 0 and "tags" not in vars(Point) and Point.seen == 0  # class attributes as dataclass leaves them
    assert replace(Point(1, 2), y=3) == Point(1, 3)
    assert [f.name for f in fields(Point)] == [f.name for f in fields(Point(1))] == ["x", "y", "tags", "seen"]
    assert asdict(Point(1, tags=[Point(2)])) == {"x": 1, "y": 0, "tags": [{"x": 2, "y": 0, "tags": [], "seen": 0}], "seen": 0}
    Pair = namedtuple("Pair", "a b")
    converted = asdict(Point(1, tags=(Pair(Point(2), {"k": [3]}),)))["tags"]  # as dataclasses.asdict converts one
    assert converted == (Pair({"x": 2, "y": 0, "tags": [], "seen": 0}, {"k": [3]}),) and type(converted[0]) is Pair
    for args, kwargs, message in [((), {}, "missing required argument: 'x'"), ((1, 2, [], 4, 5), {}, "takes 5 positional"),
                                  ((1,), {"z": 2}, "unexpected keyword argument 'z'"), ((1,), {"x": 2}, "multiple values")]:
        with pytest.raises(TypeError, match=message):
            Point(*args, **kwargs)
    with pytest.raises(FrozenInstanceError):
        Point(1).x = 2
    with pytest.raises(FrozenInstanceError):
        del Point(1).x
    with pytest.raises(TypeError, match="not a record"):
        fields(object())
    with pytest.raises(TypeError, match="non-default argument 'b'"):
        record(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 0}))
    with pytest.raises(ValueError, match="mutable default"):
        record(type("Shared", (), {"__annotations__": {"a": "list"}, "a": []}))
    with pytest.raises(TypeError, match="use @dataclass"):
        record(type("Own", (), {"__annotations__": {"a": "int"}, "__init__": lambda self: None}))
    with pytest.raises(TypeError, match="use @dataclass"):
        record(type("Counted", (), {"__annotations__": {"a": "ClassVar[int]"}}))
    with pytest.raises(TypeError, match="extends a record"):
        record(type("Deeper", (Point,), {"__annotations__": {"z": "int"}}))
