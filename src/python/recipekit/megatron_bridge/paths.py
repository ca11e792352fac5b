"""Where a Megatron-Bridge stage's inputs and outputs are, as values of its config.

The recipe names each stage's inputs and output (its "Artifact Lineage" table) but not the paths
a job sees them at: NOT IN THE RECIPE, chosen here, in one place.

- An artifact input is ``RunInput(role)``: the plan resolves it from the stage's lineage to
  where the cluster profile mounts that artifact version (``/artifacts/<name>/<version>``,
  ``recipekit.lineage.refs.artifact_path``), so ``--set run.model=NAME:v3`` moves it.
- An input from the environment (pretraining's ``SUPER35_INIT_CHECKPOINT``) is an OmegaConf
  ``${oc.env:VAR}``, which Megatron-Bridge resolves when it applies the overrides
  (``training/utils/omegaconf_utils.py``: ``process_config_with_overrides``, ``resolve=True``).
- Data a recipe ships (long-context SFT's built-in dataset) has no path: ``UNSET`` keeps the
  recipe's dataset.
- The output checkpoint goes to the artifact store, ``/artifacts/<output artifact>/<run>``
  (``recipekit.lineage.store.output_dir``): the ``nemotron`` CLI's super3 stages write
  ``/nemo_run/super3-sft-model`` (``stage1_sft/config/default.yaml``), inside a container that
  is gone when the job ends.
"""

from __future__ import annotations

from recipekit.lineage import ArtifactRef, StageLineage
from recipekit.lineage.store import output_dir
from recipekit.markers import UNSET, RunInput, Unset
from recipekit.nemo_rl.run_env import from_env


def input_path(lineage: StageLineage, role: str) -> str | Unset:
    """The config value for the stage's ``run.<role>`` input."""
    source = lineage.inputs[role]
    if isinstance(source, ArtifactRef):
        return RunInput(role)
    if source.env_var:
        return from_env(source.env_var)
    return UNSET


def checkpoint_dir(lineage: StageLineage) -> str:
    """Where the stage saves the checkpoint it publishes as its output artifact."""
    if lineage.output is None:
        raise ValueError(f"{lineage.stage} publishes no artifact to save a checkpoint for")
    return output_dir(lineage.output)
