"""Tables generated from the pinned upstream sources (tools/generate_rule_sites.py); do not edit."""
