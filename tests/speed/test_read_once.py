"""What a review reads once and then reuses answers exactly what reading it again would: the
shipped YAML through its cache, C++ trees and their node lists, source segments, grep answers."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pr_review.git import CatFile, Repo
from pr_review.lang import cpp
from pr_review.lang.python import qualified_functions
from pr_review.rulesdata import ShippedCache
from pr_review.source import Source


# --------------------------------------------------------------------------- the shipped YAML cache

def test_the_cache_returns_what_yaml_does_and_fresh_objects_each_time(tmp_path: Path):
    rule = tmp_path / "rule.yml"
    rule.write_text("id: r\nlist: [1, 2.5, true, null]\nmap: {a: b}\n", encoding="utf-8")
    first = ShippedCache(tmp_path / "cache.marshal")
    data = first.load(rule)
    assert data == {"id": "r", "list": [1, 2.5, True, None], "map": {"a": "b"}}
    first.save()
    second = ShippedCache(tmp_path / "cache.marshal")
    assert str(rule) in second.entries
    again = second.load(rule)
    assert again == data and again is not second.load(rule)  # nobody sees another caller's changes


def test_an_edited_file_is_read_again(tmp_path: Path):
    rule = tmp_path / "rule.yml"
    rule.write_text("id: old\n", encoding="utf-8")
    cache = ShippedCache(tmp_path / "cache.marshal")
    assert cache.load(rule) == {"id": "old"}
    rule.write_text("id: newer\n", encoding="utf-8")
    assert cache.load(rule) == {"id": "newer"}


def test_a_fresh_checkout_of_the_same_file_is_served_from_the_cache_by_its_content(tmp_path: Path, monkeypatch):
    import pr_review.rulesdata as rulesdata

    rule = tmp_path / "rule.yml"
    rule.write_text("id: r\r\nlist: [1, 2]\n", encoding="utf-8")
    first = ShippedCache(tmp_path / "cache.marshal")
    data = first.load(rule)
    first.save()
    os.utime(rule, ns=(1, 1))  # the same bytes, another modification time (a CI runner's new checkout)
    monkeypatch.setattr(rulesdata, "_yaml", lambda: pytest.fail("parsed the YAML again"))
    second = ShippedCache(tmp_path / "cache.marshal")
    assert second.load(rule) == data == {"id": "r", "list": [1, 2]}
    assert second.entries[str(rule)][0] == 1  # and the cache now knows the new time
    monkeypatch.undo()
    rule.write_text("id: s\r\nlist: [1, 3]\n", encoding="utf-8")  # same size, other content
    os.utime(rule, ns=(2, 2))
    assert second.load(rule) == {"id": "s", "list": [1, 3]}


def test_a_value_marshal_cannot_keep_is_read_every_time(tmp_path: Path):
    rule = tmp_path / "rule.yml"
    rule.write_text("when: 2024-01-02\n", encoding="utf-8")  # a YAML date
    cache = ShippedCache(tmp_path / "cache.marshal")
    assert str(cache.load(rule)["when"]) == "2024-01-02"
    assert str(rule) not in cache.entries


def test_a_broken_cache_file_is_ignored(tmp_path: Path):
    (tmp_path / "cache.marshal").write_bytes(b"not marshal data")
    rule = tmp_path / "rule.yml"
    rule.write_text("id: r\n", encoding="utf-8")
    assert ShippedCache(tmp_path / "cache.marshal").load(rule) == {"id": "r"}


def test_a_review_with_a_warm_cache_and_no_config_imports_no_yaml(tmp_path: Path):
    from conftest import make_repo

    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    script = textwrap.dedent(f"""
        import sys
        from pr_review.cli import main
        try:
            main(["review", "--repo", {str(repo)!r}, "--base", "main", "--head", "pr", "--format", "json",
                  "--output", {str(tmp_path / "report.json")!r}])
        except SystemExit:
            pass
        print("yaml" in sys.modules)
    """)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env).stdout
            for _ in range(2)]
    assert [r.strip() for r in runs] == ["True", "False"]  # the first review fills the cache


# --------------------------------------------------------------------------- C++: parse once, walk once

CPP = textwrap.dedent("""
    // a comment
    struct Outer { int a; struct Inner { float b; } inner; };
    class Plain { int c; };
    __global__ void k(int* p) { /* block */ atomicAdd(p, 1); p[0] = 2; }
    int f() { return g("gfx942"); }
""")


def test_a_text_is_parsed_once():
    assert cpp.parse(CPP) is cpp.parse(CPP)


@pytest.mark.parametrize("kind", sorted(cpp.INDEXED_TYPES))
def test_nodes_of_a_type_are_those_a_walk_meets_in_its_order(kind):
    tree = cpp.parse(CPP)
    walked = [(n.start_byte, n.end_byte) for n in cpp.walk(tree.root_node) if n.type == kind]
    assert walked and [(n.start_byte, n.end_byte) for n in cpp.nodes_of_type(tree, kind)] == walked


# --------------------------------------------------------------------------- Python

def test_qualified_functions_keeps_the_first_definition_in_source_order():
    tree = ast.parse(textwrap.dedent("""
        if X:
            def f(): pass
        else:
            def f(): return 1
        class A:
            def m(self):
                def inner(): pass
                g = lambda: 0
            @property
            def p(self): pass
        async def h():
            def f(): pass
    """))
    table = qualified_functions(tree)
    assert list(table) == ["f", "A.m", "A.m.inner", "A.p", "h", "h.f"]
    assert table["f"].body[0].__class__ is ast.Pass


# --------------------------------------------------------------------------- Source: segments and greps

@pytest.fixture
def source(tmp_path: Path) -> Source:
    from conftest import make_repo

    text = "x = 1\r\ny = (1,\r 2)\rz = 'é' \\\n  + 'ü'\nclass A:\n    def f(self):\n        return helper(1)\n"
    repo_dir = make_repo(tmp_path / "repo", {"m.py": text, "n.py": "helper (2)\nother(3)\n"},
                         {"m.py": text, "n.py": "helper (2)\nother(3)\n# helper\n"})
    repo = Repo.open(repo_dir)
    head, base = repo.resolve("pr"), repo.resolve("main")
    return Source(repo, CatFile(repo, 1_000_000), base, head)


def test_segment_is_ast_get_source_segment(source: Source):
    text = source.text("m.py")
    for node in ast.walk(ast.parse(text)):
        assert source.segment(node, "m.py") == ast.get_source_segment(text, node)


def test_a_grep_asked_again_is_answered_from_the_first_answer(source: Source, monkeypatch):
    first = source.grep(r"\bhelper\s*\(", "head")
    monkeypatch.setattr(source.repo, "grep", lambda *a, **k: pytest.fail("searched the tree again"))
    assert source.grep(r"\bhelper\s*\(", "head") == first
    assert [(p, n) for p, n, _ in first] == [("m.py", 6), ("n.py", 1)]  # git counts only \n as a line end


def test_the_top_level_names_are_listed_once_per_side(tmp_path: Path, monkeypatch):
    from conftest import make_repo

    repo = Repo.open(make_repo(tmp_path / "repo", {"a.py": "", "pkg/__init__.py": "", "run.sh": ""},
                               {"a.py": "", "pkg/__init__.py": "", "run.sh": "", "b.py": ""}))
    source = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    assert source.top_level_names() == {"a", "b", "pkg", "run.sh"}
    assert source.top_level_names("base") == {"a", "pkg", "run.sh"}
    monkeypatch.setattr(repo, "git", lambda *a, **k: pytest.fail("listed the tree again"))
    assert source.top_level_names() == {"a", "b", "pkg", "run.sh"}


def test_a_prefetched_grep_answers_each_pattern_as_its_own_search_would(source: Source):
    patterns = [r"\bhelper\s*\(", r"\bother\s*\(", r"\bnowhere\s*\("]
    alone = {p: source.repo.grep(p, source.head) for p in patterns}
    source.prefetch_grep(patterns, "head")
    assert {p: source.grep(p, "head") for p in patterns} == alone


def test_a_family_regex_is_checked_when_the_families_are_validated(tmp_path: Path):
    from pr_review.catalog import load_families
    from pr_review.rulesdata import DataError

    families = tmp_path / "families.yml"
    families.write_text("families:\n  - id: broken\n    description: a bad pattern\n    when: {path: '(unclosed'}\n",
                        encoding="utf-8")
    assert load_families(families, validate=False)["broken"].when == {"path": "(unclosed"}
    with pytest.raises(DataError, match="bad regex"):
        load_families(families, validate=True)


@pytest.mark.parametrize("kind", [ast.Call, ast.Constant, ast.FunctionDef, ast.AsyncFunctionDef, ast.stmt, ast.expr,
                                  (ast.FunctionDef, ast.AsyncFunctionDef), ast.Num, ast.Str, ast.BinOp, ast.Name])
def test_nodes_of_a_type_come_from_one_pass_and_match_isinstance_in_walk_order(kind):
    from pr_review.lang.index import PythonIndex

    tree = ast.parse("async def f(a=1, b='s'):\n    x = [a + 2 for a in b]\n    return g(x, 3.0) - 1\nclass C: pass\n")
    assert PythonIndex(tree).of_type(kind) == [n for n in ast.walk(tree) if isinstance(n, kind)]


def test_a_tree_and_its_index_die_together():
    import gc
    import weakref

    from pr_review.lang.index import index_of

    tree = ast.parse("def f(x):\n    return g(x)\n")
    index = index_of(tree)
    assert index_of(tree) is index and index.nodes[0] is tree and qualified_functions(tree)
    alive = weakref.ref(tree)
    del tree, index
    gc.collect()
    assert alive() is None  # a long-lived process (a `stats` worker) keeps no tree of an earlier review


def test_words_searched_together_answer_as_each_word_searched_alone(source: Source):
    import re

    names = ["helper", "other", "help", "nowhere", "f"]
    alone = {n: source.repo.grep(re.escape(n), source.head, ("*.py",), word=True) for n in names}
    alone_files = {n: source.repo.grep(re.escape(n), source.head, ("*.py",), word=True, files_only=True) for n in names}
    files = source.grep_words(names, "head")
    assert files == {n: [p for p, _, _ in alone_files[n]] for n in names}
    assert files["helper"] == ["m.py", "n.py"] and files["help"] == []
    for n in names:  # both answers are kept: neither search runs again
        assert source.grep(re.escape(n), "head", ("*.py",), word=True) == alone[n]


def test_a_search_earlier_answers_cover_is_read_from_them_as_git_would_answer(tmp_path: Path, monkeypatch):
    import re

    from conftest import make_repo

    files = {"a/x.py": "helper(1)\nhelpers = 2\n", "a-b/y.py": "other()\nhelper\n", "a.py": "x = other\n",
             "b/z.py": "nothing\n", "c.txt": "helper\n"}
    repo = Repo.open(make_repo(tmp_path / "repo", files, files))
    source = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    truth = {(p, kw): repo.grep(p, source.head, ("*.py",), **dict(kw))
             for p in ("helper", "other", "helper|other", "other|helper|nowhere")
             for kw in ((("word", True),), (("files_only", True), ("word", True)))}
    for name in ("helper", "other", "nowhere"):  # each name's lines, as grep_words or a word search keeps them
        source.grep(re.escape(name), "head", ("*.py",), word=True)
    monkeypatch.setattr(source.repo, "grep", lambda *a, **k: pytest.fail("searched the tree again"))
    for (pattern, kw), expected in truth.items():
        assert source.grep(pattern, "head", ("*.py",), **dict(kw)) == expected, (pattern, kw)
    assert truth[("helper|other", (("files_only", True), ("word", True)))] == [("a-b/y.py", 0, ""), ("a.py", 0, ""),
                                                                               ("a/x.py", 0, "")]


def test_fixed_strings_searched_together_answer_as_each_searched_alone(source: Source, monkeypatch):
    strings = ["helper (2)", "other(3)", "# helper", "return helper(1)", "nowhere at all", "r (2"]
    alone = {s: source.repo.grep(s, source.base, fixed=True, files_only=True) for s in strings}
    files = source.grep_fixed(strings, "base")
    assert files == {s: [p for p, _, _ in alone[s]] for s in strings}
    assert files["helper (2)"] == ["n.py"] and files["# helper"] == [] and files["return helper(1)"] == ["m.py"]
    monkeypatch.setattr(source.repo, "grep", lambda *a, **k: pytest.fail("searched the tree again"))
    for s in strings:  # each answer is kept: no search runs again
        assert source.grep(s, "base", fixed=True, files_only=True) == alone[s]


def test_a_search_skips_binary_formats_unread_and_answers_as_git_grep_does(tmp_path: Path):
    from conftest import make_repo

    elf = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"kernel_name helper\n"  # a GPU code object naming it
    repo = Repo.open(make_repo(tmp_path / "repo", {}, {"k.co": elf, "a.py": "helper()\n", "b.txt": "helper\n"}))
    head, base = repo.resolve("pr"), repo.resolve("main")
    source = Source(repo, CatFile(repo, 1_000_000), base, head)
    assert source.grep("helper", "head") == repo.grep("helper", head) == [("a.py", 1, "helper()"), ("b.txt", 1, "helper")]
    searched = []
    real = repo.grep
    repo.grep = lambda *a, **k: searched.append(a[2]) or real(*a, **k)  # type: ignore[method-assign]
    source.grep("kernel_name", "head")
    assert ":(exclude)*.co" in searched[0]  # not even read


def test_a_tree_read_once_is_the_reviews_own_or_is_freed_after_the_look(source: Source):
    import weakref

    from pr_review.lang.index import INDEX_ATTRIBUTE

    import gc

    kept = source.python("m.py")
    with source.python_once("m.py") as tree:
        assert tree is kept
    gc.disable()  # as during a review
    try:
        with source.python_once("n.py") as tree:
            assert tree is not None and ast.dump(tree) == ast.dump(ast.parse(source.text("n.py")))
            alive = weakref.ref(tree)
            assert INDEX_ATTRIBUTE in tree.__dict__
        del tree
        assert alive() is None  # freed by reference counting: no cycle left for the collector
    finally:
        gc.enable()
    assert ("head", "n.py") not in source._trees


def test_a_planned_search_answers_every_later_search_holding_a_planned_name_as_git_would(tmp_path: Path):
    import re

    from conftest import make_repo

    files = {"a/x.py": "helper(1)\nhelpers = 2\nfrom modlib import helper_v2\n", "a-b/y.py": "other()\nhelper\n",
             "a.py": "x = other_thing(2)\nimport modlib\n", "b/z.py": "nothing\n", "c.txt": "helper\n",
             "d/modlib.py": "def helper_v2(x):\n    return x\n"}
    repo = Repo.open(make_repo(tmp_path / "repo", files, files))
    questions = [("helper", {"word": True}), ("helper", {"fixed": True}), ("helper_v2", {"fixed": True, "files_only": True}),
                 ("helper|other", {"word": True}), ("other", {"word": True, "files_only": True}),
                 ("other_thing", {"fixed": True}), (r"\bhelper_v2\s*\(", {}), (r"(import|from)\s+modlib\b", {"files_only": True}),
                 ("nowhere", {"word": True}),
                 # text that is not a name: from the lines of a planned name it holds
                 ("x = other_thing(2)", {"fixed": True}), ("helper(1)", {"fixed": True, "files_only": True})]
    plain = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    expected = [plain.grep(pattern, "head", ("*.py",), **kw) for pattern, kw in questions]
    planned = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    planned.plan_words(["helper", "other", "modlib", "if", "x"])  # a keyword and a short name are not planned
    searched = []
    real = repo.grep
    repo.grep = lambda *a, **k: searched.append((a[0], a[2])) or real(*a, **k)  # type: ignore[method-assign]
    assert [planned.grep(pattern, "head", ("*.py",), **kw) for pattern, kw in questions] == expected
    # one search of the tree for the planned names, the one name no planned word covers, and git's run of
    # each narrowed regex on the files the planned lines name
    whole_tree = [pattern for pattern, pathspecs in searched if "*.py" in pathspecs]
    assert whole_tree == ["helper|modlib|other", "nowhere"]
    assert [pattern for pattern, pathspecs in searched if "*.py" not in pathspecs] == [r"\bhelper_v2\s*\(",
                                                                                     r"(import|from)\s+modlib\b"]
    assert planned.grep_words(["helper", "other"]) == plain.grep_words(["helper", "other"])
    assert planned.grep_fixed(["helper_v2", "other_thing"], "head", ("*.py",)) == \
        plain.grep_fixed(["helper_v2", "other_thing"], "head", ("*.py",))
    assert len(searched) == 4  # answered from what was read


def test_the_review_plans_the_names_the_guards_evidence_and_a_new_test_module_are_looked_up_by(tmp_path: Path,
                                                                                               monkeypatch):
    """The callers of a function that lost a check, and the importers of a new test module, are read from the
    review's one planned search of the head tree's Python files, not searched for one by one."""
    from conftest import make_repo

    from pr_review.pipeline import ReviewRequest, review

    base = {"aiter/ops/scale.py": "def scale_rows(x, n):\n    assert n > 0\n    return x * n\n",
            "aiter/ops/use.py": "from .scale import scale_rows\n\n\ndef run(x):\n    return scale_rows(x, 2)\n"}
    head = {"aiter/ops/scale.py": "def scale_rows(x, n):\n    return x * n\n",
            "op_tests/test_scale_rows_fast.py": "import torch\n\nx = torch.ones(4)\nprint(x)\n"}
    repo = make_repo(tmp_path / "repo", base, head)
    planned: list[str] = []
    searched: list[tuple[str, tuple[str, ...]]] = []
    real_plan, real_grep = Source.plan_words, Repo.grep
    monkeypatch.setattr(Source, "plan_words", lambda self, words, *a, **k: planned.extend(words) or real_plan(self, words, *a, **k))
    monkeypatch.setattr(Repo, "grep", lambda self, pattern, rev, pathspecs=(), **k:
                        searched.append((pattern, tuple(pathspecs))) or real_grep(self, pattern, rev, pathspecs, **k))
    review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    assert {"scale_rows", "test_scale_rows_fast"} <= set(planned)
    # the callers' regex ran only on the files the planned search found holding the name
    callers = [pathspecs for pattern, pathspecs in searched if pattern.startswith(r"\bscale_rows")]
    assert callers and all(p.startswith(":(literal)") for pathspecs in callers for p in pathspecs)
    assert not [p for p, _ in searched if p.startswith(("test_scale_rows_fast", r"(import|from)"))]


def test_deleted_guards_are_looked_for_elsewhere_with_one_search_for_all(tmp_path: Path, monkeypatch):
    """Whether deleted checks still hold somewhere else in the head tree is one fixed-string search for all
    of their texts, made when the first of them needs it, not one search of the tree per check."""
    from conftest import make_repo

    from pr_review.pipeline import ReviewRequest, review

    checks = "    assert weights.shape[0] == num_experts_total\n    assert router_logits.dim() == 2\n"
    base = {"aiter/ops/route.py": f"def route(weights, router_logits, num_experts_total):\n{checks}    return weights\n",
            "aiter/ops/other.py": f"def gate(weights, router_logits, num_experts_total):\n{checks}    return weights\n"}
    head = {"aiter/ops/route.py": "def route(weights, router_logits, num_experts_total):\n    return weights\n"}
    repo = make_repo(tmp_path / "repo", base, head)
    searched: list[tuple[str, tuple[str, ...]]] = []
    real_grep = Repo.grep
    monkeypatch.setattr(Repo, "grep", lambda self, pattern, rev, pathspecs=(), **k:
                        searched.append((pattern, tuple(pathspecs))) or real_grep(self, pattern, rev, pathspecs, **k))
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    assert report.evidence["guards"][1:] == [
        "moved: aiter/ops/route.py:2 (base) `assert weights.shape[0] == num_experts_total` → aiter/ops/other.py:2",
        "moved: aiter/ops/route.py:3 (base) `assert router_logits.dim() == 2` → aiter/ops/other.py:3"]
    assert [p for p, _ in searched if "assert" in p] == [
        "assert weights.shape[0] == num_experts_total\nassert router_logits.dim() == 2"]


def test_base_word_lines_read_the_base_tree_without_searching_it(tmp_path: Path, monkeypatch):
    """A file the PR leaves alone is the same on both sides: the lines of the base tree's Python files holding
    a name are those of the head tree's untouched files and of the touched files' base sides, exactly what
    a search of the base tree answers, which is never made."""
    from conftest import make_repo

    from pr_review.detectors.base import ReviewInput
    from pr_review.git.diff import read_changes
    from pr_review.model import PRInfo
    from pr_review.profiles import load_profiles

    base = {"u.py": "import mori\n", "m.py": "x = 1\nimport mori.ops\n", "d.py": "kiwi = 2\n",
            "r_old.py": "def plum():\n    pass\n", "keep.txt": "fig pear\n", "bin.py": b"fig = 1\0\n",
            "e.py": "y = 0\n"}
    head = {"m.py": "x = 1\n", "r_new.py": "def plum():\n    pass\n", "a.py": "import fig\n",
            "u2.py": "pear_tree = 1\n", "e.py": "y = 0\ngrape = 3\nmori_like = 1\n"}
    root = make_repo(tmp_path / "repo", base, head, delete=("d.py", "r_old.py"))
    repo = Repo.open(root)
    source = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    files = [f for f in read_changes(repo, source.base, source.head, 1_000_000) if f.path != "e.py"]  # as if excluded
    review = ReviewInput(files=files, profile=load_profiles()["generic"], pr=PRInfo(title="x"), source=source)
    names = ["mori", "kiwi", "plum", "fig", "pear", "grape"]
    expected = {n: source.grep(n, "base", ("*.py",), word=True) for n in names}
    assert [n for n in names if expected[n]] == ["mori", "kiwi", "plum"]
    searched: list[str] = []
    real = repo.grep
    repo.grep = lambda pattern, rev, *a, **k: searched.append(rev) or real(pattern, rev, *a, **k)  # type: ignore[method-assign]
    assert {n: sorted(hits) for n, hits in review.base_word_lines(names).items()} == \
        {n: sorted(hits) for n, hits in expected.items()}
    assert source.base not in searched


def test_a_new_knob_and_import_are_looked_up_on_base_through_the_one_planned_search(tmp_path: Path, monkeypatch):
    """Whether the base tree already read a knob or imported a module is answered from the head tree's planned
    search (files the PR leaves alone are the same on both sides) and the PR's own files' base sides: no
    search of the base tree's Python files, and planning itself searches nothing (a changed script asks
    who imports it, which the plan answers)."""
    from conftest import make_repo

    from pr_review.pipeline import ReviewRequest, review

    base = {"aiter/ops/old.py": "import os\n\nX = os.environ.get('AITER_OLD_KNOB')\n",
            "aiter/ops/tool.py": "def main():\n    pass\n\n\nif __name__ == '__main__':\n    main()\n",
            "aiter/ops/user.py": "import mori_old\n"}
    head = {"aiter/ops/new.py": "import os\nimport mori_old\nimport mori_new\n\n"
                                "A = os.environ.get('AITER_OLD_KNOB')\nB = os.environ.get('AITER_NEW_KNOB')\n",
            "aiter/ops/tool.py": "def main():\n    return 1\n\n\nif __name__ == '__main__':\n    main()\n"}
    repo = make_repo(tmp_path / "repo", base, head)
    searched: list[tuple[str, str, tuple[str, ...]]] = []
    real_grep = Repo.grep
    monkeypatch.setattr(Repo, "grep", lambda self, pattern, rev, pathspecs=(), **k:
                        searched.append((pattern, rev, tuple(pathspecs))) or real_grep(self, pattern, rev, pathspecs, **k))
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    found = {(f.rule, f.problem.split("`")[1]) for f in [*report.findings, *report.preview_findings]
             if f.rule in ("env-var-knob", "new-dependency")}
    assert found == {("env-var-knob", "AITER_NEW_KNOB"), ("new-dependency", "import mori_new")}
    python_searches = [(pattern, rev) for pattern, rev, specs in searched if specs[:1] == ("*.py",)]
    assert len(python_searches) == 1 and python_searches[0][1] == Repo.open(repo).resolve("pr")


def test_word_lines_are_the_lines_git_grep_w_finds(tmp_path: Path):
    from conftest import make_repo

    text = ("mori\nx = mori_x + xmori + _mori\n  mori.y; (mori)\r\n\nkiwi mori kiwi2\nmorimori mori9\n"
            "é mori é\nlast mori")
    root = make_repo(tmp_path / "repo", {"t.py": text, "u.py": "nothing\n"}, {})
    repo = Repo.open(root)
    source = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("main"))
    for names in (["mori"], ["mori", "kiwi"], ["kiwi2", "y"]):
        expected = source.grep("|".join(names), "head", ("t.py", "u.py"), word=True)
        assert source.word_lines(names, "head", ["t.py", "u.py", "missing.py"]) == expected


def test_a_new_files_copy_is_looked_for_only_among_files_of_its_suffix(tmp_path: Path, monkeypatch):
    """A new file's source is a file of the same suffix in its parent directory: the search for its probe
    lines reads only those (`x*y`, a directory whose name is a wildcard, matched as itself), and finds the
    same copy source a search of every file there finds."""
    from conftest import make_repo

    from pr_review.detectors import twins
    from pr_review.detectors.base import ReviewInput
    from pr_review.git.diff import read_changes
    from pr_review.model import PRInfo
    from pr_review.profiles import load_profiles

    body = "".join(f"    value_{i} = compute_something_long(x, {i}) + offset_{i}\n" for i in range(30))
    source_text = "def kernel(x):\n" + body + "    return x\n"
    base = {"pkg/x*y/old.py": source_text, "pkg/x*y/notes.md": source_text, "pkg/xzy/other.py": source_text,
            "pkg/x*y/big.cu": "// " + body}
    head = {"pkg/x*y/sub/new.py": source_text.replace("value_3 =", "value_three =")}
    root = make_repo(tmp_path / "repo", base, head)
    repo = Repo.open(root)
    source = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    files = read_changes(repo, source.base, source.head, 1_000_000)
    review = ReviewInput(files=files, profile=load_profiles()["generic"], pr=PRInfo(title="x"), source=source)
    new = [(f, source.lines(f.path)) for f in files]
    searched: list[tuple[str, ...]] = []
    real = repo.grep
    repo.grep = lambda pattern, rev, pathspecs=(), **k: searched.append(tuple(pathspecs)) or real(pattern, rev, pathspecs, **k)  # type: ignore[method-assign]
    found = twins._candidates(review, new)
    assert found == {"pkg/x*y/old.py"}
    # the probes' files, then the full pattern on those alone
    assert searched[0][0] == ":(glob)pkg/x\\*y/**/*.py" and searched[1:] == [(":(literal)pkg/x*y/old.py",)]
    everywhere = {p for p, _, _ in source.grep("compute_something_long", "base", ("pkg/x*y",), files_only=True)}
    assert everywhere == {"pkg/x*y/old.py", "pkg/x*y/notes.md", "pkg/x*y/big.cu", "pkg/xzy/other.py"}
    assert twins._copy_source(review, files[0], new[0][1], found) == twins._copy_source(review, files[0], new[0][1], everywhere)


def test_a_module_binds_a_name_as_a_reading_of_its_whole_text_finds_it():
    """The symbols evidence reads a module's definitions, assignments and globals on the lines holding the
    asked name only: the answer is the whole text's reading, for every name the text holds and some it does not."""
    import re
    from types import SimpleNamespace

    from pr_review.evidence.symbols import ASSIGN_RE, DEF_RE, GLOBAL_RE, IMPORT_RE, Resolver, lines_holding

    text = textwrap.dedent("""\
        from pkg.ops import (alpha,
            beta as b2,  # a comment
            gamma)
        import os.path as osp
        import json
        def fwd(x): return x
        async def fetch(): pass
        class Tuner(Base):
            limit: int = 3
            def run(self): pass
        a, (c, d) = 1, (2, 3)
        e = f = 4
        [g, *h] = [5, 6]
        if a == c: pass
        total += 1
        k: dict[str, int] = {}
        def outer():
            global counter, cache
            counter = 0
        label = "def not_a_def = 1"
        # assigned_in_comment = 1
        x_y=z
        \tw_t = 2
        """) + "last = 1"
    names: set[str] = set(DEF_RE.findall(text))
    for targets in ASSIGN_RE.findall(text):
        names.update(t for t in re.split(r"[\s,()\[\]*]+", targets) if t)
    for imported in IMPORT_RE.findall(text):
        for part in imported.replace("(", " ").replace(")", " ").split(","):
            if part.split():
                names.add(part.split()[-1])
    for declared in GLOBAL_RE.findall(text):
        names.update(n.strip() for n in declared.split(","))
    asked = set(re.findall(r"\w+", text)) | {"absent", "alph", "osp_x"}
    resolver = SimpleNamespace(_textdefs={})
    assert {n for n in asked if Resolver._text_binds(resolver, "m.py", text, lines_holding(text, n), n)} == names & asked
    assert {"alpha", "b2", "gamma", "osp", "json", "fwd", "fetch", "Tuner", "limit", "a", "c", "d", "e",
            "k", "counter", "cache", "x_y", "w_t", "last"} <= names


def test_the_statement_walk_kept_to_some_lines_yields_the_whole_walks_statements_holding_one():
    """The undeclared-import check walks only the statements holding an added line: the same statements, with
    the same guards, as the whole walk kept to those."""
    from pr_review.evidence.symbols import _statements

    tree = ast.parse(textwrap.dedent("""\
        import os
        try:
            import fast_lib
        except ImportError:
            fast_lib = None
        def f():
            if TYPE_CHECKING:
                import typed
            for i in range(3):
                import inner
            return 1
        class C:
            def g(self):
                match x:
                    case 1:
                        import in_case
        """))
    whole = list(_statements(tree.body))
    for lines in ([1], [3], [5], [8], [10, 11], [16], [2, 12], [], list(range(1, 17))):
        kept = [(s, g) for s, g in whole if any(s.lineno <= n <= s.end_lineno for n in lines)]
        assert list(_statements(tree.body, lines=lines)) == kept
    assert [(s.lineno, g) for s, g in _statements(tree.body, lines=[3, 8])] == [(2, False), (3, True), (6, False),
                                                                                 (7, False), (8, True)]
