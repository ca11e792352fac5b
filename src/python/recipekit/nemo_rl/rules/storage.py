"""Every path a multi-node run reads or writes must be on storage every node sees
(NVIDIA-NeMo/RL#1770: ``HF_HOME`` and converted checkpoints on a node-local disk).

The plan does not know the cluster profile (it is chosen at submit time), so it cannot prove a
path is shared. What it can know: a path under the artifact store (``/artifacts``) is shared; a
path under a node-local root (``/tmp``, ``/dev/shm``, ...) is not. The rest (relative paths,
other absolute paths, ``${oc.env:...}`` references) is left to the submit-time preflight, which
checks the inputs on the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.rules.allocator import env_var_sections

# Roots that are private to each node on every Slurm cluster we target.
NODE_LOCAL_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/root", "~")
# Caches the Hugging Face stack and Triton write to, set through the config's env_vars.
CACHE_VARIABLES = (
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_DATASETS_CACHE",
    "TRANSFORMERS_CACHE",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
)
THREAD = "NVIDIA-NeMo/RL#1770"


def node_local(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in NODE_LOCAL_ROOTS)


def _paths(ctx: CheckContext) -> Iterator[tuple[str, object]]:
    cfg = ctx.config
    if cfg.checkpointing.enabled:
        yield "checkpointing.checkpoint_dir", cfg.checkpointing.checkpoint_dir
    yield "policy.model_name", cfg.policy.model_name
    yield "policy.tokenizer.name", cfg.policy.tokenizer.name
    for split in ("train", "validation", "default"):
        dataset = getattr(cfg.data, split, None)
        yield f"data.{split}.data_path", getattr(dataset, "data_path", None)
    for path, env in env_var_sections(ctx):
        for variable in CACHE_VARIABLES:
            yield f"{path}.{variable}", env.get(variable)


def paths_are_not_node_local(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.storage.paths-on-shared-storage (NVIDIA-NeMo/RL#1770)."""
    if ctx.hardware.num_nodes <= 1:
        return
    for key, value in _paths(ctx):
        if isinstance(value, str) and node_local(value):
            yield Issue(
                key,
                f"a node-local path on a {ctx.hardware.num_nodes}-node run: every node must read "
                f"or write the same files ({THREAD})",
                value=value,
                hint="use the artifact store (/artifacts) or a shared file system",
            )


# A warning: a path under /tmp is node-local on a cluster's compute nodes, but the plan cannot
# see the mounts of the cluster it will run on (a test cluster on one machine shares /tmp);
# preflight, on every node, refuses an input some node does not see.
ERROR_CHECKS: tuple[()] = ()
WARNING_CHECKS = (paths_are_not_node_local,)
