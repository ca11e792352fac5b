#!/usr/bin/env python3
"""The coverage table of the run-time rule catalogue (issue 24).

    python3 tools/rule_catalogue.py           # prints the table (Markdown)

Per framework: how many rules are catalogued, how many a plan-time check mirrors, how many are
out of reach before start-up, and those reasons grouped (recipekit/rule_catalogue/*.toml). The
user's guide generates its "Run-time rules" page from ``coverage_table`` on every build
(docs/_ext/recipekit_pages.py), so the table is never written by hand or checked in.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from recipekit import rule_catalogue


def coverage_table() -> str:
    entries = rule_catalogue.load()
    lines = [
        "| framework | catalogued | mirrored | out of reach before start-up |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name in rule_catalogue.present():
        mine = [e for e in entries if e.framework == name]
        mirrored = sum(e.mirrored for e in mine)
        lines.append(f"| {name} | {len(mine)} | {mirrored} | {len(mine) - mirrored} |")
    reasons = Counter(e.unchecked for e in entries if not e.mirrored)
    lines += ["", "Why the rest is not checked at plan time (rules per reason):", ""]
    lines += [
        f"- {count}: {reason}"
        for reason, count in sorted(reasons.items(), key=lambda r: (-r[1], r[0]))
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
