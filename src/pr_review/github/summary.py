"""The review as users read it on GitHub: the check-run summary and the job summary, each kept
under its size limit by leaving out the least important list entries first, with a marker saying
what was cut."""
from __future__ import annotations

from typing import Any, Callable

from ..model import Finding, Report, field, record
from ..report.render import environment

CHECK_SUMMARY_LIMIT = 65535  # characters in output.summary (GitHub answers 422 above)
JOB_SUMMARY_LIMIT = 1024 * 1024  # bytes a step may add to $GITHUB_STEP_SUMMARY
# Cut first what a reader misses least; findings last, from the lowest severity up.
TRIM_ORDER = ("notes", "not_checked", "checklist", "unannotated", "core_files", "ci", "findings")


@record
class Publication:
    """What the publish stage adds to the review: where it went and what changed since last time."""

    check_name: str
    annotation_cap: int
    unannotated: list[Finding] = field(default_factory=list)  # over the cap: listed instead
    previous_sha: str | None = None  # head of the previous review of this PR, when one was found
    new_count: int = 0
    gone_count: int = 0  # findings of the previous review not reported any more
    stale_annotations: int = 0  # annotations left on this run by an earlier review that no longer apply
    previous_unread: str | None = None  # head of the previous review, when its check runs could not be read
    previous_unread_reason: str = ""
    check_run_url: str | None = None
    fallback: str | None = None  # why no check run was posted
    unposted: int = 0  # annotations the check run did not get (a batch failed); the next run adds them
    unposted_reason: str = ""
    commands_left_out: int = 0  # workflow-command annotations beyond the runner's per-level limit


class _Trimmed:
    """The report with some lists shortened; verdict and counts still come from the whole report."""

    def __init__(self, whole: Any, lists: dict[str, list[Any]]):
        self._whole = whole
        self._lists = lists

    def __getattr__(self, name: str) -> Any:
        if name in self._lists:
            return self._lists[name]
        return getattr(self._whole, name)


def render_summary(report: Report, publication: Publication, language: str, *, limit: int,
                   size: Callable[[str], int] = len, where: str = "check") -> str:
    """Render `check_summary.<language>.md.j2` within `limit` as measured by `size`."""
    env = environment()
    template = env.get_template(f"check_summary.{language}.md.j2")
    marker = env.get_template(f"check_cut.{language}.md.j2")
    full = {name: list(getattr(publication if name == "unannotated" else report, name)) for name in TRIM_ORDER}

    def render(keep: dict[str, int]) -> str:
        lists = {name: items[:keep.get(name, len(items))] for name, items in full.items()}
        cut = [(name, len(full[name]) - len(lists[name]), len(full[name])) for name in TRIM_ORDER
               if len(lists[name]) < len(full[name])]
        view = _Trimmed(publication, {"unannotated": lists.pop("unannotated")})
        return template.render(r=_Trimmed(report, lists), publish=view, cut=cut, hard=False,
                               limit=limit, where=where)

    keep: dict[str, int] = {}
    text = render(keep)
    for name in TRIM_ORDER:
        if size(text) <= limit:
            return text
        # The most entries of `name` that still fit, by bisection. One finding always stays: with
        # none, the templates would read as a clean review.
        low, high = min(len(full[name]), 1 if name == "findings" else 0), len(full[name])
        while low < high:
            middle = (low + high + 1) // 2
            if size(render({**keep, name: middle})) <= limit:
                low = middle
            else:
                high = middle - 1
        keep[name] = low
        text = render(keep)
    if size(text) <= limit:
        return text
    # Even the skeleton is too long (a huge title or note): cut the text itself at a line end.
    tail = marker.render(cut=[], hard=True, limit=limit, where=where)
    room = limit - size(tail)
    while size(text) > room:
        text = text[:len(text) - max(1, (size(text) - room) // 4)]  # a character is at most 4 bytes
    return (text[:text.rfind("\n") + 1] or text) + tail
