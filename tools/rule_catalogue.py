#!/usr/bin/env python3
"""Write the README's coverage table of the run-time rule catalogue (issue 24).

    python3 tools/rule_catalogue.py           # rewrites README.md between the markers
    python3 tools/rule_catalogue.py --check   # exit 1 if README.md differs from what it would write

Per framework: how many rules are catalogued, how many a plan-time check mirrors, how many are
out of reach before start-up, and those reasons grouped (recipekit/rule_catalogue/*.toml).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from recipekit import rule_catalogue

BEGIN, END = "<!-- rule-catalogue:begin -->", "<!-- rule-catalogue:end -->"
README = Path(__file__).resolve().parent.parent / "README.md"


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


def with_table(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{coverage_table()}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"error: README.md has no {BEGIN} ... {END} block", file=sys.stderr)
        return 2
    wanted = with_table(text)
    if args.check:
        return 0 if wanted == text else 1
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
