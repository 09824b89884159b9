"""Read-only access to the two sides of a review: file text, tree look-ups, parsed Python.

Everything a detector may know about the repository goes through here, so each file is read
and parsed at most once per side, and whatever cannot be read is recorded as not checked.
"""
from __future__ import annotations

import ast
import json
import keyword
import re
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterable, Iterator, Literal

from .git import CatFile, Repo
from .git.catfile import MISSING
from .lang import Unparsable
from .lang.index import release
from .lang.python import parse
from .lang.regex import lazy_re
from .model import NotChecked, field, record

Side = Literal["head", "base"]

PARSER_LINES = lazy_re(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# Formats whose header holds a NUL byte in its first bytes (ELF code objects and libraries, PNG), so
# `git grep -I` skips them as binary anyway, but only after reading each: aiter's 2,900 `.co` GPU code
# objects are 118 MB of its 160 MB tree, two fifths of every whole-tree search's CPU.
NEVER_TEXT = tuple(f":(exclude)*.{ext}" for ext in ("co", "hsaco", "so", "o", "png"))


# An extended regex search with a literal every match holds is first asked of git as that fixed string
# (git's fixed-string search reads a tree three to eight times as fast as its regex engine, slowest on
# `^\s*…` patterns): the regex then runs, as before, on the files holding the literal alone.
MIN_LITERAL = 5
MAX_NARROWED_FILES = 300
PLAIN_WORDS = lazy_re(r"[A-Za-z0-9_|]+")
# words most Python files hold: a literal that narrows nothing costs a search more
COMMON_WORDS = frozenset(keyword.kwlist) | {"torch", "print", "super", "range", "float", "self", "tensor"}


def required_literals(pattern: str) -> list[str] | None:
    """For a git extended regex, one literal per top-level alternative that every match of that
    alternative contains, else None (an alternative with no such literal of MIN_LITERAL characters,
    or syntax this reading does not follow). Conservative: only letters, digits and `_` outside
    groups and bracket expressions count, and a character a quantifier makes optional does not."""
    alternatives = _split_alternatives(pattern)
    if alternatives is None:
        return None
    out: list[str] = []
    for alt in alternatives:
        inner = _enclosed(alt)
        found = required_literals(inner) if inner is not None else _literal_of(alt)
        if not found:
            return None
        out += found if isinstance(found, list) else [found]
    return out


def _skip_bracket(text: str, i: int) -> int:
    """The index after the bracket expression starting at text[i] == '[' (`[:class:]`, `[.x.]` and
    `[=x=]` inside it included; a backslash in it is an ordinary character); -1 if unclosed."""
    j, n = i + 1, len(text)
    if j < n and text[j] == "^":
        j += 1
    if j < n and text[j] == "]":
        j += 1
    while j < n:
        if text[j] == "[" and j + 1 < n and text[j + 1] in ":.=":
            close = text.find(text[j + 1] + "]", j + 2)
            if close < 0:
                return -1
            j = close + 2
        elif text[j] == "]":
            return j + 1
        else:
            j += 1
    return -1


def _scan(text: str):
    """(index, character, depth) of the characters of `text` outside escapes and bracket expressions;
    raises ValueError on unbalanced syntax."""
    depth, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            yield i, "\\", depth
            i += 2
            continue
        if c == "[":
            end = _skip_bracket(text, i)
            if end < 0:
                raise ValueError(text)
            yield i, "[", depth
            i = end
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(text)
        yield i, c, depth
        i += 1
    if depth:
        raise ValueError(text)


def _split_alternatives(pattern: str) -> list[str] | None:
    try:
        cuts = [i for i, c, depth in _scan(pattern) if c == "|" and depth == 0]
    except ValueError:
        return None
    bounds = [-1, *cuts, len(pattern)]
    return [pattern[a + 1:b] for a, b in zip(bounds, bounds[1:])]


def _enclosed(alt: str) -> str | None:
    """The inside of `alt` when `alt` is one group, `( … )`, and nothing else."""
    if not (alt.startswith("(") and alt.endswith(")")):
        return None
    closing = next((i for i, c, depth in _scan(alt) if c == ")" and depth == 0), None)
    return alt[1:-1] if closing == len(alt) - 1 else None


def _literal_of(alt: str) -> str | list[str] | None:
    """What every match of one alternative holds: the longest run of letters, digits and `_` at its
    top level, else the literals of a group of it that no quantifier follows (one of them each match
    holds: `def (f|g)\\s*\\(`)."""
    runs: list[str] = []
    groups: list[list[str]] = []
    current = ""
    in_interval = False
    group_start = -1
    scanned = list(_scan(alt))
    for k, (i, c, depth) in enumerate(scanned):
        if in_interval:  # the counts of `{n,m}`
            in_interval = c != "}"
        elif depth > 0 or c in "()":
            runs.append(current)
            current = ""
            if c == "(" and depth == 1:
                group_start = i
            elif c == ")" and depth == 0:
                after = scanned[k + 1][1] if k + 1 < len(scanned) else ""
                inner = required_literals(alt[group_start + 1:i]) if after not in ("?", "*", "{") else None
                if inner:
                    groups.append(inner)
        elif c in "?*{":
            runs.append(current[:-1])  # the quantified character may be absent (or repeated: `{n}`)
            current = ""
            in_interval = c == "{"
        elif c.isascii() and (c.isalnum() or c == "_"):
            current += c
        else:  # an escape, a bracket expression, `.`, an anchor, `+` (its character stays), any other
            runs.append(current)
            current = ""
    runs.append(current)
    best = max((r for r in runs if r not in COMMON_WORDS), key=len, default="")
    if len(best) >= MIN_LITERAL:
        return best
    return min(groups, key=len) if groups else None


def _plannable(word: str) -> bool:
    """A name a planned search looks for: an identifier of three or more characters that most files do
    not hold (its lines are read in Python)."""
    return len(word) >= 3 and word.isidentifier() and word.isascii() and word not in COMMON_WORDS


@lru_cache(maxsize=4096)
def word_regex(name: str) -> re.Pattern[str]:
    """`name` as git's -w finds it: not preceded or followed by a letter, digit or underscore (C locale)."""
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")


def _name_held(text: str, words: Iterable[str]) -> str:
    """The longest of `words` an ASCII `text` holds ('' for none, or for other text: git compares bytes,
    Python the decoded line, and only ASCII reads the same): every line holding `text` holds it."""
    return max((w for w in words if w in text), key=len, default="") if text.isascii() else ""


def _positions(text: str, string: str) -> Iterator[int]:
    """Every place `string` starts in `text`, found with `str.find`."""
    at = text.find(string)
    while at >= 0:
        yield at
        at = text.find(string, at + 1)


def _word_positions(text: str, name: str) -> Iterator[int]:
    """Where `name` stands in `text` as git's -w finds it: not preceded or followed by a letter, digit or `_`."""
    for at in _positions(text, name):
        end = at + len(name)
        if not (at and _word_char(text[at - 1])) and not (end < len(text) and _word_char(text[end])):
            yield at


def _line_starts(text: str, positions: Iterable[int]) -> list[int]:
    """In order, where the lines of `text` holding these positions start."""
    return sorted({text.rfind("\n", 0, at) + 1 for at in positions})


def _line_from(text: str, start: int) -> str:
    """The line of `text` that starts at `start`, without its newline."""
    end = text.find("\n", start)
    return text[start:end if end >= 0 else len(text)]


def lines_holding(text: str, string: str) -> str:
    """`"\\n".join(line for line in text.split("\\n") if string in line)`, found with `str.find`: a pattern
    that matches within one line and holds `string` finds the same in these lines as in the whole text,
    and a module of thousands of lines names an imported name on a few (aiter 00cbe979f2: searching
    whole texts was half of the symbols evidence's time)."""
    return "\n".join(_line_from(text, start) for start in _line_starts(text, _positions(text, string)))


def _word_char(c: str) -> bool:
    return c == "_" or c.isascii() and c.isalnum()


def _path_order(path: str) -> bytes:
    """git's order of a tree's files: the byte order of their full paths."""
    return path.encode("utf-8", "surrogateescape")


def _git_order(hit: tuple[str, int, str]) -> tuple[bytes, int]:
    """git's order of search hits: by path, then line."""
    return _path_order(hit[0]), hit[1]


def _files_of(hits: Iterable[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """A line search's hits as the same search with `files_only` answers them: each file once, in order."""
    return [(p, 0, "") for p in dict.fromkeys(p for p, _, _ in hits)]


@record
class Source:
    repo: Repo
    catfile: CatFile
    base: str  # merge base sha
    head: str
    not_checked: list[NotChecked] = field(default_factory=list)
    _trees: dict[tuple[Side, str], ast.Module | None] = field(default_factory=dict)
    _seen_unreadable: set[tuple[Side, str]] = field(default_factory=set)
    _greps: dict[tuple, list[tuple[str, int, str]]] = field(default_factory=dict)
    _holding: dict[tuple[str, str, tuple[str, ...]], list[str]] = field(default_factory=dict)  # files by literals
    # per (side, pathspecs): words planned for the next search of those files, and the lines holding each
    # word a search looked for (`plan_words`)
    _planned: dict[tuple[Side, tuple[str, ...]], set[str]] = field(default_factory=dict)
    _held: dict[tuple[Side, tuple[str, ...]], dict[str, list[tuple[str, int, str]]]] = field(default_factory=dict)
    _source_lines: dict[tuple[Side, str], list[str]] = field(default_factory=dict)
    _top_level: dict[Side, frozenset[str]] = field(default_factory=dict)

    def rev(self, side: Side) -> str:
        return self.head if side == "head" else self.base

    def text(self, path: str, side: Side = "head") -> str | None:
        blob = self.catfile.read(self.rev(side), path)
        if blob.text is None and blob.reason != MISSING:
            if (side, path) not in self._seen_unreadable:
                self._seen_unreadable.add((side, path))
                self.not_checked.append(NotChecked(path, f"{side} side {blob.reason}"))
        return blob.text

    def word_lines(self, names: list[str], side: Side, paths: Iterable[str]) -> list[tuple[str, int, str]] | None:
        """The lines of these files holding one of `names` (identifiers) as a word, as `git grep -I -w` reads
        them (a binary file, a missing path or a submodule is not searched); None when a file is one git would
        search but the review cannot read as text (too large, not UTF-8). Each name is found with `str.find`
        (a regex of many names, tried at every position of every line, took seconds on large PRs)."""
        hits: list[tuple[str, int, str]] = []
        for path in paths:
            blob = self.catfile.peek(self.rev(side), path)
            if blob.text is None:
                if blob.unsearched:
                    continue
                return None
            text = blob.text
            row, counted = 1, 0
            for start in _line_starts(text, (at for name in names for at in _word_positions(text, name))):
                row += text.count("\n", counted, start)
                counted = start
                hits.append((path, row, _line_from(text, start)))
        return hits

    def json_object(self, path: str, side: Side = "head") -> dict | None:
        """The file read as a JSON object; None when it is missing, unreadable, not JSON or not an object."""
        text = self.text(path, side)
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def lines(self, path: str, side: Side = "head") -> list[str]:
        text = self.text(path, side)
        return text.splitlines() if text is not None else []

    def python(self, path: str, side: Side = "head") -> ast.Module | None:
        """The parsed module, or None (unreadable, or not parsable — recorded as not checked)."""
        key = (side, path)
        if key not in self._trees:
            self._trees[key] = self._parse(path, side)
        return self._trees[key]

    @contextmanager
    def python_once(self, path: str, side: Side = "head") -> Iterator[ast.Module | None]:
        """The parsed module for one look, as `python` answers: the review's own tree when it has one,
        else a tree parsed for this look and freed after it (its index released), so a tree-wide
        search (the callers of a function in 150 files) does not keep every file it read for the rest
        of the review. A file that does not parse is recorded once, as `python` records it."""
        key = (side, path)
        if key in self._trees:
            yield self._trees[key]
            return
        tree = self._parse(path, side)
        if tree is None:
            self._trees[key] = None  # not parsed again, nor recorded twice
        try:
            yield tree
        finally:
            if tree is not None:
                release(tree)

    def _parse(self, path: str, side: Side) -> ast.Module | None:
        text = self.text(path, side)
        if text is None:
            return None
        try:
            return parse(text, filename=path)
        except Unparsable as exc:
            self.not_checked.append(NotChecked(path, f"{side} side is {exc}: not parsed"))
            return None

    def segment(self, node: ast.AST, path: str, side: Side = "head") -> str | None:
        """`ast.get_source_segment` of the file's text, which splits the whole text into lines on
        every call (a Python loop over each character): here each file is split once per review."""
        end_lineno, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None or not hasattr(node, "lineno") or not hasattr(node, "col_offset"):
            return None
        key = (side, path)
        if key not in self._source_lines:
            # the parser's line ends (\r\n, \r, \n, and no others), each kept on its line
            self._source_lines[key] = PARSER_LINES.findall(self.text(path, side) or "")
        lines = self._source_lines[key]
        first, last = node.lineno - 1, end_lineno - 1  # type: ignore[attr-defined]
        if first == last:
            return lines[first].encode()[node.col_offset:end_col].decode()  # type: ignore[attr-defined]
        return "".join([lines[first].encode()[node.col_offset:].decode(),  # type: ignore[attr-defined]
                        *lines[first + 1:last], lines[last].encode()[:end_col].decode()])

    def exists(self, path: str, side: Side = "head") -> bool:
        """Whether a file or directory is at `path`, asked of the long-lived cat-file process."""
        return self.catfile.read(self.rev(side), path).reason != MISSING

    def grep(self, pattern: str, side: Side = "head", pathspecs: tuple[str, ...] = (), **kw) -> list[tuple[str, int, str]]:
        """`git grep` over one side's tree. Each search of a tree costs git a read of every blob in
        it, so the same question asked again in this review (another detector, another parameter
        of the same name) is answered from the first answer."""
        key = (pattern, side, tuple(pathspecs), tuple(sorted((k, v) for k, v in kw.items() if v)))
        if key not in self._greps:
            known = self._answered(pattern, side, tuple(pathspecs), kw)
            if known is None:
                known = self._from_held(pattern, side, tuple(pathspecs), kw)
            self._greps[key] = known if known is not None else self._search(pattern, side, pathspecs, **kw)
        return list(self._greps[key])

    def plan_words(self, words: Iterable[str], side: Side = "head", pathspecs: tuple[str, ...] = ("*.py",)) -> None:
        """Names this review's later questions about one side's files hold (a changed function's, a
        module's): the first search of those files that can carry them looks for all of them, and a
        later word, fixed-string or narrowing search for a name that holds one of them is answered from
        its lines. Each search reads every blob of the tree (~0.1 s for aiter's Python files) whatever
        it looks for, and the questions come from a dozen places one after another."""
        key = (side, tuple(pathspecs))
        held = self._held.get(key, {})
        self._planned.setdefault(key, set()).update(w for w in words if _plannable(w) and w not in held)

    def _lines_holding(self, strings: list[str], side: Side, pathspecs: tuple[str, ...],
                       ) -> dict[str, list[tuple[str, int, str]]] | None:
        """Per string, the lines of these files holding it, from the planned searches of this review (a
        string is read from the lines of a word it holds), or None when these files have no plan or a
        string is neither a name a plan searches for nor a text holding a name searched or planned (a
        name the text holds only by chance may be on tens of thousands of lines: `dtype`)."""
        key = (side, pathspecs)
        if key not in self._planned or not strings:
            return None
        held = self._held.setdefault(key, {})
        words = (*held, *self._planned[key])
        names = [s if _plannable(s) else _name_held(s, words) for s in strings]
        if not all(names):
            return None
        uncovered = [name for s, name in zip(strings, names) if not any(w in s for w in held)]
        if uncovered:
            wanted = sorted({*uncovered, *self._planned[key]})
            self._planned[key] = set()
            # an alternation of names: one pass over each line (git tries newline-separated fixed strings
            # one after another, twice the time for ten of them)
            hits = self.repo.grep("|".join(wanted), self.rev(side), (*pathspecs, *NEVER_TEXT))
            held.update((w, [h for h in hits if w in h[2]]) for w in wanted)
        # the longest word a string holds has the fewest lines to read
        return {s: [h for h in held[max((w for w in held if w in s), key=len)] if s in h[2]] for s in strings}

    def _from_held(self, pattern: str, side: Side, pathspecs: tuple[str, ...], kw: dict,
                   ) -> list[tuple[str, int, str]] | None:
        """A fixed-string search, or a word search for names (`a|b`), answered from the lines of planned
        searches (`_lines_holding`), in git's order; None when they cannot answer it."""
        if any(v for k, v in kw.items() if k not in ("fixed", "word", "files_only")) or \
                kw.get("fixed") == kw.get("word"):
            return None
        strings = pattern.split("\n") if kw.get("fixed") else pattern.split("|")
        if kw.get("word") and not all(map(_plannable, strings)):
            return None  # escaped text, not names: a regex git reads, not strings a line holds
        lines = self._lines_holding(strings, side, pathspecs)
        if lines is None:
            return None
        if kw.get("word"):
            lines = {s: [h for h in held if word_regex(s).search(h[2])] for s, held in lines.items()}
        hits = sorted({h for held in lines.values() for h in held}, key=_git_order)
        return _files_of(hits) if kw.get("files_only") else hits

    def _answered(self, pattern: str, side: Side, pathspecs: tuple[str, ...], kw: dict) -> list[tuple[str, int, str]] | None:
        """A search's answer read from earlier answers of this review, without reading the tree again, else
        None: the files of a line search (`files_only` after the same search's lines), and a word search
        for several names (`a|b`) from each name's own word search, in git's order (a tree is walked in
        the byte order of its full paths)."""
        if kw.get("only_matching"):
            return None
        flags = tuple(sorted((k, v) for k, v in kw.items() if v and k != "files_only"))
        lines = self._greps.get((pattern, side, pathspecs, flags))
        if lines is not None and kw.get("files_only"):
            return _files_of(lines)
        names = pattern.split("|")
        if flags != (("word", True),) or len(names) < 2 or not all(n.isidentifier() and n.isascii() for n in names):
            return None
        each = [self._greps.get((n, side, pathspecs, flags)) for n in names]  # each name's lines
        if kw.get("files_only"):
            each = [e if e is not None else self._greps.get((n, side, pathspecs, (("files_only", True), *flags)))
                    for n, e in zip(names, each)]
        if any(e is None for e in each):
            return None
        hits = sorted({hit for e in each for hit in e}, key=_git_order)
        return _files_of(hits) if kw.get("files_only") else hits

    def _search(self, pattern: str, side: Side, pathspecs: tuple[str, ...], **kw) -> list[tuple[str, int, str]]:
        """`git grep` of one tree; an extended regex with required literals (see MIN_LITERAL) runs only
        on the files holding one of them, found by a fixed-string search first. The same hits in the
        same order: the regex, run by git as before, matches no line outside those files."""
        # words and alternatives of words: git already searches those as fixed strings
        rev = self.rev(side)
        literals = None if kw.get("fixed") or PLAIN_WORDS.fullmatch(pattern) else required_literals(pattern)
        if literals:
            key = ("\n".join(sorted(set(literals))), rev, tuple(pathspecs))  # another regex may need the same
            if key not in self._holding:
                held = self._lines_holding(sorted(set(literals)), side, tuple(pathspecs))
                self._holding[key] = sorted({p for lines in held.values() for p, _, _ in lines}, key=_path_order) \
                    if held is not None else [p for p, _, _ in self.repo.grep(key[0], rev, (*pathspecs, *NEVER_TEXT),
                                                                              fixed=True, files_only=True)]
            files = self._holding[key]
            if not files:
                return []
            if len(files) <= MAX_NARROWED_FILES:
                return self.repo.grep(pattern, rev, tuple(f":(literal){p}" for p in files), **kw)
        return self.repo.grep(pattern, rev, (*pathspecs, *NEVER_TEXT), **kw)

    def prefetch_grep(self, patterns: list[str], side: Side = "head", pathspecs: tuple[str, ...] = ()) -> None:
        """Answer several line searches (`grep(p, side, pathspecs)` for each p) with one search of the
        tree for any of them, each then keeping the lines its own pattern matches. A pattern must mean
        the same to git's extended regex in the C locale and to Python's `re` with ASCII classes:
        escaped names, `\\b`, `\\s`, escaped punctuation."""
        wanted = [p for p in dict.fromkeys(patterns) if (p, side, tuple(pathspecs), ()) not in self._greps]
        if len(wanted) < 2:
            return  # one search either way
        try:
            own = [re.compile(p, re.ASCII) for p in wanted]
        except re.error:
            return  # not a pattern Python reads as git does: each is searched on its own
        hits = self._search("|".join(f"({p})" for p in wanted), side, pathspecs)
        for pattern, regex in zip(wanted, own):
            self._greps[(pattern, side, tuple(pathspecs), ())] = [h for h in hits if regex.search(h[2])]

    def prefetch_fixed(self, strings: Iterable[str], side: Side = "head", pathspecs: tuple[str, ...] = ()) -> None:
        """Answer the line searches `grep(s, side, pathspecs, fixed=True)` for several strings with one
        search of the tree for all of them (each keeps the lines holding it). ASCII strings without line
        breaks only: git compares bytes, Python the decoded line."""
        kw = (("fixed", True),)
        wanted = [s for s in dict.fromkeys(strings) if s and s.isascii() and "\n" not in s and "\r" not in s
                  and (s, side, tuple(pathspecs), kw) not in self._greps]
        if len(wanted) < 2:
            return  # one search either way
        hits = self._from_held("\n".join(wanted), side, tuple(pathspecs), dict(kw))
        if hits is None:
            hits = self.repo.grep("\n".join(wanted), self.rev(side), (*pathspecs, *NEVER_TEXT), fixed=True)
        for string in wanted:
            self._greps[(string, side, tuple(pathspecs), kw)] = [h for h in hits if string in h[2]]

    def grep_words(self, names: Iterable[str], side: Side = "head", pathspecs: tuple[str, ...] = ("*.py",),
                   ) -> dict[str, list[str]]:
        """Per name, the files where it occurs as a word, in git's order: for each name the answer of
        `grep(re.escape(name), side, pathspecs, word=True, files_only=True)`, from one search of the
        tree for all of them. The lines are kept too, so `grep(re.escape(name), side, pathspecs,
        word=True)` asked afterwards costs no search either. Names must be identifiers."""
        names = list(dict.fromkeys(names))
        files_kw, lines_kw = (("files_only", True), ("word", True)), (("word", True),)
        wanted = [n for n in names if (re.escape(n), side, tuple(pathspecs), files_kw) not in self._greps]
        held = self._lines_holding(wanted, side, tuple(pathspecs)) if wanted else None
        if held is not None or len(wanted) > 1 and all(n.isidentifier() and n.isascii() for n in wanted):
            hits = [] if held is not None else self.repo.grep("|".join(re.escape(n) for n in wanted), self.rev(side),
                                                               (*pathspecs, *NEVER_TEXT), word=True)
            for name in wanted:
                mine = [h for h in (held[name] if held is not None else hits) if word_regex(name).search(h[2])]
                self._greps[(re.escape(name), side, tuple(pathspecs), lines_kw)] = mine
                self._greps[(re.escape(name), side, tuple(pathspecs), files_kw)] = _files_of(mine)
        return {n: [p for p, _, _ in self.grep(re.escape(n), side, pathspecs, word=True, files_only=True)]
                for n in names}

    def grep_fixed(self, strings: Iterable[str], side: Side = "head", pathspecs: tuple[str, ...] = (),
                   ) -> dict[str, list[str]]:
        """Per string, the files holding it verbatim, in git's order: for each s the answer of
        `grep(s, side, pathspecs, fixed=True, files_only=True)`, from one search of the tree for all
        of them (git reads a pattern with line breaks as one fixed string per line). Strings must
        hold no line break."""
        strings = list(dict.fromkeys(strings))
        key = (("files_only", True), ("fixed", True))
        wanted = [s for s in strings if (s, side, tuple(pathspecs), key) not in self._greps]
        held = self._lines_holding(wanted, side, tuple(pathspecs)) if wanted else None
        if held is not None or len(wanted) > 1 and all(s and "\n" not in s and "\r" not in s for s in wanted):
            hits = [] if held is not None else self.repo.grep("\n".join(wanted), self.rev(side),
                                                               (*pathspecs, *NEVER_TEXT), fixed=True)
            for s in wanted:
                self._greps[(s, side, tuple(pathspecs), key)] = \
                    _files_of(h for h in (held[s] if held is not None else hits) if s in h[2])
        return {s: [p for p, _, _ in self.grep(s, side, pathspecs, fixed=True, files_only=True)] for s in strings}

    def files(self, side: Side = "head", pathspecs: tuple[str, ...] = ()) -> list[str]:
        return self.repo.ls_tree(self.rev(side), pathspecs)

    def top_level_names(self, side: Side = "head") -> frozenset[str]:
        """The names at the top of the tree, a `.py` file's without its suffix: the first part of an
        import the repository itself provides. Listed once per side and review (three checks ask)."""
        if side not in self._top_level:
            out = self.repo.git("ls-tree", "--name-only", "-z", self.rev(side), check=False)
            self._top_level[side] = frozenset(n.removesuffix(".py") for n in out.decode("utf-8", "surrogateescape").split("\0") if n)
        return self._top_level[side]
