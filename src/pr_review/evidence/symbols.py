"""symbols: first-party imports (and module attributes) the PR adds that do not resolve on the head side.

Read with `ast` on the head side, so every file and definition the PR adds or renames already counts
(aiter#5254's renames are simply there). An import resolves when its module is a `.py` file, a package
(`__init__.py`) or a namespace directory of the head tree, and the imported name is a definition, an
import, an assignment or a submodule of it; `import *`, `__all__` and a module-level `__getattr__` make
every name resolvable. Imports guarded by `try/except ImportError` are the author's own fallback and
are not reported. A missing module is reported as a line (it may be generated at build time); a name
missing from a module that does exist is the hallucinated-symbol finding.
"""
from __future__ import annotations

import ast
import re
from bisect import bisect_left

from ..detectors.base import ReviewInput
from ..lang.index import index_of
from ..lang.python import walk
from ..lang.regex import lazy_re
from ..source import Source, lines_holding
from . import Artifact, collector
from ._util import blob_kind, short
from ..model import field, record

DEF_RE = lazy_re(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
ASSIGN_RE = lazy_re(r"^[ \t]*([\w][\w, ()\[\]*]*?)[ \t]*(?::[^\n=]*)?=(?!=)", re.MULTILINE)
IMPORT_RE = lazy_re(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]+(\([^)]*\)|[^\n#]+)", re.MULTILINE)
GLOBAL_RE = lazy_re(r"\bglobal[ \t]+([\w, ]+)")
OPEN_MARKERS = lazy_re(r"import \*|__all__|def __getattr__|globals\(\)|setattr\(|sys\.modules")
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException", "AttributeError"}


@record
class Unresolved:
    path: str
    line: int
    statement: str
    module: str
    name: str  # '' when the module itself is missing
    reason: str
    module_path: str = ""  # the file the name was looked for in
    kind: str = "import"  # import | attribute


@record
class SymbolsData:
    checked: int = 0
    unresolved: list[Unresolved] = field(default_factory=list)


class Resolver:
    """Module and name look-ups against one side of the tree, cached per review."""

    def __init__(self, review: ReviewInput):
        self.review = review
        self.source: Source = review.source
        self._defs: dict[str, tuple[set[str], bool] | None] = {}
        self._textdefs: dict[str, set[str]] = {}
        self._files: dict[str, tuple[str, str] | None] = {}
        self._has: dict[tuple[str, str], tuple[bool, str]] = {}

    def first_party(self, module: str) -> bool:
        return module.split(".", 1)[0] in self.source.top_level_names()

    def module_file(self, module: str) -> tuple[str, str] | None:
        """(kind, path) for a dotted module: ('file', a/b.py), ('package', a/b/__init__.py) or ('namespace', a/b)."""
        if module not in self._files:
            self._files[module] = self._module_file(module)
        return self._files[module]

    def _module_file(self, module: str) -> tuple[str, str] | None:
        rel = module.replace(".", "/")
        if blob_kind(self.source, rel + ".py") == "blob":
            return "file", rel + ".py"
        kind = blob_kind(self.source, rel)
        if kind == "tree":
            if blob_kind(self.source, rel + "/__init__.py") == "blob":
                return "package", rel + "/__init__.py"
            return "namespace", rel
        if blob_kind(self.source, rel + ".pyi") == "blob":
            return "file", rel + ".pyi"
        return None

    def _text_binds(self, path: str, text: str, holding: str, name: str) -> bool:
        """Whether a module binds `name` as a regex reading of its text finds it (a definition, an assignment, an
        import, a `global`). Definitions, assignments and globals are read on the lines holding `name` alone:
        their patterns match within one line, and the name they bind is written on it (the assignment
        pattern, tried at every line of a 6,000-line module, was most of this evidence's time): `holding`,
        the lines of `text` holding it. Imports, whose parenthesised lists span lines, are read from the whole
        text once per module."""
        if path not in self._textdefs:
            imported_names: set[str] = set()
            for imported in IMPORT_RE.findall(text):
                for part in imported.replace("(", " ").replace(")", " ").split(","):
                    words = part.split()
                    if words:
                        imported_names.add(words[-1])
            self._textdefs[path] = imported_names
        if name in self._textdefs[path]:
            return True
        names: set[str] = set(DEF_RE.findall(holding))
        for targets in ASSIGN_RE.findall(holding):
            names.update(t for t in re.split(r"[\s,()\[\]*]+", targets) if t)
        for declared in GLOBAL_RE.findall(holding):
            names.update(n.strip() for n in declared.split(","))
        return name in names

    def has_name(self, module: str, name: str) -> tuple[bool, str]:
        """Whether `from module import name` resolves; (True, '') when it cannot be decided."""
        if (module, name) not in self._has:
            self._has[(module, name)] = self._has_name(module, name)
        return self._has[(module, name)]

    def _has_name(self, module: str, name: str) -> tuple[bool, str]:
        found = self.module_file(module)
        if found is None:
            return True, ""  # reported as a missing module instead
        kind, path = found
        rel = module.replace(".", "/")
        if kind in ("package", "namespace"):
            if blob_kind(self.source, f"{rel}/{name}.py") == "blob" or blob_kind(self.source, f"{rel}/{name}") == "tree":
                return True, path
            if kind == "namespace":
                return True, path  # a namespace package's attributes cannot be read from the tree
        text = self.source.text(path)
        if text is None:
            return True, path  # unreadable: do not accuse
        holding = lines_holding(text, name)
        if re.search(rf"\b{re.escape(name)}\b", holding) is None:
            # The name is nowhere in the module's text: only a dynamic export can still provide it.
            return bool(OPEN_MARKERS.search(text)), path
        if self._text_binds(path, text, holding, name):
            return True, path
        tree = self.source.python(path)
        if tree is None:
            return True, path
        if path not in self._defs:
            self._defs[path] = module_names(tree)
        names, open_ = self._defs[path]  # type: ignore[misc]
        return (open_ or name in names), path


def module_names(tree: ast.Module) -> tuple[set[str], bool]:
    names: set[str] = set()
    open_ = False

    def visit(body: list[ast.stmt]) -> None:
        nonlocal open_
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
                if stmt.name == "__getattr__":
                    open_ = True
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for node in walk(target):
                        if isinstance(node, ast.Name):
                            names.add(node.id)
                            if node.id == "__all__":
                                open_ = True
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    names.add(alias.asname or alias.name.split(".", 1)[0])
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name == "*":
                        open_ = True
                    else:
                        names.add(alias.asname or alias.name)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or stmt.__class__.__name__ == "TryStar":
                for part in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, part, []) or [])
                for handler in getattr(stmt, "handlers", []) or []:
                    visit(handler.body)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                # globals().update(...) / setattr(sys.modules[__name__], ...) register names dynamically
                func = stmt.value.func
                if isinstance(func, ast.Attribute) and func.attr == "update" and \
                        isinstance(func.value, ast.Call) and getattr(func.value.func, "id", "") in ("globals", "vars") or getattr(func, "id", "") == "setattr":
                    open_ = True
            elif isinstance(stmt, ast.Global):
                names.update(stmt.names)
    visit(tree.body)
    return names, open_


def _package_of(path: str, level: int) -> str | None:
    parts = path.split("/")[:-1]  # the file's directory is its package (also for __init__.py)
    if level - 1 > len(parts):
        return None
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts)


def _statements(body: list[ast.stmt], guarded: bool = False, lines: list[int] | None = None):
    """Every statement with whether an ImportError handler or `if TYPE_CHECKING` encloses it (no expression walk).
    With `lines` (sorted), only the statements whose span holds one of them, and those inside them."""
    for stmt in body:
        if lines is not None:
            at = bisect_left(lines, stmt.lineno)
            if at == len(lines) or lines[at] > (stmt.end_lineno or stmt.lineno):
                continue
        yield stmt, guarded
        if isinstance(stmt, ast.Try) or stmt.__class__.__name__ == "TryStar":
            catches = any(h.type is None or _names_in(h.type) & IMPORT_ERRORS for h in stmt.handlers)
            yield from _statements(stmt.body, guarded or catches, lines)
            for handler in stmt.handlers:  # a fallback import in an ImportError handler is optional too
                yield from _statements(handler.body, guarded or handler.type is None
                                       or bool(_names_in(handler.type) & IMPORT_ERRORS), lines)
            yield from _statements(stmt.orelse, guarded, lines)
            yield from _statements(stmt.finalbody, guarded, lines)
        elif isinstance(stmt, ast.If):
            yield from _statements(stmt.body, guarded or _type_checking(stmt.test), lines)
            yield from _statements(stmt.orelse, guarded, lines)
        else:
            for part in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, part, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    yield from _statements(inner, guarded, lines)
            for case in getattr(stmt, "cases", []) or []:
                yield from _statements(case.body, guarded, lines)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _names_in(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


@collector("symbols")
def symbols(review: ReviewInput) -> Artifact:
    data = SymbolsData()
    resolver = Resolver(review)
    seen: set[tuple[str, str, str]] = set()
    for f in review.changed("python"):
        code = review.code[f.path].added if f.path in review.code else f.added
        added = {n for n, _ in code}
        if not added or not _worth_parsing(review, f.path, code):
            continue
        tree = review.source.python(f.path)
        if tree is None:
            continue
        bindings: dict[str, str] = {}  # local name -> dotted first-party module/attribute it is bound to
        # every import of the file, in source order (a later one rebinds a name)
        for node in sorted(index_of(tree).of_type((ast.Import, ast.ImportFrom)), key=lambda n: (n.lineno, n.col_offset)):
            module = _module_of(node, f.path)
            if module is None:
                continue
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        bindings[alias.asname or alias.name] = f"{module}.{alias.name}"
            else:
                for alias in node.names:
                    if alias.asname:
                        bindings[alias.asname] = alias.name
        # the statements holding an added line: the added imports, with their guards, and the simple statements
        simple_added: list[ast.stmt] = []
        for node, guarded in _statements(tree.body, lines=sorted(added)):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                if not hasattr(node, "body"):
                    simple_added.append(node)
                continue
            module = _module_of(node, f.path)
            if module is None or node.lineno not in added or guarded:
                continue
            _check_import(resolver, f.path, node, module, data, seen)
        if bindings and simple_added:
            _attributes(review, resolver, f.path, simple_added, added, bindings, data, seen)
    lines: list[str] = []
    if not data.checked:
        lines.append("The PR adds no first-party import, so there was nothing to resolve.")
    elif not data.unresolved:
        lines.append(f"IMPORTS RESOLVED: all {data.checked} first-party import(s) and module attribute(s) the PR "
                     "adds resolve against the head tree.")
    else:
        lines.append(f"UNRESOLVED: {len(data.unresolved)} of {data.checked} first-party import(s)/attribute(s) "
                     "the PR adds do not resolve against the head tree.")
        for u in data.unresolved:
            lines.append(f"{u.path}:{u.line}: {u.reason}")
            lines.append(f"  added by: {u.statement}")
    return Artifact("symbols", lines, data)


IMPORT_LINE = lazy_re(r"^\s*(from\s+\S+\s+import\b|import\s)")
BOUND_NAMES = lazy_re(r"^[ \t]*from[ \t]+\S+[ \t]+import[ \t]+\(?([^\n#]+)|^[ \t]*import[ \t]+[\w.]+[ \t]+as[ \t]+(\w+)",
                         re.MULTILINE)


def _worth_parsing(review: ReviewInput, path: str, code: list[tuple[int, str]]) -> bool:
    """A file needs its tree only when it adds an import, or uses an imported name as `name.attr`."""
    if any(IMPORT_LINE.match(t) for _, t in code):
        return True
    text = review.source.text(path) or ""
    names: set[str] = set()
    for listed, alias in BOUND_NAMES.findall(text):
        for part in (listed or alias).replace(")", "").split(","):
            words = part.split()
            if words:
                names.add(words[-1])
    names = {n for n in names if n.isidentifier()}
    if not names:
        return False
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names)) + r")\.")
    return any(pattern.search(t) for _, t in code)


def _module_of(node: ast.Import | ast.ImportFrom, path: str) -> str | None:
    if isinstance(node, ast.Import):
        return ""
    if node.level:
        package = _package_of(path, node.level)
        if package is None:
            return None
        return ".".join(p for p in (package, node.module or "") if p)
    return node.module or None


def _check_import(resolver: Resolver, path: str, node: ast.Import | ast.ImportFrom, module: str,
                  data: SymbolsData, seen: set[tuple[str, str, str]]) -> None:
    statement = short(ast.unparse(node), 100)
    if isinstance(node, ast.Import):
        for alias in node.names:
            if not resolver.first_party(alias.name):
                continue
            data.checked += 1
            if resolver.module_file(alias.name) is None and (path, alias.name, "") not in seen:
                seen.add((path, alias.name, ""))
                data.unresolved.append(Unresolved(path, node.lineno, statement, alias.name, "",
                                                  f"module `{alias.name}` exists neither in the head tree nor in this diff"))
        return
    if not resolver.first_party(module):
        return
    if resolver.module_file(module) is None:
        data.checked += 1
        if (path, module, "") not in seen:
            seen.add((path, module, ""))
            data.unresolved.append(Unresolved(path, node.lineno, statement, module, "",
                                              f"module `{module}` exists neither in the head tree nor in this diff"))
        return
    for alias in node.names:
        if alias.name == "*":
            continue
        data.checked += 1
        ok, where = resolver.has_name(module, alias.name)
        if not ok and (path, module, alias.name) not in seen:
            seen.add((path, module, alias.name))
            data.unresolved.append(Unresolved(path, node.lineno, statement, module, alias.name,
                                              f"`{alias.name}` is defined neither in {where} nor in this diff", where))


def _attributes(review: ReviewInput, resolver: Resolver, path: str, statements: list[ast.stmt], added: set[int],
                bindings: dict[str, str], data: SymbolsData, seen: set[tuple[str, str, str]]) -> None:
    """`mod.name` on added lines where `mod` is bound by an import to a first-party module file."""
    text = review.source.text(path) or ""
    rebound: dict[str, bool] = {}
    for stmt in statements:
        for node in walk(stmt):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and isinstance(node.ctx, ast.Load) and node.lineno in added):
                continue
            name = node.value.id
            module = bindings.get(name)
            if module is None or not resolver.first_party(module):
                continue
            found = resolver.module_file(module)
            if found is None or found[0] == "namespace":
                continue
            if name not in rebound:
                rebound[name] = bool(re.search(  # within a line: read on the lines holding the name
                    rf"(?<![\w.]){re.escape(name)}[ \t]*(?::[^=\n]*)?=(?!=)|\bfor[ \t]+{re.escape(name)}\b",
                    lines_holding(text, name)))
            if rebound[name]:
                continue  # the alias is rebound somewhere: it may not be the module at this line
            data.checked += 1
            ok, where = resolver.has_name(module, node.attr)
            if not ok and (path, module, node.attr) not in seen:
                seen.add((path, module, node.attr))
                data.unresolved.append(Unresolved(path, node.lineno, short(ast.unparse(node), 100), module, node.attr,
                                                  f"`{name}.{node.attr}`: `{node.attr}` is defined neither in "
                                                  f"{where} nor in this diff", where, "attribute"))
