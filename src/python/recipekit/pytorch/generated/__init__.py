"""Modules generated from pinned upstream sources (tools/generate_torch_optim.py); do not edit."""
