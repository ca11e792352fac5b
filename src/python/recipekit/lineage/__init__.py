"""Artifact lineage: what each stage reads (by role) and publishes, independent of any framework.

``refs``: artifact references (``NAME:latest|vN|step-N``); ``graph``: stage lineage, ``--set
run.<role>=...`` overrides and pipeline checks; ``drawing``: the stage graph laid out by Graphviz's
``dot`` as SVG, with live status;
``tracking``: W&B runs that record a plan and its lineage, and a reader of offline runs.
``tracking`` imports ``wandb`` only inside its functions.
"""

from recipekit.lineage.graph import (
    DATA,
    MODEL,
    Import,
    Pipeline,
    PipelinePhase,
    StageLineage,
    apply_overrides,
    is_lineage_override,
    pipeline_issues,
)
from recipekit.lineage.refs import ArtifactRef, ExternalInput, InputSource, parse_ref

__all__ = [
    "DATA",
    "MODEL",
    "ArtifactRef",
    "ExternalInput",
    "Import",
    "InputSource",
    "Pipeline",
    "PipelinePhase",
    "StageLineage",
    "apply_overrides",
    "is_lineage_override",
    "parse_ref",
    "pipeline_issues",
]
