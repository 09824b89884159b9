"""API-surface rules decided from Python syntax on both sides of the diff and the head tree's callers.

- api-propagation-incomplete (B6 aiter / B5 ATOM), sub-types:
  param-discard — a parameter the PR adds that the body never reads;
  attr-missing — a new `getattr(obj, "key", 0)` whose silent zero fallback changes behaviour.
- removed-api-still-used, sub-types (measured apart: the call fails the moment it runs, so its findings
  earn trust on their own, while the sub-types above need judgement):
  param-removed — a parameter the PR removes that callers in the head tree still pass;
  rename — a public def the PR removes or renames while importers/callers remain, with no shim.
- defaulted-param-dead (E2 aiter / E3 ATOM): a parameter the PR adds with a default that no caller
  in the tree passes, so the new behaviour never activates.
"""
from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Iterable

from ..git.diff import ChangedFile
from ..lang.index import index_of
from ..lang.python import (
    DEVICE_DECORATORS, FUNCTION_TYPES, MARKER_BASES, call_tail, decorated_with, decorator_name, dotted_name,
    innermost_function, imported_module_path, local_names, qualified_functions, touches, walk
)
from ..model import Evidence, Finding, record
from ..source import word_regex
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

Func = ast.FunctionDef | ast.AsyncFunctionDef


@record
class _Index:
    """Per-module facts several checks need, computed once per parsed tree."""

    owner_class: dict[ast.AST, ast.ClassDef]  # method → its class
    uncalled: set[str]  # names loaded somewhere other than as the callee of a call
    classes: list[ast.ClassDef]


_INDEX: weakref.WeakKeyDictionary[ast.Module, _Index] = weakref.WeakKeyDictionary()


def _index(tree: ast.Module) -> _Index:
    found = _INDEX.get(tree)
    if found is None:
        owner: dict[ast.AST, ast.ClassDef] = {}
        callees: set[int] = set()
        index = index_of(tree)
        classes = index.of_type(ast.ClassDef)
        for node in classes:
            for item in node.body:
                if isinstance(item, FUNCTION_TYPES):
                    owner[item] = node
        for node in index.of_type(ast.Call):
            callees.add(id(node.func))
            if isinstance(node.func, ast.Subscript):
                callees.add(id(node.func.value))  # kernel[grid](...) launches the kernel
        loads = [n.id for n in index.of_type(ast.Name) if type(n.ctx) is ast.Load and id(n) not in callees]
        found = _Index(owner, set(loads), classes)
        _INDEX[tree] = found
    return found

# Method names whose callers cannot be found by name (called through the object or the framework).
UNTRACEABLE = {"forward", "__call__", "__init__", "__new__", "__enter__", "__exit__", "__getitem__", "__setitem__",
               "__getattr__", "__repr__", "__str__", "__eq__", "__hash__", "__len__", "__iter__", "__next__",
               "__post_init__", "__del__", "backward", "setup", "run", "main", "apply", "build", "get", "update",
               "step", "process", "execute", "call", "load", "save", "reset", "close", "start", "stop"}
# A discarded parameter with one of these names most likely controls output correctness (🔴 per the seeds).
CORRECTNESS_PARAM = lazy_re(r"mask|scale|mapping|bias|stride|offset|indices|index|indptr|dtype|layout|"
                               r"weight|out\b|output|residual|eps|topk|group|expert|causal|window|sink|softcap",
                               re.IGNORECASE)
# Beyond what RepoFacts calls tooling: Python under csrc/ generates code at build time, reference
# implementations exist for tests to compare against, and tuning helpers (`mxfp4_v2_tune_utils.py`,
# `gemm_tuner.py`) serve the tuning CLIs; none is an API consumers pass parameters to.
NOT_API = lazy_re(r"(^|/)(csrc|torch_ref|reference)/|(^|/)\w*tun(e|ing)\w*\.py$")
STUB_DECORATORS = {"abstractmethod", "overload", "compile_ops", "abstractproperty", "override_abstract"}


def parameters_of(func: Func) -> list[ast.arg]:
    a = func.args
    return a.posonlyargs + a.args + a.kwonlyargs


def param_names(func: Func) -> list[str]:
    """The names of `func`'s parameters, in order (not *args/**kwargs)."""
    return [a.arg for a in parameters_of(func)]


def defaults_of(func: Func) -> dict[str, ast.AST]:
    a = func.args
    positional = a.posonlyargs + a.args
    out = {arg.arg: d for arg, d in zip(positional[len(positional) - len(a.defaults):], a.defaults)}
    out.update({arg.arg: d for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return out


def _is_stub(func: Func) -> bool:
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                         and isinstance(s.value.value, str))]
    if not body:
        return True
    if len(body) == 1:
        s = body[0]
        if isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
            return True
        if isinstance(s, ast.Raise):
            return True
        if isinstance(s, ast.Return) and (s.value is None or isinstance(s.value, ast.Constant) or (
                isinstance(s.value, (ast.Dict, ast.List, ast.Tuple, ast.Set)) and not ast.unparse(s.value).strip("{}[]()"))):
            return True  # a default hook (`return {}`) meant to be overridden
    decorators = {decorator_name(d).rsplit(".", 1)[-1] for d in func.decorator_list}
    return bool(decorators & STUB_DECORATORS)


CACHE_DECORATORS = {"lru_cache", "cache", "cached", "memoize", "memoized"}


def _cached(func: Func) -> bool:
    """`@functools.lru_cache` / `@cache`: the arguments are the key of what the function returns (a kernel
    builder compiled once per `M`), so an argument the body never reads still selects the cached entry."""
    return any(decorator_name(d).rsplit(".", 1)[-1] in CACHE_DECORATORS for d in func.decorator_list)


def names_read(func: Func) -> tuple[set[str], bool]:
    """Names read anywhere in the body (nested scopes included), and whether the body can see its
    arguments dynamically (locals(), vars(), inspect frames)."""
    names: set[str] = set()
    dynamic = False
    for node in walk(func):
        if node is func:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Load, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.Call) and dotted_name(node.func) in ("locals", "vars", "inspect.currentframe",
                                                                       "sys._getframe", "inspect.getcallargs"):
            dynamic = True
    # defaults and decorators are evaluated outside the body
    return names, dynamic


def _class_of(tree: ast.Module, func: Func) -> ast.ClassDef | None:
    return _index(tree).owner_class.get(func)


def _method_signature_shared(review: ReviewInput, tree: ast.Module, cls: ast.ClassDef, func: Func, param: str) -> bool:
    """True when another class (a base class, or a sibling implementing the same protocol) defines the
    same method with the same parameter: the signature is forced, and ignoring the value is structural."""
    for node in _index(tree).classes:
        if node is not cls:
            for item in node.body:
                if isinstance(item, FUNCTION_TYPES) and item.name == func.name and param in param_names(item):
                    return True
    if _patched_at_run_time(review, cls, func):
        return True
    if _sibling_protocol(review, cls, func, param):
        return True
    bases = _project_bases(cls)
    if not bases:
        return False
    # the files that define a base class (one grep), not every file defining a method of this name: a
    # `forward` is defined in hundreds of files, and the base's file could fall past any cap on those
    base_files = _files(_matching(review, bases, _class_pattern(bases)))
    for path in base_files[:20]:
        other = review.source.python(path)
        if other is None:
            continue
        for node in index_of(other).of_type(ast.ClassDef):
            if node.name in bases:
                for item in node.body:
                    if isinstance(item, FUNCTION_TYPES) and item.name == func.name:
                        return True  # the base defines it: an override, whatever the base's parameters
    # A base outside the tree (a vLLM/SGLang interface, torch.autograd.Function) forces the signature of
    # the hooks it calls; nn.Module does not force forward()'s parameters.
    external = [b for b in bases if b not in MODULE_BASES
                and not _matching(review, [b], _class_pattern([b]))]
    return bool(external) and not func.name.startswith("_")


def _sibling_protocol(review: ReviewInput, cls: ast.ClassDef, func: Func, param: str, limit: int = 16) -> bool:
    """Another class elsewhere in the tree defines the same method with the same parameter (metadata
    builders answering `builder.prepare_mtp_decode(..., positions=...)`, attention impls called as
    `self.impl.forward(q, k, v, positions, q_scale, qkv)`): the signature is the protocol's, and an
    implementation that does not need the value still has to accept it. A `forward_native` whose class's
    `forward` takes the parameter mirrors that signature too (the CustomOp convention)."""
    stem = func.name.split("_", 1)[0] if func.name.startswith("forward_") else None
    if stem and any(isinstance(item, FUNCTION_TYPES) and item is not func and (item.name == stem or item.name.startswith(stem + "_"))
                    and param in param_names(item) for item in cls.body):
        return True
    defining = {p for p, _, _ in _matching(review, [func.name], _method_pattern(func.name))}
    if len(defining) < 1:
        return False
    # only files that both define the method and name the parameter can hold a sibling with it
    naming = set(review.source.grep_words([param])[param])
    # past `limit` files the protocol is wide (every fla layer's `forward` takes `output_attentions`): the
    # first `limit` of them are read, not none
    for path in sorted(defining & naming)[:limit]:
        other = review.source.python(path)
        if other is None:
            continue
        for node in index_of(other).of_type(ast.ClassDef):
            if node.name == cls.name:
                continue
            for item in node.body:
                if isinstance(item, FUNCTION_TYPES) and item.name == func.name \
                        and param in param_names(item):
                    return True
    return False


def _patched_at_run_time(review: ReviewInput, cls: ast.ClassDef, func: Func) -> bool:
    """Some module replaces the method on the class (`Cls.method = fn`, `setattr(Cls, "method", fn)`, a
    plugin patch): the body is a default and the signature is the replacement's contract too."""
    return bool(_matching(review, [cls.name], _patch_pattern(cls.name, func.name)))


def _patch_pattern(cls: str, method: str) -> str:
    return (rf"\b{re.escape(cls)}\.{re.escape(method)}\s*=[^=]|"
            rf"setattr\(\s*{re.escape(cls)}\s*,\s*[\"']{re.escape(method)}[\"']")


def _class_pattern(names: Iterable[str]) -> str:
    return rf"^\s*class ({'|'.join(sorted(map(re.escape, set(names))))})\b"


def _files(hits: list[tuple[str, int, str]]) -> list[str]:
    """The files of a line search, in git's order (what the same search with files_only answers)."""
    return list(dict.fromkeys(p for p, _, _ in hits))


def _project_bases(cls: ast.ClassDef) -> list[str]:
    bases = [dotted_name(b).rsplit(".", 1)[-1] for b in cls.bases]
    return [b for b in bases if b and b not in MARKER_BASES]


def _method_pattern(name: str) -> str:
    return rf"^\s+(async\s+)?def {re.escape(name)}\s*\("


def _matching(review: ReviewInput, names: Iterable[str], pattern: str) -> list[tuple[str, int, str]]:
    """The head tree's lines matching `pattern`, in git's order, for a pattern no line matches without one of
    `names` as a word (a `def name(`, `class Base`, `Cls.method =`): read from the word search for the names,
    which `_plan_searches` makes once for all of them, instead of a regex search of every line of the tree
    (git answers a search for words several times faster than one for `^\\s*def …`)."""
    regex = re.compile(pattern, re.ASCII)  # as git reads it: ASCII classes, the C locale
    hits = {h for name in dict.fromkeys(names) for h in review.source.grep(re.escape(name), "head", ("*.py",), word=True)}
    return sorted((h for h in hits if regex.search(h[2])), key=lambda h: (h[0].encode(), h[1]))


def searched_words(review: ReviewInput) -> set[str]:
    """Every word the API checks will look up in the head tree's Python files: each changed function's
    name (its siblings, its other implementations), its project decorators, its class and the class's
    bases, the functions a new value is handed to, the new parameters a check may follow to other files,
    and every def the PR removes or strips of a parameter (who still calls it). Read from the diff and
    the two trees alone, without a search (the review plans its one search of the tree with them), so
    over every changed non-test file: which of them are library code is itself a search. Once per review."""
    return review.once("_api_searched_words", _searched_words)


def _searched_words(review: ReviewInput) -> set[str]:
    words: set[str] = set()
    for f, tree in review.python_files(include_tests=False):
        base_tree = review.base_python(f)
        for sig in _changed_signatures(f, tree, base_tree):
            func = sig.func
            if sig.base is None:
                continue  # a new function: neither rule asks about its parameters
            base_params = set(param_names(sig.base))
            added = [a.arg for a in parameters_of(func) if a.arg not in base_params and a.arg not in ("self", "cls")]
            if not added:
                continue
            cls = _class_of(tree, func)
            defaults = defaults_of(func)
            words.update(target[0] for name in added if name in defaults  # where a new value is handed on
                         for target in _keyword_targets(func, name) or () if target[0])
            decorators = [decorator_name(d).rsplit(".", 1)[-1] for owner in (func, cls) if owner is not None
                          for d in owner.decorator_list]
            decorators = [d for d in decorators if d and d not in PLAIN_DECORATORS]
            words.update(decorators)
            if decorators or cls is not None:
                words.add(func.name)
            if cls is not None:  # a sibling implementing the method may be looked for by these
                words.update([cls.name, *_project_bases(cls), *added])
            else:  # a function's unread parameter that names the output is looked for at its callers
                reads = names_read(func)[0]
                words.update(name for name in added if name not in reads and CORRECTNESS_PARAM.search(name))
    removals, gone_defs = _removals(review)
    words.update([*(r.func.name for r in removals), *(g.base.name for g in gone_defs)])
    return {n for n in words if n.isidentifier()}


def _plan_searches(review: ReviewInput) -> None:
    """Ask git, once for the review, for every line naming a word the API checks will look up in the head
    tree (`searched_words`); the checks read their lines from this one search (`_matching`, `grep_words`)
    instead of searching the tree once per function, parameter, decorator and class: a search reads every
    Python blob of the tree, ~0.1 s on aiter, whatever it looks for."""
    words = searched_words(review)
    if len(words) > 1:  # one word is searched by the check that asks, if one asks
        review.once("_api_searches_planned", lambda r: r.source.grep_words(sorted(words)))


def _removals(review: ReviewInput) -> tuple[list[_Removal], list[_GoneDef]]:
    """The parameters and public defs the PR removes from non-test files, once per review (the search plan
    names them, the checks judge those of library files). Files that only lose lines count too: a PR may
    delete a public def and nothing else in its file."""
    return review.once("_api_removals", _removals_in)


def _removals_in(review: ReviewInput) -> tuple[list[_Removal], list[_GoneDef]]:
    removals: list[_Removal] = []
    gone_defs: list[_GoneDef] = []
    for f, tree in review.python_files(include_tests=False, removed_only=True):
        base_tree = review.base_python(f)
        if base_tree is not None:
            removals += _param_removals(f, tree, base_tree)
            gone_defs += _gone_defs(review, f, tree, base_tree)
    return removals, gone_defs


MODULE_BASES = MARKER_BASES | {"Module", "nn.Module", "Enum", "IntEnum", "NamedTuple", "dataclass", "Exception",
                               "ValueError", "RuntimeError", "dict", "list", "tuple", "str", "int"}


@record
class _Sig:
    qualname: str
    func: Func
    base: Func | None


def _changed_signatures(f: ChangedFile, tree: ast.Module, base_tree: ast.Module | None) -> list[_Sig]:
    """Functions whose `def` header (name, parameters) intersects the added lines."""
    added = f.added_lines
    base_funcs = qualified_functions(base_tree) if base_tree is not None else {}
    out = []
    for qualname, func in qualified_functions(tree).items():
        header_end = func.body[0].lineno - 1 if func.body else func.lineno
        header = set(range(func.lineno, max(header_end, func.lineno) + 1))
        if header & added:
            out.append(_Sig(qualname, func, base_funcs.get(qualname)))
    return out


# --------------------------------------------------------------------------------------------
# callers in the head tree
# --------------------------------------------------------------------------------------------

@record
class _Call:
    path: str
    node: ast.Call


def _callers(review: ReviewInput, names: set[str], max_files: int = 150, keywords: set[str] | None = None,
             ) -> tuple[dict[str, list[_Call]], set[str]]:
    """Calls by callee name in the head tree's Python files, and names also referenced without a call
    (passed as a callback, partial, registry entry — their callers are unknown). With `keywords`, for a
    caller that reads only calls passing one of them by keyword: a file whose text never names one is
    not parsed (aiter 0159273263: a 26 KB kernel module calling `k_step` without any of the six removed)."""
    calls: dict[str, list[_Call]] = {n: [] for n in names}
    uncalled: set[str] = set()
    if not names:
        return calls, uncalled
    pattern = "|".join(sorted(re.escape(n) for n in names))
    paths = [p for p, _, _ in review.source.grep(pattern, "head", ("*.py",), word=True, files_only=True)]
    naming = re.compile("|".join(word_regex(k).pattern for k in sorted(keywords))) if keywords else None
    for path in paths[:max_files]:
        if naming is not None and not _may_name(review.source.text(path), naming):
            continue
        with review.source.python_once(path) as tree:  # up to 150 callers: none kept for the rest of the review
            if tree is not None:
                _calls_in(tree, path, names, calls, uncalled)
    return calls, uncalled


def _may_name(text: str | None, naming: re.Pattern[str]) -> bool:
    """Whether a file's text may spell a keyword `naming` finds. An ASCII text spells one only where `naming`
    matches; any other text may, in characters the parser folds (it reads identifiers NFKC-normalised: `ｐ=`
    passes `p`)."""
    return text is not None and (not text.isascii() or naming.search(text) is not None)


def _calls_in(tree: ast.Module, path: str, names: set[str], calls: dict[str, list[_Call]], uncalled: set[str]) -> None:
    """`_callers` for one file: its calls of `names` (through import aliases), and its references to them
    without a call."""
    call_funcs = set()
    aliases = _import_aliases(tree, names)
    index = index_of(tree)
    for node in index.of_type(ast.Call):
        callee = node.func.value if isinstance(node.func, ast.Subscript) else node.func  # kernel[grid](...)
        name = aliases.get(callee.id, callee.id) if isinstance(callee, ast.Name) else \
            callee.attr if isinstance(callee, ast.Attribute) else None
        if name in calls:
            calls[name].append(_Call(path, node))
            call_funcs.add(id(callee))
        # a dotted name ends with its callee's last name: only one ending in `partial` is read whole
        if name == "super" or (call_tail(node).endswith("partial") and dotted_name(node.func).endswith("partial")):
            for arg in node.args[:1]:
                ref = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else None
                if ref in names:
                    uncalled.add(ref)
    for node in index.of_type((ast.Name, ast.Attribute)):
        if type(node.ctx) is ast.Load and id(node) not in call_funcs:
            ref = aliases.get(node.id, node.id) if isinstance(node, ast.Name) else node.attr
            if ref in names:
                uncalled.add(ref)


def _import_aliases(tree: ast.Module, names: set[str]) -> dict[str, str]:
    """Local names a module binds to one of `names` with `from m import f as g`: `g(...)` calls `f`.
    (`import m as mm` needs nothing: `mm.f(...)` still names `f`.)"""
    return {a.asname: a.name for node in index_of(tree).of_type(ast.ImportFrom) for a in node.names
            if a.asname and a.name in names}


def passes(call: ast.Call, func: Func, param: str) -> bool | None:
    """Whether `call` passes `param` to `func`: True/False, or None when it cannot tell (*args/**kwargs)."""
    if any(k.arg == param for k in call.keywords):
        return True
    if any(k.arg is None for k in call.keywords):
        return None
    positional = [a.arg for a in func.args.posonlyargs + func.args.args]
    if param in positional:
        index = positional.index(param)
        if positional and positional[0] in ("self", "cls") and isinstance(call.func, (ast.Attribute, ast.Name)):
            index -= 1  # bound method call: self is implicit
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        return len(call.args) > index
    return False


# --------------------------------------------------------------------------------------------
# api-propagation-incomplete
# --------------------------------------------------------------------------------------------

@detector("api-propagation-incomplete", "removed-api-still-used", searches=searched_words)
def api_propagation_incomplete(review: ReviewInput) -> Iterable[Finding]:
    _plan_searches(review)
    for f, tree in review.python_files(include_tests=False):
        if not api_path(review, f.path):
            continue
        base_tree = review.base_python(f)
        yield from _param_discard(review, f, tree, base_tree)
        if any("getattr(" in t for _, t in f.added):
            yield from _attr_missing(f, tree, base_tree)
    removals, gone_defs = ([x for x in found if api_path(review, x.f.path)] for found in _removals(review))
    if not removals and not gone_defs:
        return
    # one tree-wide look-up for every name involved, however many files the PR touches
    defs = _defs_by_name(review, {r.func.name for r in removals} | {g.base.name for g in gone_defs})
    yield from _param_removed(review, removals, defs)
    yield from _removed_defs(review, [g for g in gone_defs if not defs.get(g.base.name)])


def api_path(review: ReviewInput, path: str) -> bool:
    """Library code whose functions other code calls: not tooling, tests, docs or build-time generators."""
    return review.facts.is_library(path) and not NOT_API.search(path)


def _discarded(review: ReviewInput, tree: ast.Module, sig: _Sig, conventions: set[str] = frozenset()) -> list[ast.arg]:
    func = sig.func
    if _is_stub(func) or _cached(func):
        return []  # a memoised function reads every argument: each one is part of its cache key
    base_params = set(param_names(sig.base)) if sig.base is not None else set()
    reads, dynamic = names_read(func)
    if dynamic or (sig.base is not None and _dropped_everything(sig.base)):
        return []  # the base took any argument in a catch-all it never read: naming them drops nothing new
    out = []
    cls = None
    for arg in parameters_of(func):
        name = arg.arg
        if name in base_params or name in ("self", "cls") or name.startswith("_") or name in reads:
            continue
        if name in conventions:
            continue  # the file already carries this parameter unread elsewhere: a shared calling convention
        if sig.base is not None and _renamed_unread(sig.base, func, name):
            continue  # an unread base parameter under a new name: the value was dropped before the PR too
        if cls is None:
            cls = _class_of(tree, func) or False
        if cls and _method_signature_shared(review, tree, cls, func, name):
            continue
        if cls and _twin_method_reads(cls, func, name):
            continue  # a verifier taking its implementation's argument list: the implementation reads it
        if _consumed_by_decorator(review, func, cls or None, name):
            continue  # a decorator of the function (or, for __init__, of its class) takes the value itself
        out.append(arg)
    return out


PLAIN_DECORATORS = {"staticmethod", "classmethod", "property", "cached_property", "lru_cache", "cache", "wraps",
                    "no_grad", "inference_mode", "jit", "autotune", "heuristics", "abstractmethod", "overload",
                    "dataclass", "contextmanager", "setter", "getter", "override", "compile"}


def _twin_method_reads(cls: ast.ClassDef, func: Func, param: str) -> bool:
    """Another method of the class takes the same parameters in the same order and reads `param` (fla's
    `chunk_fwd_h_verifier` beside `chunk_fwd_h`): one argument list is handed to both, and the check
    need not look at every argument the implementation uses."""
    names = param_names(func)
    return any(isinstance(item, FUNCTION_TYPES) and item is not func and param_names(item) == names
               and param in names_read(item)[0] for item in cls.body)


def _consumed_by_decorator(review: ReviewInput, func: Func, cls: ast.ClassDef | None, param: str) -> bool:
    """A decorator of the function, or for `__init__` one of its class (which may replace `__init__`), takes it."""
    return _decorator_consumes(review, func, param) or (
        func.name == "__init__" and cls is not None and _decorator_consumes(review, cls, param))


def _decorator_consumes(review: ReviewInput, func: Func | ast.ClassDef, param: str) -> bool:
    """A project decorator that takes the parameter itself (`@mark_trace` reading `prefix=` from the
    call) makes an unread parameter intentional: the wrapper, not the body, consumes it."""
    routed = False
    for d in func.decorator_list:
        name = decorator_name(d).rsplit(".", 1)[-1]
        if not name or name in PLAIN_DECORATORS:
            continue
        routed = True
        for path, _, _ in _matching(review, [name], rf"^\s*def {re.escape(name)}\s*\(")[:3]:
            if re.search(rf"\b{re.escape(param)}\b", review.source.text(path) or ""):
                return True
    return routed and isinstance(func, FUNCTION_TYPES) and _routed_elsewhere(review, func, param)


def _routed_elsewhere(review: ReviewInput, func: Func, param: str, limit: int = 8) -> bool:
    """A project decorator may route the call to another implementation of the same name (fla's
    `@dispatch('common')` handing `chunk_fwd_h(..., cu_seqlens_cpu=...)` to a context-parallel backend's
    `chunk_fwd_h` method): when one of those reads the parameter, the default does not have to."""
    for path, _, _ in _matching(review, [func.name], _def_pattern(func.name))[:limit]:
        other = review.source.python(path)
        for node in index_of(other).of_type(FUNCTION_TYPES) if other is not None else ():
            if node is not func and node.name == func.name \
                    and param in param_names(node) and param in names_read(node)[0]:
                return True
    return False


def _dropped_everything(base: Func) -> bool:
    """The base `def` took its arguments in `*args`/`**kwargs` and read neither (fla's backend verifiers,
    `def op_verifier(self, *args, **kwargs): return True, None`): every argument was already dropped, so
    parameters the PR names in their place are the same arguments, not new ones some receiver ignores.
    A catch-all the base forwarded (`g(**kwargs)`) is read, and a parameter taken out of it is a new drop."""
    catch_all = [a.arg for a in (base.args.vararg, base.args.kwarg) if a is not None]
    return bool(catch_all) and not _is_stub(base) and not set(catch_all) & names_read(base)[0]


def _renamed_unread(base: Func, func: Func, name: str) -> bool:
    """A parameter of the base the head no longer has, with the same default, that the base body never read
    either (fla's `transpose_state_layout=False` → `state_v_first=False` in a verifier that checks neither,
    moved to another position): a rename of a value that was already dropped, not a new drop."""
    new_default = defaults_of(func).get(name)
    if new_default is None:
        return False
    head_names = set(param_names(func))
    base_reads = names_read(base)[0]
    old_defaults = defaults_of(base)
    return any(a.arg not in head_names and a.arg not in base_reads and a.arg in old_defaults
               and ast.dump(old_defaults[a.arg]) == ast.dump(new_default) for a in parameters_of(base))


def _unread_params(tree: ast.Module | None) -> set[str]:
    """Parameter names some function of the module accepts and never reads (a calling convention such as
    a `prefix` every op wrapper takes for naming)."""
    out: set[str] = set()
    if tree is None:
        return out
    for func in index_of(tree).of_type(FUNCTION_TYPES):
        if not _is_stub(func):
            reads, dynamic = names_read(func)
            if not dynamic:
                out.update(a.arg for a in parameters_of(func) if a.arg not in reads)
    return out


def _param_discard(review: ReviewInput, f: ChangedFile, tree: ast.Module, base_tree: ast.Module | None) -> Iterable[Finding]:
    added = f.added_lines
    conventions: set[str] | None = None
    functions = qualified_functions(tree)
    for sig in _changed_signatures(f, tree, base_tree):
        if sig.base is None or _signature_replaced(sig):
            continue  # a new function, or one whose whole signature the PR replaced (every caller was
            # rewritten with it): no receiver was left behind, its API is reviewed as a whole
        if _forced_signature(tree, sig.func) or _in_kernel(sig.qualname, functions):
            continue  # a kernel's parameters are an argument list its own launcher fills, not an API (below)
        if not _discarded(review, tree, sig):
            continue
        if conventions is None:
            conventions = _unread_params(base_tree)
        for arg in _discarded(review, tree, sig, conventions):
            if arg.lineno not in added and sig.func.lineno not in added:
                continue
            name = arg.arg
            func = sig.func
            # 🔴 only when a value is really lost: the name decides output AND some call passes it by keyword;
            # a knob no caller sets yet is dead code to remove, not a value being ignored
            high = bool(CORRECTNESS_PARAM.search(name)) and _passed_somewhere(review, f.path, func, name)
            new_where = "new function" if sig.base is None else "function"
            yield Finding(
                rule="api-propagation-incomplete", path=f.path, line=arg.lineno if arg.lineno in added else func.lineno,
                problem=f"param-discard: parameter `{name}` of the {new_where} `{sig.qualname}` ({f.path}:{func.lineno}) "
                        "is accepted but never read in its body.",
                impact=f"Callers that pass `{name}` get the same result as without it: the value is silently ignored"
                       + (", and it names something that decides the output." if high else "."),
                action=f"Author must use `{name}` (forward it, or assert/raise on the values the body does not "
                       f"support) or remove it from the signature.",
                trigger=f"a caller passing a non-default `{name}` to `{func.name}` — the body never reads it" if high else None,
                severity="high" if high else "medium",
                evidence=[Evidence(f.path, arg.lineno, f"{name}: {ast.unparse(arg.annotation) if arg.annotation else ''}".rstrip(": "))],
            )


def _signature_replaced(sig: _Sig) -> bool:
    """No parameter of the base `def` survives in the head (`_swizzle_mxfp4(quant_tensor, scale)` became
    `_swizzle_mxfp4(w1, w1_scale, w2, …, w_dtype)`): a new function under an old name, not an API that
    gained a parameter some receiver drops. A base with no parameters (beyond self/cls) is extended, not replaced."""
    old = set(param_names(sig.base)) - {"self", "cls"}
    return bool(old) and not old & set(param_names(sig.func))


def _passed_somewhere(review: ReviewInput, path: str, func: Func, param: str) -> bool:
    """Some call of the function in the head tree passes `param` (by keyword or position), or cannot be
    told (*args/**kwargs). Asked only for a name that decides output, so the caller parse is rare; the
    files are pre-filtered by a grep for the parameter's keyword, then read from the shared parse cache."""
    naming = set(review.source.grep_words([param])[param])
    calls, _ = _callers(review, {func.name}, max_files=30)
    return any(passes(c.node, func, param) is not False for c in calls.get(func.name, [])
               if c.path in naming or any(isinstance(a, ast.Starred) for a in c.node.args)
               or any(k.arg is None for k in c.node.keywords) or len(c.node.args) > 1)


FAKE_NAME = lazy_re(r"fake|_meta$|^meta_|abstract", re.IGNORECASE)


def _forced_signature(tree: ast.Module, func: Func) -> bool:
    """Fakes/meta functions mirror their op's signature, and a function handed to something else as a
    callback (gen_fake=, launch_metadata=, a registry) has its parameters fixed by the caller."""
    if FAKE_NAME.search(func.name):
        return True
    if any(re.search(r"register_fake|impl_abstract|register_meta|register_kernel|hook", decorator_name(d))
           for d in func.decorator_list):
        return True
    return func.name in _index(tree).uncalled


KERNEL_DECORATORS = (*DEVICE_DECORATORS, "autotune", "heuristics")


def _in_kernel(qualname: str, functions: dict[str, Func]) -> bool:
    """The function is a kernel or a helper nested inside one (a FlyDSL `@flyc.kernel` body's `_emit_wmma`):
    its arguments come from the kernel's own code, not from a consumer."""
    parts = qualname.split(".")
    return any((func := functions.get(".".join(parts[:i]))) is not None and _is_kernel(func)
               for i in range(1, len(parts) + 1))


def _is_kernel(func: Func) -> bool:
    """A compiled kernel (`@triton.jit`, `@gluon.jit`, `@flyc.jit`, `@flyc.kernel`). Its parameters are filled
    by the launcher the same PR writes, so one the body ignores is dead launch data (a constexpr kept for a
    cache key, a grid size a persistent variant no longer needs), not a value a consumer passes in vain: the
    launcher's own parameters — the API — are what param-discard checks."""
    return decorated_with(func, KERNEL_DECORATORS)


@record
class _Removal:
    f: ChangedFile
    qualname: str
    callee: str
    func: Func
    gone: list[str]


def _param_removals(f: ChangedFile, tree: ast.Module, base_tree: ast.Module) -> list[_Removal]:
    head_funcs = qualified_functions(tree)
    base_funcs = qualified_functions(base_tree)
    out = []
    edited = f.added_lines | _removed_span(f)
    for qualname, func in head_funcs.items():
        base = base_funcs.get(qualname)
        if base is None or func.name.startswith("_") and func.name != "__init__" or not touches(func, edited):
            continue
        if func.args.kwarg is not None:
            continue  # **kwargs still accepts the old keyword
        kept = {*param_names(func), "self", "cls"}
        gone = [name for name in param_names(base) if name not in kept]
        if gone:
            cls = _class_of(tree, func)
            callee = cls.name if func.name == "__init__" and cls else func.name
            if callee not in UNTRACEABLE:
                out.append(_Removal(f, qualname, callee, func, gone))
    return out


def _defs_by_name(review: ReviewInput, names: set[str]) -> dict[str, set[str]]:
    """Definitions of each name (`def name(`) in the head tree, from one word search, as `path` or — for a second
    definition in the same file (two nested helpers of one name in different closures) — `path:line`, so
    a name defined more than once anywhere is seen as ambiguous."""
    out: dict[str, set[str]] = {n: set() for n in names}
    if not names:
        return out
    alternation = "|".join(sorted(map(re.escape, names)))
    if len(names) > 1:
        review.source.grep_words(sorted(names))  # one word search for all of them, read by _matching
    for path, line, text in _matching(review, names, rf"^\s*(async\s+)?def ({alternation})\s*\("):
        m = re.match(r"\s*(?:async\s+)?def (\w+)", text)
        if m and m.group(1) in out:
            out[m.group(1)].add(f"{path}:{line}" if path in out[m.group(1)] else path)
    return out


def _param_removed(review: ReviewInput, removals: list[_Removal], defs: dict[str, set[str]]) -> Iterable[Finding]:
    removals = [r for r in removals if defs.get(r.func.name, set()) <= {r.f.path}]  # else call sites are ambiguous
    if not removals:
        return
    calls, _ = _callers(review, {r.callee for r in removals}, keywords={p for r in removals for p in r.gone})
    for r in removals:
        f, qualname, func, gone = r.f, r.qualname, r.func, r.gone
        stale = [(c, p) for c in calls.get(r.callee, []) for p in gone if any(k.arg == p for k in c.node.keywords)]
        if not stale:
            continue
        call, param = stale[0]
        others = len({(c.path, c.node.lineno) for c, _ in stale}) - 1
        yield Finding(
            rule="removed-api-still-used", path=f.path, line=func.lineno,
            problem=f"param-removed: `{qualname}` no longer accepts `{param}`, but {call.path}:{call.node.lineno} still "
                    f"passes `{param}=`" + (f" (and {others} more call site(s))." if others else "."),
            impact="That call raises TypeError (unexpected keyword argument) as soon as it runs; "
                   "downstream repositories that pass it break the same way.",
            action=f"Author must update every caller of `{func.name}` or keep accepting `{param}` "
                   "(deprecated, with a warning) for a release.",
            trigger=f"executing {call.path}:{call.node.lineno}: `{func.name}(..., {param}=...)` → TypeError",
            evidence=[Evidence(c.path, c.node.lineno, ast.unparse(c.node)[:120]) for c, _ in stale[:5]],
        )


def _removed_span(f: ChangedFile) -> set[int]:
    """Head lines around the places where the PR deleted lines."""
    from .state import changed_lines
    return changed_lines(f) - f.added_lines


def _module_bindings(tree: ast.Module) -> set[str]:
    """Every name the module binds at top level (defs, classes, assignments, imports), including under
    module-level if/try."""
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        s = stack.pop()
        if isinstance(s, (*FUNCTION_TYPES, ast.ClassDef)):
            names.add(s.name)
        elif isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                names.update(n.id for n in walk(t) if isinstance(n, ast.Name))
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in s.names)
        elif isinstance(s, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                stack.extend(getattr(s, field, []) or [])
            for h in getattr(s, "handlers", []) or []:
                stack.extend(h.body)
    return names


@record
class _GoneDef:
    f: ChangedFile
    tree: ast.Module
    qualname: str
    base: Func
    renamed: str | None


def _gone_defs(review: ReviewInput, f: ChangedFile, tree: ast.Module, base_tree: ast.Module) -> list[_GoneDef]:
    """Public top-level defs and public methods present on base and absent from the head file, with no
    same-named binding (wrapper, alias, re-import) left behind."""
    if f.path.endswith("__init__.py"):
        return []
    head_bound = _module_bindings(tree)
    head_funcs = qualified_functions(tree)
    base_funcs = qualified_functions(base_tree)
    head_text = review.source.text(f.path) or ""
    head_classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    out = []
    for qualname, base in base_funcs.items():
        name = base.name
        depth = qualname.count(".")
        if qualname in head_funcs or name.startswith("_") or name in UNTRACEABLE or depth > 1:
            continue
        if depth == 0 and name in head_bound:
            continue  # a same-named wrapper, alias or re-import keeps the module attribute
        if depth == 1:
            cls = qualname.split(".")[0]
            if cls not in head_classes:
                continue  # the whole class went away or moved: out of scope here
            if re.search(rf"\b{re.escape(name)}\s*=", head_text):
                continue  # re-bound as a class attribute/alias
            if _may_inherit(tree, head_classes[cls], name, f.path):
                continue  # the override went; a base the tree does not hold may still define the method
        out.append(_GoneDef(f, tree, qualname, base, _renamed_to(base, head_funcs, base_funcs, qualname)))
    return out


SOURCE_ROOTS = ("src", "python", "lib")  # directories a package's path may start with, above its import name


def _import_parts(path: str) -> list[str]:
    """A repository path (with or without `.py`) as the parts of its import name: src/liger_kernel/ops/__init__.py
    is liger_kernel.ops."""
    parts = [p for p in path.removesuffix(".py").split("/") if p != "__init__"]
    while parts[:1] and parts[0] in SOURCE_ROOTS:
        parts = parts[1:]
    return parts


def _package(path: str) -> str:
    """The top-level package a repository path belongs to (src/liger_kernel/x.py: liger_kernel)."""
    return next(iter(_import_parts(path)), "")


def _may_inherit(tree: ast.Module, cls: ast.ClassDef, name: str, path: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether `cls` may still have method `name` from a base: a base class of this module that defines it
    (or inherits it), or a base from outside the project (`cutlass.pipeline.PipelineTmaAsync`), whose methods
    the tree does not show. A base the project defines elsewhere is the word search's to decide (a def of
    that name anywhere in the tree keeps the removal quiet)."""
    local = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for base in cls.bases:
        base_name = dotted_name(base.value if isinstance(base, ast.Subscript) else base)
        if base_name in ("", "object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol") or base_name in seen:
            continue
        if base_name in local:
            parent = local[base_name]
            if any(isinstance(s, FUNCTION_TYPES) and s.name == name for s in parent.body) or \
                    _may_inherit(tree, parent, name, path, seen | {base_name}):
                return True
            continue
        found = _binding_import(tree, cls, base_name.split(".")[0])
        if found is None or _package(_module_path(found, path)) != _package(path):
            return True
    return False


def _removed_defs(review: ReviewInput, gone: list[_GoneDef]) -> Iterable[Finding]:
    """rename / removal with references remaining in the head tree."""
    if not gone:
        return
    refs_by_name = _remaining_refs(review, gone)
    for g in gone:
        refs = refs_by_name.get((g.f.path, g.qualname), [])
        if not refs:
            continue
        name, f = g.base.name, g.f
        path, line, text = refs[0]
        what = f"renamed to `{g.renamed}`" if g.renamed else "removed"
        yield Finding(
            rule="removed-api-still-used", path=f.path, line=_anchor_line(f, g.tree, g.base),
            problem=f"rename: `{g.qualname}` was {what} in {f.path} with no shim keeping the old name, but "
                    f"{path}:{line} still uses it" + (f" (and {len(refs) - 1} more)." if len(refs) > 1 else "."),
            impact="Those importers and callers fail with ImportError/AttributeError at import or call time; "
                   "for a public op, downstream repositories (ATOM, vLLM, SGLang) break the same way.",
            action=f"Author must update every reference to `{name}` or keep a same-named wrapper/alias "
                   "(or `fc_name=` pin for a compiled binding) until consumers migrate.",
            trigger=f"running {path}:{line} (`{text.strip()[:80]}`) → `{name}` no longer exists",
            evidence=[Evidence(p, n, t.strip()[:120]) for p, n, t in refs[:5]],
        )


def _anchor_line(f: ChangedFile, tree: ast.Module, base: Func) -> int:
    """A head line near where the def used to be: the first added line at or after its old position."""
    added = sorted(f.added_lines)
    for start, length, h_start, h_len in f.hunks:
        if start <= base.lineno < start + max(length, 1):
            inside = [n for n in added if h_start <= n < h_start + max(h_len, 1)]
            return inside[0] if inside else h_start
    return added[0] if added else 1


def _renamed_to(base: Func, head_funcs: dict[str, Func], base_funcs: dict[str, Func], qualname: str) -> str | None:
    prefix = qualname.rsplit(".", 1)[0] + "." if "." in qualname else ""
    params = param_names(base)
    for q, func in head_funcs.items():
        if q in base_funcs or not q.startswith(prefix) or q.count(".") != qualname.count("."):
            continue
        if param_names(func) == params and params:
            return func.name
    return None


def _remaining_refs(review: ReviewInput, gone: list[_GoneDef]) -> dict[tuple[str, str], list[tuple[str, int, str]]]:
    """Per removed def, the references in the head tree that resolve to it: imports of it from its module
    (or a package that re-exports it), qualified attribute uses, bare uses in its own file, and — for a
    method — attribute calls anywhere (no other def of that name exists, checked by the caller)."""
    by_name: dict[str, list[_GoneDef]] = {}
    for g in gone:
        by_name.setdefault(g.base.name, []).append(g)
    out: dict[tuple[str, str], list[tuple[str, int, str]]] = {}  # by (file, qualname): one name can go from two files
    pattern = "|".join(sorted(map(re.escape, by_name)))
    for hit_path, _, _ in review.source.grep(pattern, "head", ("*.py",), word=True, files_only=True)[:150]:
        with review.source.python_once(hit_path) as tree:  # up to 150 files: none kept for the rest of the review
            if tree is not None:
                _refs_in(tree, hit_path, review.source.lines(hit_path), by_name, out)
    return {k: sorted(set(v)) for k, v in out.items()}


def _refs_in(tree: ast.Module, hit_path: str, lines: list[str], by_name: dict[str, list[_GoneDef]],
             out: dict[tuple[str, str], list[tuple[str, int, str]]]) -> None:
    """`_remaining_refs` for one file: its references that resolve to a removed def."""
    for node in index_of(tree).of_type((ast.ImportFrom, ast.Attribute, ast.Name)):
        if isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names if a.name in by_name]
        elif isinstance(node, ast.Attribute) and node.attr in by_name and isinstance(node.ctx, ast.Load):
            names = [node.attr]
        elif isinstance(node, ast.Name) and node.id in by_name and isinstance(node.ctx, ast.Load):
            names = [node.id]
        else:
            continue
        for name in names:
            for g in by_name[name]:
                if _resolves(node, g, hit_path, tree):
                    n = node.lineno
                    out.setdefault((g.f.path, g.qualname), []).append((hit_path, n, lines[n - 1] if n - 1 < len(lines) else ""))


def _resolves(node: ast.AST, g: _GoneDef, hit_path: str, tree: ast.Module) -> bool:
    method = "." in g.qualname
    parts = set(g.f.path[:-3].split("/"))
    owner = dotted_name(node.value) if isinstance(node, ast.Attribute) else ""
    if not method and owner:
        root, _, rest = owner.partition(".")
        found = _binding_import(tree, node, root)
        if found is not None:
            # `ops.name` / `cute.arch.name` / `tex.name` where this scope binds the root by an import: the
            # import says which module it is (`from vllm._ipex_ops import ipex_ops as ops` is not `import aiter
            # as ops`; `import cutlass.cute as cute` makes `cute.arch` cutlass's, not flash_attn/cute/; `from ..
            # import cpp_extensions as tex` in transformer_engine/pytorch/module/ is not jax/cpp_extensions.py)
            return _names_module_of("/".join(filter(None, (_module_path(found, hit_path), rest.replace(".", "/")))),
                                    g.f)
    if isinstance(node, ast.Name) and any(node.id in local_names(a) for a in index_of(tree).ancestors(node)
                                          if isinstance(a, (*FUNCTION_TYPES, ast.Lambda))):
        return False  # a local of that name (`dropout_mask = rng > p`), not the removed module-level def
    if isinstance(node, ast.ImportFrom):  # from the module or a package above it, never a namesake elsewhere
        return not method and _names_module_of(imported_module_path(hit_path, node), g.f)
    if isinstance(node, ast.Attribute):
        if method:
            found = _binding_import(tree, node, owner.split(".")[0]) if owner else None
            if found is not None and isinstance(found[0], ast.Import):
                return False  # `torch.distributed.broadcast`: a module's function, not a method of this class
            cls = g.qualname.split(".")[0]
            # `OtherClass.name` (a capitalised class reference) is another class's method of that name
            if owner and owner[:1].isupper() and "." not in owner and owner != cls:
                return False
            return not (owner in ("self", "cls") and _foreign_self(tree, node, cls, g.base.name))
        return bool(owner) and bool(set(owner.split(".")) & parts)
    return not method and hit_path == g.f.path


def _names_module_of(module_path: str, f: ChangedFile) -> bool:
    """Whether the module at `module_path` (a repository path without `.py`) is the changed file's, on the
    head side or — for a file the PR moved — the base side, or a package above it (`aiter` re-exporting
    aiter/ops/x.py's names); a source root such as src/ is not part of either name."""
    want = _import_parts(module_path)
    return any(_import_parts(path)[:len(want)] == want for path in filter(None, (f.path, f.old_path)))


def _module_path(found: tuple[ast.Import | ast.ImportFrom, ast.alias], hit_path: str) -> str:
    """The repository path (without `.py`) of the module an import binds a name to, relative imports
    resolved against the importing file at `hit_path`."""
    imp, alias = found
    if isinstance(imp, ast.Import):
        return (alias.name if alias.asname else alias.name.split(".")[0]).replace(".", "/")
    return "/".join(filter(None, (imported_module_path(hit_path, imp), alias.name)))


def _foreign_self(tree: ast.Module, node: ast.AST, cls: str, name: str) -> bool:
    """`self.name` inside a class that cannot be `cls` or a subclass of it: one that defines `name` itself, or whose
    bases are all outside the project (`nn.Module`, `torch.nn.Module`), so `self.register_buffer` of a torch module is
    not a use of `CustomAllreduce.register_buffer` (aiter 33d168a062). A class with a project base may inherit from
    `cls` and still counts."""
    owner = next((a for a in index_of(tree).ancestors(node) if isinstance(a, ast.ClassDef)), None)
    if owner is None or owner.name == cls:
        return False
    if any(isinstance(s, FUNCTION_TYPES) and s.name == name for s in owner.body):
        return True
    bases = [dotted_name(b) or "" for b in owner.bases]
    return all("." in b or b == "object" for b in bases)


def _binding_import(tree: ast.Module, node: ast.AST, name: str) -> tuple[ast.Import | ast.ImportFrom, ast.alias] | None:
    """The import (and its alias) that binds `name` in the innermost scope around `node` that imports it
    (enclosing functions first, then the module); None when no import binds it there."""
    index = index_of(tree)
    imports = [n for n in index.of_type(ast.Import) + index.of_type(ast.ImportFrom)
               if any((a.asname or a.name.split(".")[0]) == name for a in n.names)]
    if not imports:
        return None
    scopes = [a for a in index.ancestors(node) if isinstance(a, (*FUNCTION_TYPES, ast.Lambda))] + [tree]
    for scope in scopes:
        for imp in imports:
            if index.scope_of(imp) is scope:
                return imp, next(a for a in imp.names if (a.asname or a.name.split(".")[0]) == name)
    return None


ZERO_DEFAULTS = (0, 0.0)
# Objects that carry a model's or a run's configuration, and keys that size or count something: a missing
# key there silently shrinks the model (no shared experts, no rope dims) instead of failing.
CONFIG_OBJECT = lazy_re(r"^(args|config|cfg|conf|hf|hf_config|hf_text_config|text_config|model_config|"
                           r"\w+_config|\w+_cfg|hparams|params|model_args|model_cfg|arch_config)$", re.IGNORECASE)
COUNT_KEY = lazy_re(r"^(n|num)_(shared_|routed_|local_|kv_|key_value_|attention_|hidden_|nextn_predict_)?"
                       r"(experts|heads|layers|experts_per_tok|expert_groups|groups)$|"
                       r"^(head_dim|v_head_dim|qk_rope_head_dim|qk_nope_head_dim|hidden_size|intermediate_size|"
                       r"moe_intermediate_size|kv_lora_rank|q_lora_rank|vocab_size|topk_group|n_group|"
                       r"first_k_dense_replace|num_experts_per_tok|moe_topk|top_k)$", re.IGNORECASE)
VALIDATOR = lazy_re(r"strict|check|validate|require|assert|expect|ensure", re.IGNORECASE)


def _attr_missing(f: ChangedFile, tree: ast.Module, base_tree: ast.Module | None) -> Iterable[Finding]:
    added = f.added_lines
    getattr_lines = {n for n, text in f.added if "getattr" in text}  # where a reported call can start
    optional_on_base = _optional_reads(base_tree)
    for func in index_of(tree).of_type(FUNCTION_TYPES):
        if not touches(func, getattr_lines):
            continue  # only a getattr on an added line is reported
        guarded = {(dotted_name(n.args[0]), n.args[1].value) for n in walk(func)
                   if isinstance(n, ast.Call) and dotted_name(n.func) == "hasattr" and len(n.args) == 2
                   and isinstance(n.args[1], ast.Constant)}
        parents = index_of(func).parents
        for node in walk(func):
            if not (isinstance(node, ast.Call) and dotted_name(node.func) == "getattr" and len(node.args) == 3):
                continue
            if node.lineno not in added or innermost_function(func, node) is not func:
                continue
            if _tested(node, parents) or _validated(node, parents, func):
                continue  # the code branches on the fallback value, or validates it: handled
            obj, key, default = node.args
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if not (isinstance(default, ast.Constant) and type(default.value) in (int, float)
                    and default.value in ZERO_DEFAULTS):
                continue
            obj_text = dotted_name(obj) or ast.unparse(obj)
            if (obj_text, key.value) in guarded or obj_text in ("self", "cls"):
                continue  # presence checked, or an instance probing its own lazily-set state
            if not CONFIG_OBJECT.search(obj_text.rsplit(".", 1)[-1]) or not COUNT_KEY.search(key.value):
                continue  # only a model/config size read with a silent zero: the ATOM#1548 shape
            if (obj_text, key.value) in optional_on_base:
                continue  # base already read this key as optional (getattr default or hasattr): not new
            if _family_probed(node, parents, obj_text, key.value):
                continue  # inside a branch taken only when the object has a sibling key: its family is known
            yield Finding(
                rule="api-propagation-incomplete", path=f.path, line=node.lineno,
                problem=f"attr-missing: `{ast.unparse(node)}` in `{func.name}` ({f.path}:{node.lineno}) falls back to "
                        f"{default.value!r} without a warning when `{obj_text}` has no `{key.value}`.",
                impact=f"A config or module spelling the attribute differently (or predating it) silently gets "
                       f"{default.value!r}, and whatever `{key.value}` sizes or enables is dropped with no error.",
                action=f"Reviewer should ask whether every `{obj_text}` reaching this line defines `{key.value}`; "
                       "if it can be absent, the author must log or raise on the fallback instead of defaulting silently.",
                trigger=f"when `{key.value}` is absent from `{obj_text}`, getattr returns {default.value!r} and the "
                        f"code below runs as if `{key.value}` were {default.value!r}",
                tag="inferred", severity="medium",
                evidence=[Evidence(f.path, node.lineno, ast.unparse(node)[:120])],
            )


def _family_probed(node: ast.AST, parents: dict[ast.AST, ast.AST], obj_text: str, key: str) -> bool:
    """The getattr sits in the body of an `if` that probes another key of the same object for presence
    (`if getattr(hf, "kv_lora_rank", None) is not None:`, `if hasattr(cfg, "q_lora_rank"):`): the branch
    runs only for the config family that defines that key, and the key read inside belongs to the same
    schema (MLA configs carry kv_lora_rank and qk_rope_head_dim together)."""
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.If) and child in parent.body and _probes_presence(parent.test, obj_text, key):
            return True
        child = parent
    return False


def _probes_presence(test: ast.AST, obj_text: str, key: str) -> bool:
    """`test` is true only when `obj` has some key other than `key`: `hasattr(obj, "k")`,
    `getattr(obj, "k", None) is not None`, `obj.k is not None`, or an `and` of conditions one of which is."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_probes_presence(v, obj_text, key) for v in test.values)

    def probe(n: ast.AST) -> bool:
        if isinstance(n, ast.Call) and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) \
                and (dotted_name(n.func) == "hasattr" or dotted_name(n.func) == "getattr" and len(n.args) == 3
                     and isinstance(n.args[2], ast.Constant) and n.args[2].value is None):
            return (dotted_name(n.args[0]) or ast.unparse(n.args[0])) == obj_text and n.args[1].value != key
        return isinstance(n, ast.Attribute) and dotted_name(n.value) == obj_text and n.attr != key

    if isinstance(test, ast.Call) and dotted_name(test.func) == "hasattr":
        return probe(test)
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None and probe(test.left)


def _optional_reads(tree: ast.Module | None) -> set[tuple[str, str]]:
    """(object, key) pairs a module reads as possibly absent: `getattr(obj, "key", default)`, `hasattr(obj, "key")`."""
    if tree is None:
        return set()
    return {(dotted_name(n.args[0]) or ast.unparse(n.args[0]), n.args[1].value)
            for n in index_of(tree).of_type(ast.Call)
            if (dotted_name(n.func) == "getattr" and len(n.args) == 3 or dotted_name(n.func) == "hasattr" and len(n.args) == 2)
            and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)}


def _tested(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when the value feeds a condition, a comparison, an `and`/`or` fallback chain, or is itself the
    fallback of another getattr (an alias chain: `getattr(c, "n_x", getattr(c, "num_x", 0))`)."""
    parent = parents.get(node)
    if isinstance(parent, ast.Call) and dotted_name(parent.func) == "getattr" and node in parent.args[2:]:
        return True
    child = node
    while child in parents and not isinstance(child, ast.stmt):
        parent = parents[child]
        if isinstance(parent, (ast.BoolOp, ast.Compare)):
            return True
        if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and getattr(parent, "test", None) is child:
            return True
        if isinstance(parent, ast.comprehension) and child in parent.ifs:
            return True
        child = parent
    return False


def _validated(node: ast.AST, parents: dict[ast.AST, ast.AST], func: ast.AST) -> bool:
    """The value goes through a validating call (`_strict_integer(...)`), or the variable it is stored in is
    tested later in the function (`if head_dim == 0:` fallback)."""
    child = node
    while child in parents and not isinstance(child, ast.stmt):
        parent = parents[child]
        if isinstance(parent, ast.Call) and VALIDATOR.search(dotted_name(parent.func).rsplit(".", 1)[-1]):
            return True
        child = parent
    stmt = child
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    # Follow the value through later assignments (`old_row = old_k + old_v`): a test of anything derived
    # from it (`if old_row > 0:`) is a test of the fallback.
    derived = {stmt.targets[0].id}
    later = sorted((n for n in walk(func) if getattr(n, "lineno", 0) > stmt.lineno), key=lambda n: n.lineno)
    for n in later:
        if isinstance(n, ast.Assign) and _loads(n.value) & derived:
            derived.update(t.id for target in n.targets for t in walk(target) if isinstance(t, ast.Name))
        elif isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Assert)) and _loads(n.test) & derived:
            return True
    return False


def _loads(node: ast.AST) -> set[str]:
    return {x.id for x in walk(node) if isinstance(x, ast.Name)}


# --------------------------------------------------------------------------------------------
# defaulted-param-dead
# --------------------------------------------------------------------------------------------

FIX_TITLE = lazy_re(r"\b(fix|fixes|fixed|bug|bugfix|hotfix|eliminat\w*|avoid\w*|prevent\w*|resolv\w*|hang|"
                       r"crash\w*|regression|workaround|deadlock|race)\b", re.IGNORECASE)


@detector("defaulted-param-dead")
def defaulted_param_dead(review: ReviewInput) -> Iterable[Finding]:
    """Fires only where the new value demonstrably goes nowhere: the body overwrites the parameter before
    reading it, or only hands it to a function of the tree that never reads it; or where the PR says it
    fixes something and none of the callers passes the parameter that carries the fix (aiter#3773). A new
    defaulted parameter of a library is otherwise an opt-in for downstream callers (ATOM, vLLM): read on
    600+600 merged PRs, "no caller in the tree passes it" was that opt-in far more often than a dead fix."""
    fix = bool(FIX_TITLE.search(review.pr.title or ""))
    _plan_searches(review)
    # per changed signature: its new defaulted parameters, each with where its reads go (_keyword_targets)
    candidates: list[tuple[ChangedFile, _Sig, str, str, list[tuple[ast.arg, ast.AST, set | None]]]] = []
    wanted: list[tuple[ChangedFile, _Sig, str, list[tuple[ast.arg, str]]]] = []
    dropped_findings: list[Finding] = []
    for f, tree in review.python_files(include_tests=False):
        if not api_path(review, f.path):
            continue
        base_tree = review.base_python(f)
        if base_tree is None:
            continue
        for sig in _changed_signatures(f, tree, base_tree):
            func = sig.func
            if sig.base is None or _is_kernel(func) or _forced_signature(tree, func):
                continue  # kernels are launched by their own wrapper; fakes and callbacks mirror a signature
            if _is_stub(func) and not _is_compiled(func):
                continue
            cls = _class_of(tree, func)
            if any(part.startswith("_") and not part.startswith("__") for part in sig.qualname.split(".")):
                continue  # private: not an API a consumer passes parameters to
            if "." in sig.qualname and cls is None:
                continue  # a closure inside another function: its only callers are right there
            callee = cls.name if func.name == "__init__" and cls else func.name
            if callee in UNTRACEABLE:
                continue
            base_params = set(param_names(sig.base))
            if cls is not None and any(_method_signature_shared(review, tree, cls, func, a.arg)
                                       for a in parameters_of(func) if a.arg not in base_params):
                continue  # a hook whose signature a base class or framework interface dictates
            defaults = defaults_of(func)
            discarded = {a.arg for a in _discarded(review, tree, sig)}
            source = review.source.segment(func, f.path) or ""
            new = []
            for arg in parameters_of(func):
                if arg.arg in base_params or arg.arg not in defaults or arg.arg in discarded or arg.arg.startswith("_"):
                    continue
                if arg.lineno not in f.added_lines or _compat_param(source, arg.arg):
                    continue  # a legacy/deprecated alias kept for callers outside the tree is not new behaviour
                default = defaults[arg.arg]
                if isinstance(default, ast.Name) and default.id == arg.arg:
                    continue  # `x=x`: binds a value at definition time, not an option for callers
                if _renamed_in_place(sig.base, func, arg.arg):
                    continue  # `eps=1e-5` → `epsilon=1e-5`: the same parameter under a new name, not a new one
                if _consumed_by_decorator(review, func, cls, arg.arg):
                    continue  # ATOM 6c402484c8: a plugin-mode class decorator swaps in an `__init__` that takes it
                new.append((arg, default, _keyword_targets(func, arg.arg)))
            if new:
                candidates.append((f, sig, callee, source, new))
    for f, sig, callee, source, new in candidates:
        func, kept = sig.func, []
        for arg, default, targets in new:
            lost = _value_dropped(review, f.path, func, arg.arg, targets)
            if lost:
                dropped_findings.append(_dropped_finding(f, sig, arg, ast.unparse(default), lost))
                continue
            if not fix or _opt_in_param(source, arg.arg):
                continue  # documented as opt-in, or no fix announced: an opt-in for downstream callers
            if not _title_names(review.pr.title or "", arg.arg):
                continue  # the fix the title announces is not this parameter: a knob beside it
            if _automatic_default(func, arg.arg, default):
                continue  # the function chooses the value itself: callers need not pass it
            if _lifts_removed_value(f, arg.arg, default):
                continue  # a value the PR hard-coded before, now a parameter that keeps it: an escape hatch
            kept.append((arg, ast.unparse(default)))
        if kept:
            wanted.append((f, sig, callee, kept))
    yield from dropped_findings
    if not wanted:
        return
    calls, uncalled = _callers(review, {w[2] for w in wanted})
    for f, sig, callee, new in wanted:
        if callee in uncalled:
            continue  # also referenced without a call (alias, callback, registry): some callers are unknown
        sites = calls.get(callee, [])
        dead = [(arg, default) for arg, default in new
                if all(passes(c.node, sig.func, arg.arg) is False for c in sites)]
        if not dead:
            continue
        shown = ", ".join(f"`{a.arg}={d}`" for a, d in dead)
        n = len(sites)
        plural = "s" if len(dead) > 1 else ""
        yield Finding(
            rule="defaulted-param-dead", path=f.path, line=dead[0][0].lineno,
            end_line=dead[-1][0].lineno if len(dead) > 1 else None,
            problem=f"The PR says it fixes something (“{review.pr.title.strip()[:80]}”), but its new parameter{plural} "
                    f"{shown} of `{sig.qualname}` ({f.path}:{sig.func.lineno}) "
                    + (f"{'are' if plural else 'is'} passed by none of its {n} call site(s) in the tree."
                       if n else f"{'have' if plural else 'has'} no caller in the tree."),
            impact="Every existing caller keeps the default, so the fix stays off until a consumer (here or in a "
                   "downstream repository) passes it.",
            action=f"Reviewer should ask which caller will pass {shown} and whether that consumer-side change "
                   "is linked or tracked.",
            tag="verified",
            evidence=[Evidence(c.path, c.node.lineno, ast.unparse(c.node)[:120]) for c in sites[:3]],
        )


def _renamed_in_place(base: Func, func: Func, name: str) -> bool:
    """The parameter sits where a base parameter the head no longer has sat, with the same default: a rename."""
    head_params, base_params = parameters_of(func), parameters_of(base)
    at = next(i for i, a in enumerate(head_params) if a.arg == name)
    if at >= len(base_params) or base_params[at].arg in {a.arg for a in head_params}:
        return False
    old_default, new_default = defaults_of(base).get(base_params[at].arg), defaults_of(func).get(name)
    return old_default is not None and new_default is not None and ast.dump(old_default) == ast.dump(new_default)


def _lifts_removed_value(f: ChangedFile, name: str, default: ast.AST) -> bool:
    """The default is a literal that a line the PR removed from this file bound `name` to (`BLOCK_R=128 if R is
    None …` → `BLOCK_R: int = 128`; `mutates_args = table.get(op, "unknown")` → `mutates_args="unknown"`): the PR
    lifted a hard-coded value into a parameter whose default keeps every caller where it was, an escape hatch
    beside the fix rather than the fix left off (aiter ab978d999d, be79c56fe8)."""
    if not isinstance(default, ast.Constant) or default.value is None:
        return False
    value = default.value
    forms = {repr(value), f'"{value}"'} if isinstance(value, str) else {repr(value)}
    binding = re.compile(rf"(?<![\w.]){re.escape(name)}\s*=(?!=)(.{{0,200}})", re.DOTALL)
    blocks: list[list[str]] = []  # runs of consecutive removed lines: a binding may span several
    last = None
    for line, text in f.removed:
        if last is None or line != last + 1:
            blocks.append([])
        blocks[-1].append(text)
        last = line
    for block in blocks:
        for m in binding.finditer("\n".join(block)):
            if any(re.search(rf"(?<![\w.]){re.escape(form)}(?![\w.])", m.group(1)) for form in forms):
                return True
    return False


def _dropped_finding(f: ChangedFile, sig: _Sig, arg: ast.arg, default: str, lost: tuple[int, str]) -> Finding:
    line, how = lost
    return Finding(
        rule="defaulted-param-dead", path=f.path, line=arg.lineno,
        problem=f"New parameter `{arg.arg}={default}` of `{sig.qualname}` ({f.path}:{sig.func.lineno}) is accepted, "
                f"but {how} ({f.path}:{line}).",
        impact=f"A caller passing `{arg.arg}` gets the same result as without it: the value is silently ignored.",
        action=f"Author must use the value `{arg.arg}` carries, or remove the parameter.",
        tag="verified",
        evidence=[Evidence(f.path, line, how)],
    )


def _value_dropped(review: ReviewInput, path: str, func: Func, name: str,
                   targets: set[tuple[str, str, int]] | None) -> tuple[int, str] | None:
    """Where the parameter's value demonstrably goes nowhere: a top-level statement of the body rebinds it
    before anything reads it (`USE_EXP2 = True`), or every read of it hands it to a function of the tree
    whose matching parameter is never read (a threaded `static_scale` the callee ignores)."""
    for stmt in func.body:
        reads = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(stmt))
        if reads:
            break
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _assigns(stmt, name):
            return stmt.lineno, f"the body overwrites `{name}` before reading it: `{ast.unparse(stmt)[:80]}`"
    if not targets:
        return None
    for callee, param, line in targets:
        if not callee or not _unread_in_tree(review, path, callee, param):
            return None
    callee, param, line = sorted(targets, key=lambda t: t[2])[0]
    return line, f"it is only passed on as `{callee}({param}=...)`, and `{callee}` never reads `{param}`"


def _keyword_targets(func: Func, name: str) -> set[tuple[str, str, int]] | None:
    """Where every read of the parameter goes when each hands it on as a keyword, `callee(kw=name)`:
    (callee, keyword, line); None when it is never read or some read uses the value itself."""
    index = index_of(func)  # its parents are read below: the def's own node tables, not a walk per parameter
    uses = [n for n in index.of_type(ast.Name) if n.id == name and isinstance(n.ctx, ast.Load)]
    if not uses:
        return None
    parents = index.parents
    targets = set()
    for use in uses:
        parent = parents.get(use)
        if isinstance(parent, ast.keyword) and isinstance(parents.get(parent), ast.Call) and parent.arg:
            targets.add((dotted_name(parents[parent].func).rsplit(".", 1)[-1], parent.arg, parents[parent].lineno))
        else:
            return None  # read for itself somewhere: used
    return targets


def _def_pattern(callee: str) -> str:
    return rf"^\s*(async\s+)?def {re.escape(callee)}\s*\("


def _unread_in_tree(review: ReviewInput, path: str, callee: str, param: str) -> bool:
    """`callee` has exactly one definition in the head tree, it accepts `param`, and its body never reads it."""
    hits = _matching(review, [callee], _def_pattern(callee))
    if len(hits) != 1:
        return False
    tree = review.source.python(hits[0][0])
    func = next((n for n in index_of(tree).of_type(FUNCTION_TYPES) if n.name == callee), None) \
        if tree is not None else None
    if func is None or _is_stub(func) or _cached(func) or param not in param_names(func):
        return False  # a memoised callee keys its result on every argument
    reads, dynamic = names_read(func)
    return not dynamic and param not in reads and func.args.kwarg is None


AUTO_WORDS = {"auto"}


def _automatic_default(func: Func, name: str, default: ast.AST) -> bool:
    """The default asks the function to choose: the string `"auto"`; `None` that the body replaces with a
    derived value (`if x is None: x = …`, `x = x or …`, `buf = alloc() if x is None else x`, an output
    buffer allocated when not given); or a `None` the docstring says picks a value itself ("defaults to
    True when indices are given") — a pass-through to the function that resolves it."""
    if isinstance(default, ast.Constant) and isinstance(default.value, str):
        return default.value.lower() in AUTO_WORDS
    if not (isinstance(default, ast.Constant) and default.value is None):
        return False
    for node in walk(func):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _is_name(node.values[0], name) \
                and isinstance(default, ast.Constant) and default.value is None:
            return True  # `(arch or get_arch())`: unset means "work it out"
        if isinstance(node, ast.If) and (_tests_unset(node.test, name) or _tests_set(node.test, name)):
            unset, given = (node.body, node.orelse) if _tests_unset(node.test, name) else (node.orelse, node.body)
            if any(_assigns(stmt, name) for stmt in unset):
                return True
            taken = {t for stmt in given for t in _copies_of(stmt, name)}
            if taken and any(_assigns(stmt, t) for stmt in unset for t in taken):
                return True  # `if out is None: buf = alloc() else: buf = out`
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            if _assigns(node, name) and isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) \
                    and _is_name(value.values[0], name):
                return True
            if isinstance(value, ast.IfExp) and (_tests_unset(value.test, name) or _tests_set(value.test, name)) \
                    and (_is_name(value.body, name) or _is_name(value.orelse, name)):
                return True
    return _documented_auto(ast.get_docstring(func) or "", name)


AUTO_DOC = lazy_re(r"\bdefaults? to\b[^.]*\b(when|if|unless|based on|depending)\b|\bautomatic\w*|\binferred\b|"
                      r"\bderived\b|\bif (it is )?(None|not given|not provided|omitted)\b[^.]*\b(us|comput|deriv|infer|"
                      r"pick|select|choos|allocat|creat)", re.IGNORECASE)


def _documented_auto(docstring: str, name: str) -> bool:
    """The parameter's entry in the docstring (its line and the next two) says the function picks the value."""
    lines = docstring.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*[`*]*{re.escape(name)}[`*]*\s*(\(|:)", line):
            entry = " ".join(x.strip() for x in lines[i:i + 3])
            if AUTO_DOC.search(entry):
                return True
    return False


def _copies_of(stmt: ast.stmt, name: str) -> set[str]:
    """Names `stmt` binds to the plain value of `name` (`buf = out`)."""
    return {t.id for node in walk(stmt) if isinstance(node, ast.Assign) and _is_name(node.value, name)
            for t in node.targets if isinstance(t, ast.Name)}


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _tests_unset(test: ast.AST, name: str) -> bool:
    """`x is None`, `not x`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_name(test.operand, name)
    return isinstance(test, ast.Compare) and _is_name(test.left, name) and len(test.ops) == 1 \
        and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value is None


def _tests_set(test: ast.AST, name: str) -> bool:
    """`x is not None`, `x`."""
    return _is_name(test, name) or (
        isinstance(test, ast.Compare) and _is_name(test.left, name) and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot) and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None)


def _assigns(stmt: ast.AST, name: str) -> bool:
    """`stmt` (or a statement nested in it) binds `name`."""
    for node in walk(stmt):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(_is_name(t, name) or (isinstance(t, ast.Tuple) and any(_is_name(e, name) for e in t.elts))
               for t in targets):
            return True
    return False


COMPAT_WORDS = lazy_re(r"legacy|deprecat|backward[- ]compat|compatib|alias|old name", re.IGNORECASE)


def _compat_param(source: str, name: str) -> bool:
    """The function's text calls the parameter legacy/deprecated/an alias (docstring or comment)."""
    for line in source.splitlines():
        if re.search(rf"\b{re.escape(name)}\b", line) and COMPAT_WORDS.search(line):
            return True
    return False


OPT_IN_WORDS = lazy_re(r"\bopt[- ]?(in|into)\b|\bopt-in\b", re.IGNORECASE)


def _title_names(title: str, name: str) -> bool:
    """The title names the parameter: its whole name, or a word of it (4+ letters) that starts a title word
    ("decode clamps seq_lens to max_seqlen" for `max_seqlen`, "… with reusable metadata" for `prefill_metadata`).
    On aiter PRs 1201-2738, none of the five fix-titled PRs whose new parameter the title did not name was a fix
    left off: a tile size lifted into a parameter, a renamed `eps`, a tuning switch, an opt-in (ab978d999d,
    9e44c0f2e9, d861f71ffb, c1cf184d20, be79c56fe8)."""
    lowered = title.lower()
    if name.lower() in lowered:
        return True
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if len(w) >= 4]
    tokens = re.split(r"[^a-z0-9]+", lowered)
    return any(t.startswith(w) for w in words for t in tokens)


def _opt_in_param(source: str, name: str) -> bool:
    """The function's text (docstring or comment) calls the parameter an opt-in ("set `x=True` to opt into")."""
    return any(re.search(rf"\b{re.escape(name)}\b", line) and OPT_IN_WORDS.search(line) for line in source.splitlines())


def _is_compiled(func: Func) -> bool:
    return any(decorator_name(d).rsplit(".", 1)[-1] == "compile_ops" for d in func.decorator_list)
