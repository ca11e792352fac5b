"""Moving a pinned framework source to a new commit as one reviewable change (``recipekit
upgrade``): ``pins`` (the manifest and the files), ``keys`` (declared keys and config values),
``rules`` (the catalogue's anchors), ``run`` (the edits and the stages compiled before and
after), ``report`` (the decisions), ``decisions`` (those a reviewer recorded)."""
