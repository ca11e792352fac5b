"""Command lines: the per-stage launcher and the general ``recipekit`` tool."""
