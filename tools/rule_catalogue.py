#!/usr/bin/env python3
"""The coverage table of the run-time rule catalogue (issue 24).

    python3 tools/rule_catalogue.py           # prints the table (Markdown)

Per framework: how many rules are catalogued, how many a plan-time check mirrors, how many are
out of reach before start-up and why (the catalogue's closed set of reasons), then each reason's
details grouped (recipekit/rule_catalogue/*.toml). The
user's guide generates its "Run-time rules" page from ``coverage_table`` on every build
(docs/_ext/recipekit_pages.py), so the table is never written by hand or checked in.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from recipekit import rule_catalogue

# What each reason means, in the table's words.
REASON_TEXT = {
    "needs-job": "needs the running job (its environment, packages, metrics or rollouts)",
    "needs-data": "needs the data or a checkpoint's files on the cluster",
    "needs-gpu": "needs the GPU the job starts on",
    "unreachable": "unreachable from the stage's entry points or keys",
    "not-mirrored": "reachable by a --set of what it reads, not checked at plan time yet",
}


def coverage_table() -> str:
    entries = rule_catalogue.load()
    reasons = rule_catalogue.REASONS
    lines = [
        "| framework | catalogued | mirrored | not checked at plan time | "
        + " | ".join(reasons)
        + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in reasons) + " |",
    ]
    for name in rule_catalogue.present():
        mine = [e for e in entries if e.framework == name]
        mirrored = sum(e.mirrored for e in mine)
        per_reason = Counter(e.reason for e in mine if not e.mirrored)
        lines.append(
            f"| {name} | {len(mine)} | {mirrored} | {len(mine) - mirrored} | "
            + " | ".join(str(per_reason[r]) for r in reasons)
            + " |"
        )
    lines += [
        "",
        "Why the rest is not checked at plan time (rules per reason, then per detail):",
        "",
    ]
    for reason in reasons:
        details = Counter(e.detail for e in entries if e.reason == reason)
        lines.append(f"- {reason} ({sum(details.values())}): {REASON_TEXT[reason]}")
        lines += [
            f"  - {count}: {detail}"
            for detail, count in sorted(details.items(), key=lambda r: (-r[1], r[0]))
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.parse_args()
    print(coverage_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
