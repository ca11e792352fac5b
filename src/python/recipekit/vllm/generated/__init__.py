"""Modules generated from pinned upstream sources (tools/generate_vllm_kwargs.py); do not edit."""
