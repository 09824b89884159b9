"""Multi-stream and worker-loop rules decided from Python syntax.

- queue-get-no-timeout (G1b): a blocking `queue.get()` in a `while True` worker of serving code, with no
  timeout, no Empty/TimeoutError handler and no stop flag.
- stream-sync-missing (G1): results produced under `torch.cuda.stream(side)` (or a call with
  `stream=side`) read after the block on the caller's stream with no wait/synchronize in between.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from ..lang.index import index_of
from ..lang.python import (
    FUNCTION_TYPES, children, dotted_name, imported_module_path, qualified_functions, touches, walk
)
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

Func = ast.FunctionDef | ast.AsyncFunctionDef

# --------------------------------------------------------------------------------------------
# queue-get-no-timeout
# --------------------------------------------------------------------------------------------

# Beyond what RepoFacts calls tooling: build-time Python under csrc/ and accuracy-evaluation harnesses run
# once and exit; an unbounded queue wait there does not hang a server.
NOT_SERVING = lazy_re(r"(^|/)(csrc|evaluation|eval)/")
QUEUE_CTORS = lazy_re(r"(^|\.)(Queue|SimpleQueue|LifoQueue|PriorityQueue|JoinableQueue)$")
TIMEOUT_EXC = lazy_re(r"(^|\.)(Empty|TimeoutError|CancelledError|Exception|BaseException)$")


def _queue_names(tree: ast.Module) -> set[str]:
    """Variables/attributes bound to a queue constructor anywhere in the module."""
    out: set[str] = set()
    for node in index_of(tree).of_type((ast.Assign, ast.AnnAssign, ast.arg)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call) \
                and QUEUE_CTORS.search(dotted_name(node.value.func)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(dotted_name(t) for t in targets if dotted_name(t))
        if isinstance(node, ast.AnnAssign) and node.annotation is not None and "Queue" in ast.unparse(node.annotation):
            out.add(dotted_name(node.target))
        if isinstance(node, ast.arg) and node.annotation is not None and "Queue" in ast.unparse(node.annotation):
            out.add(node.arg)
    out.discard("")
    return out


def _is_queue(owner: ast.AST, queues: set[str]) -> bool:
    name = dotted_name(owner)
    if not name:
        return False
    if name in queues or name.rsplit(".", 1)[-1] in {q.rsplit(".", 1)[-1] for q in queues}:
        return True
    leaf = name.rsplit(".", 1)[-1].lower()
    return bool(re.search(r"(^|_)(q|queue|inbox|outbox|mailbox)$|queue", leaf))


def _blocking_get(call: ast.Call) -> bool:
    if any(k.arg == "timeout" for k in call.keywords):
        return False
    block = next((k.value for k in call.keywords if k.arg == "block"), call.args[0] if call.args else None)
    if isinstance(block, ast.Constant) and block.value is False:
        return False
    return len(call.args) < 2  # get(True, 5) carries a timeout


@detector("queue-get-no-timeout")
def queue_get_no_timeout(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if not review.facts.is_library(f.path) or NOT_SERVING.search(f.path) \
                or not any(".get(" in t for _, t in f.added):
            continue
        added = f.added_lines
        queues = _queue_names(tree)
        parents = index_of(tree).parents
        base_tree = review.base_python(f)
        base_gets = {_flat(ast.unparse(n)) for n in index_of(base_tree).of_type(ast.Call)
                     if isinstance(n.func, ast.Attribute) and n.func.attr == "get"} if base_tree else set()
        for node in index_of(tree).of_type(ast.Call):
            if not (isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
                continue
            if node.lineno not in added or not _is_queue(node.func.value, queues) or not _blocking_get(node):
                continue
            if _wrapped_with_timeout(node, parents) or _flat(ast.unparse(node)) in base_gets or \
                    review.source.grep(ast.unparse(node), "base", ("*.py",), fixed=True, files_only=True):
                continue  # bounded, or the same blocking get already existed on base (re-indented, moved)
            loop = _forever_loop(node, parents)
            if loop is None or _handles_timeout(node, parents, loop) or _stop_flag(loop):
                continue
            if _main_guarded(tree, node):
                continue
            func = next((a for a in _ancestors(node, parents) if isinstance(a, FUNCTION_TYPES)), None)
            where = f"`{func.name}`" if func else "module level"
            call = ast.unparse(node)
            yield Finding(
                rule="queue-get-no-timeout", path=f.path, line=node.lineno,
                problem=f"`{call}` blocks with no timeout inside the `while True` loop at {f.path}:{loop.lineno} "
                        f"({where}), with no Empty/TimeoutError handler and no stop flag.",
                impact="If the producer dies or stops sending, this worker blocks forever: the process hangs "
                       "with no crash and no log, and shutdown waits on it.",
                action="Author must pass `timeout=` and handle `queue.Empty` / `asyncio.TimeoutError` (checking a "
                       "stop flag or the producer's liveness on each timeout).",
                trigger=f"the producer feeding `{dotted_name(node.func.value)}` exits abnormally; `{call}` never returns",
                evidence=[Evidence(f.path, loop.lineno, "while True:")],
            )


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterable[ast.AST]:
    while node in parents:
        node = parents[node]
        yield node


def _wrapped_with_timeout(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """`asyncio.wait_for(q.get(), t)` / `asyncio.wait([...], timeout=…)` bound the wait."""
    for a in _ancestors(node, parents):
        if isinstance(a, ast.Call) and (dotted_name(a.func).rsplit(".", 1)[-1] in ("wait_for", "timeout")
                                        or any(k.arg == "timeout" for k in a.keywords)):
            return True
        if isinstance(a, (ast.AsyncWith, ast.With)) and any(
                "timeout" in ast.unparse(item.context_expr) for item in a.items):
            return True
        if isinstance(a, (ast.While, ast.For, *FUNCTION_TYPES)):
            return False  # the wrapping call, if any, would sit inside the loop/function
    return False


def _forever_loop(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.While | None:
    for a in _ancestors(node, parents):
        if isinstance(a, FUNCTION_TYPES):
            return None
        if isinstance(a, ast.While):
            return a if isinstance(a.test, ast.Constant) and a.test.value else None
    return None


def _handles_timeout(node: ast.AST, parents: dict[ast.AST, ast.AST], loop: ast.While) -> bool:
    for a in _ancestors(node, parents):
        if a is loop:
            return False
        if isinstance(a, ast.Try) and any(
                h.type is not None and any(TIMEOUT_EXC.search(dotted_name(t)) for t in
                                          (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]))
                for h in a.handlers):
            return True
    return False


STOP_FLAG = lazy_re(r"stop|done|shutdown|closed|exit|terminat|running|alive|cancel", re.IGNORECASE)


def _stop_flag(loop: ast.While) -> bool:
    """A `while True` that checks a stop/done/shutdown flag and breaks or returns."""
    for node in walk(loop):
        if isinstance(node, ast.If) and STOP_FLAG.search(ast.unparse(node.test)) and \
                any(isinstance(s, (ast.Break, ast.Return, ast.Raise)) for s in walk(node)):
            return True
    return False


def _main_guarded(tree: ast.Module, node: ast.AST) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test) and touches(stmt, {node.lineno}):
            return True
    return False


# --------------------------------------------------------------------------------------------
# stream-sync-missing
# --------------------------------------------------------------------------------------------

SYNC_ATTRS = {"wait_stream", "synchronize", "wait_event", "wait"}
DEFAULT_STREAM = lazy_re(r"current_stream|default_stream|main|compute|cur_stream|null_stream", re.IGNORECASE)


def _stream_context(item: ast.withitem) -> ast.AST | None:
    """The stream expression of `with torch.cuda.stream(S)` / `with S:` where S is a Stream."""
    expr = item.context_expr
    if isinstance(expr, ast.Call) and dotted_name(expr.func).rsplit(".", 1)[-1] == "stream" and expr.args:
        return expr.args[0]
    return None


def _side_stream(expr: ast.AST) -> bool:
    text = ast.unparse(expr)
    return not DEFAULT_STREAM.search(text) and text not in ("None",)


@detector("stream-sync-missing")
def stream_sync_missing(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False):
        if not any("stream" in t for _, t in f.added):
            continue
        added = f.added_lines
        helpers: set[str] | None = None
        for qualname, func in qualified_functions(tree).items():
            if not touches(func, added):
                continue
            params = {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
            base_func = None
            for region, stream, produced in _side_regions(func):
                if not touches(region, added) or not produced:
                    continue
                if base_func is None:
                    base_tree = review.base_python(f)
                    base_func = (qualified_functions(base_tree).get(qualname) if base_tree else None) or False
                if base_func and _flat(ast.unparse(region)) in _flat(ast.unparse(base_func)):
                    continue  # the same side-stream block existed on base
                if isinstance(stream, ast.Name) and stream.id in params:
                    continue  # the caller hands in the stream and owns the synchronisation
                read = _first_unsynced_read(func, region, produced, stream)
                if read is not None:
                    if helpers is None:
                        helpers = _synchronising_helpers(review, f.path, tree)
                    if helpers:
                        read = _first_unsynced_read(func, region, produced, stream, helpers)
                if read is None:
                    continue
                name, node = read
                stream_text = ast.unparse(stream)
                yield Finding(
                    rule="stream-sync-missing", path=f.path, line=region.lineno,
                    problem=f"`{name}` is produced on the side stream `{stream_text}` at {f.path}:{region.lineno} and read "
                            f"at {f.path}:{node.lineno} in `{qualname}` with no `wait_stream`/event wait/synchronize "
                            "in between.",
                    impact="Streams run concurrently: the consumer on the current stream can read the buffer before "
                           "the side-stream kernels finish writing it — silently wrong values, no error.",
                    action=f"Author must make the consuming stream wait before the read "
                           f"(`torch.cuda.current_stream().wait_stream({stream_text})` or an event recorded on "
                           f"`{stream_text}` and waited on), and keep the tensor alive with `record_stream`.",
                    trigger=f"the read of `{name}` at line {node.lineno} is issued while `{stream_text}` is still "
                            "writing it (any batch where the side-stream work is not already finished)",
                    tag="inferred", severity="medium",
                    evidence=[Evidence(f.path, region.lineno, ast.unparse(region).splitlines()[0][:120]),
                              Evidence(f.path, node.lineno, f"{name} read here")],
                )


def _side_regions(func: Func) -> Iterable[tuple[ast.AST, ast.AST, set[str]]]:
    """(region, stream, names bound in it) for `with stream(S):` blocks and `x = op(..., stream=S)` calls."""
    for node in index_of(func).of_type((ast.With, ast.AsyncWith, ast.Assign)):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                stream = _stream_context(item)
                if stream is not None and _side_stream(stream):
                    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "record"
                           for s in node.body for n in walk(s)):
                        continue  # an event is recorded on the side stream: the hand-off is explicit
                    produced = {t.id for s in node.body for n in walk(s)
                                if isinstance(n, (ast.Assign, ast.AnnAssign))
                                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                                for t in _plain_names(t)}
                    produced |= {a.id for s in node.body for n in walk(s) if isinstance(n, ast.Call)
                                 for k in n.keywords if k.arg in ("out", "output") and isinstance(k.value, ast.Name)
                                 for a in [k.value]}
                    yield node, stream, produced
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            stream = next((k.value for k in node.value.keywords if k.arg == "stream"), None)
            if stream is not None and _side_stream(stream) and not isinstance(stream, ast.Constant):
                yield node, stream, {t.id for t in node.targets for t in walk(t) if isinstance(t, ast.Name)}


def _plain_names(target: ast.AST) -> list[ast.Name]:
    """Names bound by a target (`a`, `a, b`), not the containers written through (`ctx["k"] = …`)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _plain_names(elt)]
    if isinstance(target, ast.Starred):
        return _plain_names(target.value)
    return []


def _waits(func: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in SYNC_ATTRS
               for n in walk(func))


def _synchronising_helpers(review: ReviewInput, path: str, tree: ast.Module) -> set[str]:
    """Names of the functions this module defines, or imports from a module of the repository, whose body
    waits on a stream or synchronises: a call to one of them is the wait (the Python family of the file,
    like a barrier that lives in a header)."""
    out = {name.rsplit(".", 1)[-1] for name, fn in qualified_functions(tree).items() if _waits(fn)}
    for node in index_of(tree).of_type(ast.ImportFrom):
        if not node.level and not node.module:
            continue
        module = imported_module_path(path, node)
        wanted = {a.name: a.asname or a.name for a in node.names}
        for candidate in (module + ".py", module + "/__init__.py"):
            if not review.source.exists(candidate):
                continue
            other = review.source.python(candidate)
            if other is not None:
                for name, fn in qualified_functions(other).items():
                    if name in wanted and _waits(fn):
                        out.add(wanted[name])
            break
    return out


def _first_unsynced_read(func: Func, region: ast.AST, produced: set[str], stream: ast.AST,
                         helpers: set[str] = frozenset()) -> tuple[str, ast.Name] | None:  # type: ignore[assignment]
    """The first read of a produced name after the region, outside another region on the same stream,
    with no synchronisation call between the region's end and the read (a call to a helper that
    synchronises counts: `helpers`)."""
    end = region.end_lineno or region.lineno
    stream_text = ast.unparse(stream)
    same_stream_spans = [(n.lineno, n.end_lineno or n.lineno) for n in walk(func)
                         if isinstance(n, (ast.With, ast.AsyncWith))
                         and any((s := _stream_context(i)) is not None and ast.unparse(s) == stream_text for i in n.items)]
    syncs = sorted(n.lineno for n in walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr in SYNC_ATTRS and n.lineno > end)
    syncs += [n.lineno for n in walk(func) if helpers and isinstance(n, ast.Call) and n.lineno > end
              and dotted_name(n.func).rsplit(".", 1)[-1] in helpers]
    syncs += [n.lineno for n in walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in ("wait_stream", "wait_event", "synchronize", "wait")
              and region.lineno <= n.lineno <= end and n is not None and _is_tail_sync(n, region)]
    reads = sorted((n for n in walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                    and n.id in produced and n.lineno > end), key=lambda n: (n.lineno, n.col_offset))
    parents = {c: p for p in walk(func) for c in children(p)}
    for read in reads:
        if any(a <= read.lineno <= b for a, b in same_stream_spans):
            continue
        if not _consumed(read, parents, stream_text):
            continue
        if any(s <= read.lineno for s in syncs):
            return None
        return read.id, read
    return None


def _consumed(read: ast.Name, parents: dict[ast.AST, ast.AST], stream_text: str) -> bool:
    """A read that launches work on the tensor: not a plain `return x`, not storing it into a cache or
    attribute, not an argument to a call that runs on the same stream (`stream=S`)."""
    value: ast.AST = read
    parent = parents.get(read)
    while isinstance(parent, (ast.Tuple, ast.List, ast.Dict, ast.Starred)):
        value, parent = parent, parents.get(parent)  # packed into a container first
    if isinstance(parent, ast.Return):
        return False
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is value:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
            return False  # stored for a later consumer (which owns the wait)
    node: ast.AST = read
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Call) and any(k.arg == "stream" and ast.unparse(k.value) == stream_text
                                              for k in node.keywords):
            return False
        if isinstance(node, ast.stmt):
            break
    return True


def _is_tail_sync(call: ast.Call, region: ast.AST) -> bool:
    """An event recorded/waited at the end of the region counts only when it is the consumer's wait."""
    return call.func.attr == "synchronize"
