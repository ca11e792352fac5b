"""Tables generated from the pinned upstream sources (tools/generate_rule_sites.py,
tools/generate_key_needs.py); do not edit."""
