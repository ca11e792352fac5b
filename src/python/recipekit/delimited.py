"""A comma list whose items may hold commas of their own inside brackets: Slurm's host lists
(``n[1,3],m7``) and the brace patterns Energon expands in shard names (``{a,{b,c}}``)."""

from __future__ import annotations


def split_top_level(text: str, brackets: str) -> list[str]:
    """``text`` split at the commas outside ``brackets`` (its opening and closing character);
    a ValueError where they do not balance."""
    opening, closing = brackets[0], brackets[1]
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {opening: 1, closing: -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise ValueError(f"{text!r}: unbalanced brackets")
    return [*parts, current]
