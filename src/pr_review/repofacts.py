"""What the review knows about how the reviewed repository works, read from its trees once per review.

Detectors ask these questions instead of carrying their own path lists: a rule whose premise
contradicts how the repository works (a tuning CLI is not library code, `AITER_CONFIG_*` entries in
the JIT core are the config registry, a kernel under `gfx1250/` exists only for that arch) is noise a
maintainer has to argue with. Answers are computed lazily and cached; nothing here reads the work tree.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Literal

from .lang.index import index_of
from .lang.python import dotted_name
from .lang.regex import lazy_re, may_match
from .profiles import Profile
from .source import Side, Source

Role = Literal["test", "docs", "ci", "benchmark", "example", "tooling", "vendored", "library"]

# Path roles, first match wins. Tests come from the profile too (its `runtime.test` patterns).
ROLE_PATTERNS: tuple[tuple[Role, re.Pattern[str]], ...] = (
    ("vendored", lazy_re(r"(^|/)(3rdparty|third_party|vendor|external|submodules?)/")),
    ("ci", lazy_re(r"(^|/)(\.github|\.githooks|\.ci|\.buildkite|\.circleci|ci)/")),
    ("docs", lazy_re(r"(^|/)docs?/|\.(md|rst)$")),
    ("example", lazy_re(r"(^|/)(examples?|recipes?|tutorials?|demos?)/")),
    # before tests: `op_tests/op_benchmarks/…` measures, it does not check
    ("benchmark", lazy_re(r"(^|/)(bench\w*|benchmarks?|op_benchmarks|profil\w*)/|(^|/)(bench|benchmark|profile)_[^/]*\.py$|"
                             r"_bench\.py$")),
    ("test", lazy_re(r"(^|/)(tests?|op_tests|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")),
    ("tooling", lazy_re(r"(^|/)(scripts?|tools?|tooling|utils/tuning|tuning|hooks|docker|cmake)/|(^|/)setup\.py$|"
                           r"(^|/)(tune|tuning)_[^/]*\.py$|_tune\.py$|(^|/)gen_[^/]*\.py$")),
)
NOT_LIBRARY: frozenset[Role] = frozenset({"test", "docs", "ci", "benchmark", "example", "tooling", "vendored"})
ARCH_DIR = lazy_re(r"(?:^|/)(gfx\d{3,4}[a-z]?)(?:/|_)", re.IGNORECASE)
MAIN_GUARD = lazy_re(r"^if\s+__name__\s*==\s*['\"]__main__['\"]", re.MULTILINE)
ENV_READS = {"os.environ.get", "os.getenv", "environ.get", "getenv", "os.environ.setdefault"}
UPCAST = r"\.float\(\)|\.double\(\)|(to|type)\([^)]*(float32|float64|double)"  # git grep -E
# A file that already reads this many knobs of one prefix family is where that family is registered.
REGISTRY_MIN_SIBLINGS = 3


class RepoFacts:
    """Facts about one repository at the base and head of one review."""

    def __init__(self, profile: Profile, source: Source, changed: Iterable[str] = ()) -> None:
        self.profile = profile
        self.source = source
        self._changed = [p for p in changed if p.endswith(".py")]  # head-side scripts asked about together
        self._importers_searched = False
        self._roles: dict[str, Role] = {}
        self._scripts: dict[str, bool] = {}
        self._upcast_norm: dict[str, bool] = {}
        self._jit_config: dict[str, dict[str, list[str]] | None] = {}

    # ------------------------------------------------------------------ paths

    def role(self, path: str) -> Role:
        """What a path is to the project: shipped library code, or tests, docs, CI, benchmarks, examples, tooling."""
        role = self._roles.get(path)
        if role is None:
            role = next((r for r, pattern in ROLE_PATTERNS if pattern.search(path)), "library")
            if role == "library" and self.profile.is_test(path):
                role = "test"
            self._roles[path] = role
        return role

    def is_library(self, path: str, side: Side = "head") -> bool:
        """Code users of the project import or run inside their process; a Python program that nothing
        imports (a CLI with a `__main__` entry) is tooling even where its directory name does not say so."""
        if self.role(path) in NOT_LIBRARY:
            return False
        return not (path.endswith(".py") and self.is_script(path, side))

    def is_tooling(self, path: str, side: Side = "head") -> bool:
        """Not shipped library code and not a test: docs, examples, benchmarks, CI, scripts, tuning CLIs."""
        return self.role(path) != "test" and not self.is_library(path, side)

    def is_script(self, path: str, side: Side = "head") -> bool:
        """A Python file with a `__main__` entry that no other non-test module imports: run, not imported."""
        key = f"{side}:{path}"
        if key not in self._scripts:
            self._scripts[key] = self._is_script(path, side)
        return self._scripts[key]

    def _is_script(self, path: str, side: Side) -> bool:
        text = self.source.text(path, side)
        if not text or not _has_main_guard(text):
            return False
        name = _module_leaf(path)
        leaf = re.escape(name)
        importer = (rf"^\s*(from\s+\S*\b{leaf}\s+import|import\s+\S*\b{leaf}\b|"
                    rf"from\s+\S+\s+import\s+[^#]*\b{leaf}\b)")
        if _word(name):
            # every importing line names the module as a word: git searches for the word (one search for
            # every script of the PR, a third of this pattern's cost), and the pattern reads its lines
            if side == "head" and not self._importers_searched:
                self._importers_searched = True
                leaves = self.searched_words()
                if len(set(leaves)) > 1:
                    self.source.grep_words(leaves, "head", ("*.py",))
            reads = re.compile(importer, re.ASCII)
            importers = [h for h in self.source.grep(leaf, side, ("*.py",), word=True) if reads.search(h[2])]
        else:
            importers = self.source.grep(importer, side, ("*.py",), files_only=True)
        return not any(p != path and self.role(p) not in ("test", "benchmark") for p, _, _ in importers)

    def searched_words(self) -> list[str]:
        """The names `is_script` will search the head tree for: the module of each changed file that may
        be a script (the review plans its one search of the tree with them)."""
        return [_module_leaf(p) for p in self._changed if self._may_be_script(p)]

    def _may_be_script(self, path: str) -> bool:
        """A changed head file whose script question would search for its importers by word."""
        if self.role(path) in NOT_LIBRARY or not _word(_module_leaf(path)):
            return False
        # read without recording an unreadable file as not checked: this only plans a search
        text = self.source.catfile.read(self.source.head, path).text
        return bool(text and _has_main_guard(text))

    @staticmethod
    def arch_of(path: str) -> str | None:
        """The arch a kernel directory or file exists for (`…/gfx1250/…`, `…_gfx950.py`), else None."""
        match = ARCH_DIR.search(path) or re.search(r"_(gfx\d{3,4}[a-z]?)\.\w+$", path, re.IGNORECASE)
        return match.group(1).lower() if match else None

    # ------------------------------------------------------------------ environment knobs

    def env_names(self, path: str, side: Side) -> set[str]:
        """Environment variable names a Python file reads."""
        tree = self.source.python(path, side)
        return {name for _, name in env_reads(tree)} if tree is not None else set()

    def registered_family(self, path: str, name: str) -> str | None:
        """The knob family `name` joins when `path` already reads several knobs of that family on base.

        `AITER_CONFIG_FHMOE` added next to twenty `AITER_CONFIG_*` reads in `aiter/jit/core.py` is a
        registry entry (a config file path), not a new behaviour switch."""
        prefix = _family(name)
        if prefix is None:
            return None
        base_names = self.env_names(path, "base")
        siblings = [n for n in base_names if n != name and n.startswith(prefix)]
        return prefix if len(siblings) >= REGISTRY_MIN_SIBLINGS else None

    # ------------------------------------------------------------------ compiled ops

    def compiled_sources(self, module: str, side: Side = "head") -> list[str] | None:
        """The C++ sources aiter's JIT builds `module` from (`@compile_ops("module_x")` → the `srcs` of
        `aiter/jit/optCompilerConfig.json`, `{AITER_CSRC_DIR}` read as `csrc/`; a directory entry ends in
        `/`). None when the repository has no such config, the module is not in it, or one of its
        sources lives under a root this does not resolve (`{CK_DIR}`): the binding is then not read whole."""
        if side not in self._jit_config:
            data = self.source.json_object(JIT_CONFIG, side)
            self._jit_config[side] = None if data is None else {
                name: [_jit_path(s) for s in entry.get("srcs") or []] for name, entry in data.items()
                if isinstance(entry, dict)}
        table = self._jit_config[side]
        srcs = table.get(module) if table is not None else None
        if not srcs or any(s is None for s in srcs):
            return None
        return srcs

    # ------------------------------------------------------------------ tests

    def upcast_references_are_the_norm(self, test_path: str) -> bool:
        """Whether the tests beside `test_path` (its top test directory, on base) routinely upcast to fp32:
        where a quarter or more of them do, an fp32 reference is the project's practice, not a slip."""
        top = test_path.split("/", 1)[0] if "/" in test_path else ""
        if top not in self._upcast_norm:
            specs = (top,) if top else ()
            tests = {p for p in self.source.files("base", specs) if p.endswith(".py") and self.role(p) == "test"}
            upcasting = {p for p, _, _ in self.source.grep(UPCAST, "base", specs, files_only=True)}
            self._upcast_norm[top] = len(tests) >= 4 and len(upcasting & tests) * 4 >= len(tests)
        return self._upcast_norm[top]


JIT_CONFIG = "aiter/jit/optCompilerConfig.json"
JIT_ROOTS = {"AITER_CSRC_DIR": "csrc"}


def _jit_path(entry: object) -> str | None:
    """`f'{AITER_CSRC_DIR}/py_itfs_ck/mha_fwd_kernels.cu'` → `csrc/py_itfs_ck/mha_fwd_kernels.cu`."""
    if not isinstance(entry, str):
        return None
    text = re.sub(r"^f?(['\"])(.*)\1$", r"\2", entry.strip())
    match = re.fullmatch(r"\{(\w+)\}/(.+)", text)
    if match is None or match.group(1) not in JIT_ROOTS or "{" in match.group(2):
        return None
    return f"{JIT_ROOTS[match.group(1)]}/{match.group(2)}"


def _has_main_guard(text: str) -> bool:
    """`if __name__ == "__main__":` at the start of a line. The strings every match holds are looked for
    first (`may_match`): the line-anchored pattern tries every line of every changed file."""
    return may_match(MAIN_GUARD)(text) and MAIN_GUARD.search(text) is not None


def _module_leaf(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".py")


def _word(name: str) -> bool:
    """An ASCII identifier: what `git grep -w` and `Source.grep_words` search for as one word."""
    return name.isidentifier() and name.isascii()


def _family(name: str) -> str | None:
    """`AITER_CONFIG_FHMOE` → `AITER_CONFIG_`: the prefix up to the last underscore, when it has two segments."""
    parts = name.split("_")
    return "_".join(parts[:2]) + "_" if len(parts) >= 3 else None


def env_reads(tree: ast.Module, constants: dict[str, str] | None = None) -> list[tuple[ast.AST, str]]:
    """Every environment read in a module (`os.environ.get(...)`, `os.getenv(...)`, `os.environ[...]`),
    with the variable name, resolving names bound to module-level string constants."""
    out: list[tuple[ast.AST, str]] = []
    for node in index_of(tree).of_type((ast.Call, ast.Subscript)):
        key: ast.AST | None = None
        if isinstance(node, ast.Call) and dotted_name(node.func) in ENV_READS and node.args:
            key = node.args[0]
        elif isinstance(node, ast.Subscript) and dotted_name(node.value) in {"os.environ", "environ"} \
                and isinstance(node.ctx, ast.Load):
            key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            out.append((node, key.value))
        elif isinstance(key, ast.Name) and constants and key.id in constants:
            out.append((node, constants[key.id]))
    return out
