"""Modules generated from the pinned NeMo-RL sources by tools/ generators; do not edit."""
