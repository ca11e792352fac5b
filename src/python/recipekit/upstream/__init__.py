"""What an upstream framework declares, read from its pinned source with ``ast``: never imported,
never copied by hand.

``classes`` reads config classes (``TypedDict``, pydantic models, dataclasses) with their
fields, types, defaults and declared constraints; ``annotations`` turns an upstream annotation
into a Python type recipekit's section checks understand. Generators in ``tools/`` write what
recipekit needs at plan time from them (the plan never reads upstream sources), and tests
regenerate each generated module and fail on any difference.
"""
