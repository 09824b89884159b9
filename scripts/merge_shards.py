#!/usr/bin/env python3
"""Merge the JSON of `pr-review stats --shard K/N --json FILE` runs into one corpus and print its
statistics, as one run over the whole range would have.

    python scripts/merge_shards.py shards/*.json --output corpus.json

Every shard must come from the same repository and range, and together they must be the N shards
of one split (1/N … N/N, each once); a PR reviewed by two shards counts once.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pr_review.stats import write_summary


class ShardError(Exception):
    pass


def merge(shards: list[dict]) -> dict:
    if not shards:
        raise ShardError("no shard given")
    sources = {(s["repo"], s["range"]) for s in shards}
    if len(sources) > 1:
        raise ShardError("shards of different runs: " + "; ".join(f"{r} {g}" for r, g in sorted(sources)))
    totals = {s["shard"][1] for s in shards}
    found = sorted(s["shard"][0] for s in shards)
    if len(totals) > 1 or found != list(range(1, next(iter(totals)) + 1)):
        raise ShardError(f"expected shards 1..N of one split, got {', '.join(f'{k}/{n}' for k, n in (s['shard'] for s in shards))}")
    rows: dict[str, dict] = {}
    for shard in shards:
        for row in shard["rows"]:
            rows.setdefault(row["sha"], row)
    repo, rev_range = next(iter(sources))
    return {"repo": repo, "range": rev_range, "shards": len(shards),
            "seconds": round(sum(s["seconds"] for s in shards), 1), "rows": list(rows.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shards", nargs="+", help="JSON files written by `pr-review stats --json`")
    parser.add_argument("--output", help="write the merged corpus JSON here")
    args = parser.parse_args(argv)
    try:
        corpus = merge([json.loads(Path(p).read_text(encoding="utf-8")) for p in args.shards])
    except (OSError, ValueError, ShardError) as exc:
        print(f"merge_shards: {exc}", file=sys.stderr)
        return 2
    except (KeyError, TypeError) as exc:
        print(f"merge_shards: not the JSON of `pr-review stats --json` (missing or mistyped {exc})", file=sys.stderr)
        return 2
    if args.output:
        Path(args.output).write_text(json.dumps(corpus, indent=1) + "\n", encoding="utf-8")
    # the seconds are summed over shards: machine time, not the wall time the matrix took
    return write_summary(corpus["rows"], f"{corpus['repo']} ({corpus['range']}, {corpus['shards']} shards)",
                         corpus["seconds"], sys.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
