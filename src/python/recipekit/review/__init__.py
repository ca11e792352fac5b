"""Reviewing recipe changes: compiled-plan snapshots, semantic diffs, and where a value comes from.

- ``discover``: every ``Stage`` a recipe module under ``recipes/`` defines;
- ``compiled``: a stage's compiled plan as reviewable files and as one nested document;
- ``keydiff``: key-by-key differences between two such documents;
- ``snapshots``: the checked-in copies beside each recipe, checked and regenerated;
- ``revision``: the compiled plans of another git revision;
- ``explain``: the origin of one key's value.
"""
