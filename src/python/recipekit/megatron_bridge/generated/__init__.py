"""Modules generated from pinned upstream sources by tools/generate_override_fields.py."""
