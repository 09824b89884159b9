"""Repository hygiene: develop=True registrations, throw-away scripts, kpack on gfx950, new dependencies."""
from __future__ import annotations

import ast
import re
import sys
from typing import Iterable

from ..lang import Unparsable
from ..lang.index import index_of
from ..lang.python import dotted_name, parse, string_constants, walk
from ..repofacts import JIT_CONFIG
from ..lang.regex import lazy_re
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput

# ----------------------------------------------------------------------------- develop-flag (HK8)

OPS_HEADER = "csrc/include/rocm_ops.hpp"
STREAM_MACRO = "AITER_SET_STREAM_PYBIND"
STREAM_SETTER = '"_set_current_hip_stream"'  # what the develop path calls on the module (the macro defines it)


@detector("develop-flag")
def develop_flag(review: ReviewInput) -> Iterable[Finding]:
    config: dict | None = None
    for f in review.changed("python", include_tests=False):
        if not any(re.search(r"\bdevelop\s*=\s*True", t) for _, t in f.added):
            continue
        tree = review.source.python(f.path)
        if tree is None:
            continue
        added = f.added_lines
        constants: dict[str, str] | None = None
        for node in index_of(tree).of_type(ast.Call):
            flag = next((k for k in node.keywords if k.arg == "develop"), None)
            if flag is None or not (isinstance(flag.value, ast.Constant) and flag.value.value is True):
                continue
            if flag.value.lineno not in added and node.lineno not in added:
                continue
            callee = dotted_name(node.func).rsplit(".", 1)[-1]
            if callee != "compile_ops" and not re.search(r"build|compile|module", callee):
                continue
            first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "_md_name"), None)
            module = ""
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                module = first.value
            elif isinstance(first, ast.Name):
                if constants is None:
                    constants = string_constants(tree)
                module = constants.get(first.id, "")
            op = _decorated(tree, node)
            if config is None:
                config = review.source.json_object(JIT_CONFIG) or {}
            if config and (not module or _torch_free_module(review, config, module)):
                continue  # on the torch-free pybind path develop=True is the module's binding mode (or unknown)
            where = f" for module `{module}`" if module else ""
            if module and config:
                why = (f"`{module}`'s pybind source does not register `{STREAM_MACRO}` (directly or through a "
                       f"macro of {OPS_HEADER}), so the module is not on the torch-free binding path that "
                       "develop=True selects")
            else:
                why = "develop=True is a development setting"
            yield Finding(
                rule="develop-flag", path=f.path, line=flag.value.lineno,
                problem=f"`{op or callee}` is registered with `develop=True`{where}; {why}.",
                impact="The op is built and bound in development mode for every user, and the flag does not match "
                       "how its module is compiled.",
                action="Author must drop develop=True, or convert the module's pybind source to the torch-free "
                       "binding (aiter_tensor_t + AITER_SET_STREAM_PYBIND) in the same PR.",
                tag="verified" if module and config else "inferred",
                evidence=[Evidence(f.path, node.lineno, ast.unparse(node)[:140])],
            )


def _decorated(tree: ast.Module, call: ast.Call) -> str:
    for node in index_of(tree).of_type((ast.FunctionDef, ast.AsyncFunctionDef)):
        if call in node.decorator_list:
            return node.name
    return ""


def _torch_free_module(review: ReviewInput, config: dict, module: str) -> bool:
    entry = config.get(module)
    if not isinstance(entry, dict):
        return True  # not a configured JIT module (generated or built elsewhere): cannot judge
    sources = [re.sub(r"^f?['\"]|['\"]$", "", s) for s in entry.get("srcs") or [] if isinstance(s, str)]
    pybinds = [s.replace("{AITER_CSRC_DIR}", "csrc") for s in sources if "pybind" in s]
    if not pybinds:
        return True
    header = review.source.text(OPS_HEADER) or ""
    for path in pybinds:
        text = review.source.text(path)
        if text is None:
            return True  # the binding source is not in the tree (generated): cannot judge
        if STREAM_MACRO in text or STREAM_SETTER in text:
            return True
        for macro in set(re.findall(r"\b([A-Z][A-Z0-9_]*_PYBIND)\b", text)):
            body = _macro_body(header, macro)
            if STREAM_MACRO in body or STREAM_SETTER in body:
                return True
    return False


def _macro_body(header: str, name: str) -> str:
    match = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}\b(.*?)(?<!\\)$", header, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


# ----------------------------------------------------------------------------- temp-script (HK1)

MAINTAINED_DIR = lazy_re(r"(^|/)(\.github|\.githooks|\.ci|ci|docker|dockerfiles?|scripts?|tools?|tooling|build|cmake|tests?|"
                            r"bin|hooks|install|packaging|deploy|examples?|docs?|recipes?)/", re.IGNORECASE)
TEMP_NAME = lazy_re(r"^(runperf|test_local_)", re.IGNORECASE)
SCRATCH_NAME = lazy_re(r"^(tmp|temp|scratch|debug|untitled|playground)([_.\-].*)?\.(py|sh)$|"
                          r"^(foo|bar|aaa|xxx|test\d*|try\d*|my_?test\d*|[a-z]\d?)\.(py|sh)$|"
                          r"\.(log|orig|rej|bak|swp|swo|prof|nsys-rep|rocprof)$|^nohup\.out$", re.IGNORECASE)


@detector("temp-script")
def temp_script(review: ReviewInput) -> Iterable[Finding]:
    for f in review.files:
        if f.status != "added":
            continue
        name = f.path.rsplit("/", 1)[-1]
        kind = ""
        if TEMP_NAME.match(name):
            kind = "its name marks a local run helper"
        elif SCRATCH_NAME.search(name):
            kind = "its name marks a scratch or output file"
        elif name.endswith(".sh") and not MAINTAINED_DIR.search(f.path) and not _script_folder(review, f.path):
            kind = "it is a shell script outside the CI, docker, scripts and tooling directories"
        if not kind:
            continue
        refs = [p for p, _, _ in review.source.grep(name, "head", (), fixed=True, files_only=True) if p != f.path]
        if refs and not TEMP_NAME.match(name):
            continue  # wired into the project: a workflow, Makefile, doc or another script runs it
        personal = _personal_paths(review, f.path)
        yield Finding(
            rule="temp-script", path=f.path, line=1,
            problem=f"New file `{f.path}` looks temporary: {kind}, and nothing else in the tree refers to it"
                    + (f"; it hard-codes {personal}" if personal else "") + ".",
            impact="A local run helper ships to every user, rots as the code moves on and is mistaken for "
                   "a supported entry point.",
            action="Author must remove it before merge, or move it to the maintained scripts location and "
                   "document what it is for.",
            tag="verified" if TEMP_NAME.match(name) or personal else "inferred",
        )


def _script_folder(review: ReviewInput, path: str) -> bool:
    """The directory already keeps shell scripts (one from before this PR, or several), so it is where the
    project puts them."""
    directory = path.rsplit("/", 1)[0] if "/" in path else ""
    others = [p for p in review.source.files("head", (directory,) if directory else ())
              if p != path and p.endswith(".sh") and p.rsplit("/", 1)[0] == directory] if directory else \
        [p for p in review.source.top_level_names() if p.endswith(".sh") and p != path]
    return len(others) >= 2 or any(review.source.exists(p, "base") for p in others)


def _personal_paths(review: ReviewInput, path: str) -> str:
    text = review.source.text(path) or ""
    match = re.search(r"(/home/\w[\w.-]*|/Users/\w[\w.-]*|/root/\w[\w/.-]*|HIP_VISIBLE_DEVICES=\d)", text)
    return f"`{match.group(1)}`" if match else ""


# ----------------------------------------------------------------------------- kpack1-on-gfx950 (HK4)

KPACK = lazy_re(r"""["']?\bkpack\b["']?\s*[:=]\s*["']?(\d+)""")


@detector("kpack1-on-gfx950")
def kpack_on_gfx950(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("config", "python"):
        code = review.code.get(f.path)
        added = code.added if code else f.added
        in_file = "gfx950" in f.path.lower()
        header = []
        if f.path.lower().endswith(".csv"):
            lines = review.source.lines(f.path)
            header = [c.strip().lower() for c in lines[0].split(",")] if lines else []
        hits: list[tuple[int, str, str]] = []
        for n, text in added:
            if text.lstrip().startswith(("#", "//")):
                continue
            if header and "kpack" in header and n > 1:
                cells = [c.strip() for c in text.split(",")]
                i = header.index("kpack")
                if i < len(cells) and cells[i].isdigit() and (in_file or any("gfx950" in c for c in cells)):
                    hits.append((n, cells[i], text.strip()))
                continue
            m = KPACK.search(text)
            if m and (in_file or "gfx950" in text.lower()) and not (f.language == "python" and not in_file):
                hits.append((n, m.group(1), text.strip()))
        if not hits:
            continue
        first = hits[0]
        values = sorted({v for _, v, _ in hits})
        yield Finding(
            rule="kpack1-on-gfx950", path=f.path, line=first[0], end_line=hits[-1][0],
            problem=f"{len(hits)} added gfx950 tuning entr{'y sets' if len(hits) == 1 else 'ies set'} `kpack` "
                    f"(value{'s' if len(values) > 1 else ''} {', '.join(values)}), e.g. `{first[2][:100]}`.",
            impact="Triton's AMD backend deprecates kpack from gfx950 on and forces it to 1 (warning when it is "
                   "not 1), so the key tunes nothing on this arch; aiter removed it from its gfx950 configs (#4662).",
            action="Reviewer should ask the author to drop `kpack` from the gfx950 entries (re-tune if a kpack "
                   "other than 1 was what the measurements used).",
            tag="verified",
            evidence=[Evidence(f.path, n, t[:120]) for n, _, t in hits[:5]],
        )


# ----------------------------------------------------------------------------- new-dependency (HK11/HK7)

REQUIREMENTS = lazy_re(r"(^|/)(requirements[^/]*|constraints[^/]*)\.(txt|in)$")
REQ_NAME = lazy_re(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
ROCM_SYSTEM = {"amdsmi", "hip", "rccl", "rocm_smi", "rocmsmi", "pyrsmi", "hipblaslt", "rocprofiler", "roctracer",
               "rocblas", "miopen", "hipsparselt", "mori", "rocshmem"}
IMPORT_TO_DIST = {"yaml": "pyyaml", "cv2": "opencv-python", "sklearn": "scikit-learn", "PIL": "pillow",
                  "google": "protobuf", "attr": "attrs", "dateutil": "python-dateutil", "zmq": "pyzmq",
                  "msgspec": "msgspec", "setuptools_scm": "setuptools-scm", "git": "gitpython",
                  "Crypto": "pycryptodome", "bs4": "beautifulsoup4", "jwt": "pyjwt", "serial": "pyserial",
                  "OpenSSL": "pyopenssl", "magic": "python-magic", "dotenv": "python-dotenv",
                  "pkg_resources": "setuptools", "flash_attn": "flash-attn", "importlib_metadata": "importlib-metadata"}
RUNTIME_EXCLUDE = lazy_re(r"(^|/)(tests?|op_tests|testing|benchmarks?|op_benchmarks|bench|examples?|docs?|"
                             r"scripts?|tools?|\.github|3rdparty|third_party)/|(^|/)(setup|conftest)\.py$|"
                             r"(^|/)(bench|benchmark|profile)_[^/]*\.py$")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


Candidate = tuple[str, int, str, bool, str]  # path, line, statement, guarded, module


def _undeclared_imports(review: ReviewInput) -> tuple[dict[str, Candidate], list[str]]:
    """The third-party modules the PR's added imports reach (by top-level name), and those of them no
    requirements file, setup.py or pyproject.toml declares (once per review)."""
    return review.once("_undeclared_imports", _find_undeclared)


def _undeclared_names(review: ReviewInput) -> list[str]:
    """The undeclared modules' names: whether the base tree imported them already is read from the lines
    of the review's planned search of the head tree (`ReviewInput.base_word_lines`)."""
    return [root for root in _undeclared_imports(review)[1] if root.isidentifier() and root.isascii()]


@detector("new-dependency", searches=_undeclared_names)
def new_dependency(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed():
        if review.profile.is_static(f.path) and not REQUIREMENTS.search(f.path):
            continue
        if REQUIREMENTS.search(f.path):
            yield from _requirements(review, f)
        elif f.path.endswith("pyproject.toml"):
            yield from _pyproject(review, f)
        elif f.path.rsplit("/", 1)[-1] == "setup.py":
            yield from _setup_py(review, f)
    yield from _new_imports(review)


def _req_name(line: str) -> str:
    text = line.split("#", 1)[0].strip()
    if not text or text.startswith(("-", "--")):
        return ""
    egg = re.search(r"#egg=([\w.-]+)|^([\w.-]+)\s*@", line)
    if egg:
        return _canon(egg.group(1) or egg.group(2))
    if "://" in text:
        return ""
    m = REQ_NAME.match(text)
    return _canon(m.group(1)) if m else ""


def _dep_finding(f_path: str, line: int, name: str, where: str, text: str) -> Finding:
    return Finding(
        rule="new-dependency", path=f_path, line=line,
        problem=f"New dependency `{name}` added to {where}: `{text.strip()[:100]}`.",
        impact="Every install now pulls the package, its transitive dependencies and their version "
               "constraints; a conflict or a yanked release breaks installation for all users.",
        action="Reviewer should ask why the package is needed, whether it is optional (then guard the import), "
               "and whether its version bound is deliberate.",
        tag="verified",
        evidence=[Evidence(f_path, line, text.strip()[:120])],
    )


def _requirements(review: ReviewInput, f) -> Iterable[Finding]:
    if review.profile.is_static(f.path) or re.search(r"(^|/)docs?/", f.path):
        return  # documentation build requirements do not reach users of the package
    base_text = review.base_text(f, "")
    before = {_req_name(line) for line in (base_text or "").splitlines()} - {""}
    new: list[tuple[int, str, str]] = []
    for n, text in f.added:
        name = _req_name(text)
        if name and name not in before and name not in {x for _, x, _ in new}:
            new.append((n, name, text))
    if not new:
        return
    n, name, text = new[0]
    finding = _dep_finding(f.path, n, name, f"`{f.path}`", text)
    if len(new) > 1:
        finding.problem = (f"{len(new)} new dependencies added to `{f.path}`: "
                           + ", ".join(f"`{x}`" for _, x, _ in new[:8]) + (" …" if len(new) > 8 else "") + ".")
        finding.evidence = [Evidence(f.path, ln, t.strip()[:120]) for ln, _, t in new[:5]]
    yield finding


def _pyproject_deps(text: str | None, installed: bool = False, build: bool = True) -> set[str]:
    """The names a pyproject.toml declares: all of them, or (installed) only those a plain install pulls:
    the dependencies, and the build requirements when `build` (never an optional extra)."""
    if not text:
        return set()
    # imported here: only a PR that edits pyproject.toml reads TOML, and the parser costs every other
    # review a few milliseconds of start-up
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, published as tomli before it joined the standard library in 3.11
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return set()
    specs: list[str] = []
    project = data.get("project") or {}
    specs += list(project.get("dependencies") or [])
    if not installed:
        for extra in (project.get("optional-dependencies") or {}).values():
            specs += list(extra or [])
    if build:
        specs += list((data.get("build-system") or {}).get("requires") or [])
    poetry = ((data.get("tool") or {}).get("poetry") or {})
    names = {_canon(k) for k, v in (poetry.get("dependencies") or {}).items()
             if k.lower() != "python" and not (installed and isinstance(v, dict) and v.get("optional"))}
    return names | {_req_name(s) for s in specs if isinstance(s, str)} - {""}


def _pyproject(review: ReviewInput, f) -> Iterable[Finding]:
    base = review.base_text(f, "")
    # a new pyproject.toml builds a new package: its build requirements are that package's tooling, which
    # no install of the project pulls; an optional extra is pulled only by who asks for it
    new = _pyproject_deps(review.source.text(f.path), installed=True, build=bool(base)) - _pyproject_deps(base)
    lines = [(n, t) for n, t in f.added if not t.lstrip().startswith("#")]
    for name in sorted(new - _already_imported(review, new)):
        hit = next(((n, t) for n, t in lines if _names_dist(t, name)), None)
        if hit:
            yield _dep_finding(f.path, hit[0], name, f"`{f.path}`", hit[1])


def _names_dist(line: str, name: str) -> bool:
    """The line spells the distribution `name` (any of - _ . between its parts) as a whole word."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-]*[\w])", _canon(line)) is not None


def _already_imported(review: ReviewInput, names: set[str]) -> set[str]:
    """Newly declared names the base tree's code already imports: the PR writes an existing dependency
    down (fla: triton), which is no new package for any user."""
    out: set[str] = set()
    for name in names:
        modules = {m for m, d in IMPORT_TO_DIST.items() if _canon(d) == name} | {name.replace("-", "_")}
        for module in modules:
            if not module.isidentifier():
                continue
            reads = re.compile(rf"^\s*(import|from)\s+{re.escape(module)}(\.|\s|$)", re.ASCII)
            if any(reads.search(text) for path, _, text in review.source.grep(module, "base", ("*.py",), word=True)
                   if not RUNTIME_EXCLUDE.search(path)):
                out.add(name)
                break
    return out


def _requirement_strings(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            name = _req_name(sub.value)
            if name and re.match(r"^[\w.-]+\s*(?:[<>=!~\[;]|$)", sub.value.strip()):
                out.add(name)
    return out


def _setup_requires(text: str | None, installed: bool = False) -> set[str]:
    """The requirement strings of a setup.py: every one (a move between variables or into a helper
    function changes nothing), or (installed) those `install_requires` / `setup_requires` reach, following
    names to their assignments and calls to this file's functions."""
    if not text:
        return set()
    try:
        tree = parse(text)
    except Unparsable:
        return set()
    if not installed:
        return _requirement_strings(tree)
    index = index_of(tree)
    roots = [node.value for node in index.of_type(ast.keyword) if node.arg in ("install_requires", "setup_requires")]
    if not roots:  # no setup() keyword to follow: the lists named like requirements (never an extra)
        roots = [node.value for node in index.of_type(ast.Assign) if any(
            isinstance(t, ast.Name) and re.search(r"requires?|deps|dependencies", t.id, re.IGNORECASE)
            and not re.search(r"extra|optional|dev|test|doc|bench", t.id, re.IGNORECASE) for t in node.targets)]
    functions = {n.name: n for n in index.of_type((ast.FunctionDef, ast.AsyncFunctionDef))}
    out: set[str] = set()
    seen: set[str] = set()
    while roots:
        value = roots.pop()
        out |= _requirement_strings(value)
        for sub in walk(value):
            name = sub.id if isinstance(sub, ast.Name) else None
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in functions:
                if sub.func.id not in seen:
                    seen.add(sub.func.id)
                    roots += [r.value for r in walk(functions[sub.func.id])
                              if isinstance(r, ast.Return) and r.value is not None]
            if name is None or name in seen:
                continue
            seen.add(name)
            for node in index.of_type((ast.Assign, ast.AugAssign, ast.Call)):  # its assignments, `+=` and .append/.extend calls
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                        for t in node.targets):
                    roots.append(node.value)
                elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                    roots.append(node.value)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in ("append", "extend", "insert") and \
                        isinstance(node.func.value, ast.Name) and node.func.value.id == name:
                    roots += node.args
    return out


def _setup_py(review: ReviewInput, f) -> Iterable[Finding]:
    new = _setup_requires(review.source.text(f.path), installed=True) - _setup_requires(review.base_text(f, ""))
    lines = [(n, t) for n, t in f.added if not t.lstrip().startswith("#")]
    for name in sorted(new - _already_imported(review, new)):
        hit = next(((n, t) for n, t in lines if _names_dist(t, name)), None)
        if hit:
            yield _dep_finding(f.path, hit[0], name, "setup.py's requirements", hit[1])


def _find_undeclared(review: ReviewInput) -> tuple[dict[str, Candidate], list[str]]:
    from ..evidence.symbols import (
        _statements,  # the guarded-statement walk the symbols evidence uses
    )

    candidates: dict[str, Candidate] = {}
    for f in review.changed("python", include_tests=False):
        if RUNTIME_EXCLUDE.search(f.path):
            continue
        code = review.code.get(f.path)
        lines = code.added if code else f.added
        if not any(re.match(r"\s*(import|from)\s", t) for _, t in lines):
            continue
        tree = review.source.python(f.path)
        if tree is None:
            continue
        added = {n for n, _ in lines}
        # only statements holding an added line can hold an added import
        for node, guarded in _statements(tree.body, lines=sorted(added)):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno not in added:
                continue
            if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
                continue
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                root = module.split(".", 1)[0]
                if not root or root in sys.stdlib_module_names or root in ("__future__",) or root in candidates:
                    continue
                if root in review.source.top_level_names() or _sibling_module(review, f.path, root):
                    continue
                commented = _has_comment(review, f.path, node.lineno)
                if guarded and (root not in ROCM_SYSTEM or commented):
                    continue  # optional: the author handles its absence
                if any(c.value == root for c in index_of(tree).of_type(ast.Constant)):
                    continue  # the module names the package as data (find_spec, package_name = "…"): it checks
                candidates[root] = (f.path, node.lineno, ast.unparse(node), guarded, module)
    if not candidates:
        return candidates, []
    declared = _declared(review)
    local: set[str] | None = None  # the whole tree's listing, read only for an import no file declares
    undeclared: list[str] = []
    for root, (_, _, _, _, module) in candidates.items():
        dist = _canon(IMPORT_TO_DIST.get(root, root))
        if dist in declared or _spelled_in(module, declared):
            continue  # declared by a requirements file, setup.py or pyproject.toml
        if local is None:
            local = _tree_module_names(review)
        if root not in local:  # else a module of this tree reached through sys.path (scripts, tests)
            undeclared.append(root)
    return candidates, undeclared


def _new_imports(review: ReviewInput) -> Iterable[Finding]:
    candidates, undeclared = _undeclared_imports(review)
    # a module the base tree imported already (the PR moves or repeats the import) is not new. Every importing
    # line names the module as a word: the lines holding the words (the PR's own files' base sides and, for the
    # rest, the review's planned search of the head tree), and the pattern reads them
    words = _undeclared_names(review)
    lines = review.base_word_lines(words) if words else {}
    for root in undeclared:
        path, line, statement, guarded, _ = candidates[root]
        pattern = rf"^\s*(import|from)\s+{re.escape(root)}(\.|\s|$)"
        if root in words:
            reads = re.compile(pattern, re.ASCII)
            imported = any(reads.search(text) for _, _, text in lines[root])
        else:
            imported = bool(review.source.grep(pattern, "base", ("*.py",), files_only=True))
        if imported:
            continue  # already imported elsewhere on base: not new to the project
        rocm = root in ROCM_SYSTEM
        yield Finding(
            rule="new-dependency", path=path, line=line,
            problem=f"`{statement[:100]}` imports `{root}`, which no requirements file, setup.py or pyproject.toml "
                    "declares and no other module of the project imported before"
                    + (" (a ROCm system package, imported without a try/except ImportError guard and comment)"
                       if rocm else "") + ".",
            impact="On an environment without the package, importing this module fails with ModuleNotFoundError.",
            action=("Author must guard the import with try/except ImportError and a comment saying it is a ROCm "
                    "system package." if rocm else
                    "Author must declare the package in the requirements (or make the import optional with "
                    "try/except ImportError)."),
            trigger=f"importing {path} where `{root}` is not installed",
            tag="verified",
            evidence=[Evidence(path, line, statement[:120])],
        )


def _spelled_in(module: str, declared: set[str]) -> bool:
    """A declared distribution spells the imported module, or its leading dotted parts down to the top-level
    package, as consecutive parts of its name: `cuda.tile` is `cuda-tile`, `cutlass` part of `nvidia-cutlass-dsl`."""
    parts = _canon(module).split("-")
    for n in range(len(parts), len(_canon(module.split(".", 1)[0]).split("-")) - 1, -1):
        word = "-".join(parts[:n])
        if any(f"-{word}-" in f"-{d}-" for d in declared):
            return True
    return False


def _tree_module_names(review: ReviewInput) -> set[str]:
    """Every module or package name that exists somewhere in the head tree."""
    names: set[str] = set()
    for path in review.source.files("head"):
        parts = path.split("/")
        if parts[-1].endswith(".py"):
            names.add(parts[-1][:-3])
        names.update(parts[:-1])
    return names


def _sibling_module(review: ReviewInput, path: str, root: str) -> bool:
    """A script importing a module next to it (sys.path[0] is the script's directory)."""
    directory = path.rsplit("/", 1)[0] if "/" in path else ""
    prefix = f"{directory}/" if directory else ""
    return review.source.catfile.read(review.source.rev("head"), f"{prefix}{root}.py").text is not None or \
        review.source.catfile.read(review.source.rev("head"), f"{prefix}{root}").reason.startswith("is a tree")


def _has_comment(review: ReviewInput, path: str, line: int) -> bool:
    lines = review.source.lines(path)
    window = lines[max(0, line - 3):line + 1]
    return any("#" in text for text in window)


def _declared(review: ReviewInput) -> set[str]:
    names: set[str] = set()
    found = review.source.grep(".", "head", (":(glob)**/requirements*.txt", ":(glob)**/requirements*.in",
                                             ":(glob)**/pyproject.toml", ":(glob)**/setup.py"), files_only=True)
    files = [p for p, _, _ in found if p.count("/") <= 2]
    for path in files:
        text = review.source.text(path)
        if path.endswith(".toml"):
            names |= _pyproject_deps(text)
        elif path.endswith("setup.py"):
            names |= _setup_requires(text)
        else:
            names |= {_req_name(line) for line in (text or "").splitlines()}
    return names - {""}
