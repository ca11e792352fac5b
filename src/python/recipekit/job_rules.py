"""Rules on what a stage's job reads, writes and inherits, for every framework, that no single
upstream line states (issue 24). Each runs three times, on what is known then:

- at plan time, on the stage's paths, its ``environment`` and the ``env_vars`` its config sets;
- at submit, on the job's environment as the cluster profile makes it (``hf_home``,
  ``extra_env``) and the profile's shared storage;
- in every node's preflight, on the environment the framework will inherit (``os.environ``,
  the container's included).

Shared storage (NVIDIA-NeMo/RL#1770): every path a stage reads or writes across nodes
(checkpoints it saves and resumes, the model and data it starts from, ``HF_HOME`` and the other
caches, where NeMo-RL writes its HF -> Megatron conversion) must be one every node sees. The
plan cannot see the cluster's mounts (a test cluster on one host shares ``/tmp``), so a path
under a node-local root is a warning there; submit and preflight know the profile's shared
storage and refuse a written path or cache under a node-local root that is not in it.

Expandable segments beside colocated vLLM (NVIDIA-NeMo/RL#2319, #2471): refused wherever the
job's workers would inherit it.

Secrets (the brief: read from the environment at submit or run time, never written anywhere): a
variable a stage's ``environment`` or its config's ``env_vars`` sets whose name says it holds a
credential is refused at plan time, its value unshown. Written there it lands in the rendered
config, the job directory, the framework's logged hyperparameters and the store; an OmegaConf
``${oc.env:...}`` there is resolved into the same places. The workers inherit the job's
environment, which Slurm takes from the submitting shell (the profile's ``secret_env``). A
config key named for a credential whose value looks like one is a warning (the framework may
need it there).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from recipekit.errors import Issue

STORAGE_THREAD = "NVIDIA-NeMo/RL#1770"
ALLOCATOR_THREADS = "NVIDIA-NeMo/RL#2319, #2471"
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"
# Roots that are private to each node on every Slurm cluster we target.
NODE_LOCAL_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/root", "~")
# Where the frameworks write caches every node then reads: the Hugging Face stack, NeMo-RL's
# HF -> Megatron conversion (NRL_MEGATRON_CHECKPOINT_DIR, else $HF_HOME/nemo_rl:
# nemo_rl/models/policy/utils.py:236-258 @ super-v3.5-posttraining), Triton and Inductor.
CACHE_VARIABLES = (
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_DATASETS_CACHE",
    "TRANSFORMERS_CACHE",
    "NRL_MEGATRON_CHECKPOINT_DIR",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
)
# A name that says it holds a credential: it ends in one of these words (WANDB_API_KEY,
# AWS_SECRET_ACCESS_KEY, comet_api_key, hf_token), or is an environment variable (upper case)
# ending in TOKEN (HF_TOKEN, GITHUB_TOKEN). Not a name that only holds such a word
# (WANDB_API_KEY_FILE, TOKENIZERS_PARALLELISM) nor a config key about tokens (pad_token,
# moe_token_dispatcher_type).
_SECRET_WORDS = re.compile(
    r"(?:^|_)(?:api_?key|secret|secret_key|private_key|password|passwd|credentials?|access_key"
    r"|(?:hf|auth|access|api|bearer|session)_token)$",
    re.IGNORECASE,
)
_VARIABLE_TOKEN = re.compile(r"(?:^|_)TOKEN$")


def names_a_secret(name: str) -> bool:
    """Whether a variable or key named so holds a credential."""
    return bool(_SECRET_WORDS.search(name) or _VARIABLE_TOKEN.search(name))


# A variable's value and the key a message names it by: ``environment.HF_HOME`` (the stage),
# ``profile NAME: hf_home``, ``policy.megatron_cfg.env_vars.HF_HOME`` (the config).
Environment = Mapping[str, tuple[str, str]]


def node_local(path: str, shared: Sequence[str] = ()) -> bool:
    """Under a node-local root and under none of ``shared`` (paths every node mounts)."""

    def under(root: str) -> bool:
        root = root.rstrip("/") or "/"
        return path == root or path.startswith(root + "/")

    return any(under(r) for r in NODE_LOCAL_ROOTS) and not any(under(s) for s in shared)


def relative(path: str) -> bool:
    """A path the job would resolve against its working directory: the container image's
    (the job script sets none), which is no node's shared storage. A URL or a variable is
    not one."""
    return bool(path) and not path.startswith(("/", "~", "$")) and "://" not in path


def unshared(path: str, shared: Sequence[str] = ()) -> bool:
    """Not on storage every node shares: under a node-local root, or relative."""
    return node_local(path, shared) or relative(path)


def crosses_hosts(plan: Mapping[str, Any]) -> bool:
    """More than one node, or a framework that is its own Slurm client: it writes its job's
    files from the submit host, and the job reads them on a compute node."""
    launch = plan.get("framework", {}).get("launch")
    return int(plan["hardware"]["num_nodes"]) > 1 or launch == "delegated"


def config_environments(config: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every ``env_vars`` mapping a rendered config sets for its workers, with its key path
    (NeMo-RL's policy, teacher and vLLM sections; NeMo Evaluator's deployment)."""
    if isinstance(config, Mapping):
        for key, value in config.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "env_vars" and isinstance(value, Mapping):
                yield where, value
            else:
                yield from config_environments(value, where)
    elif isinstance(config, list):
        for index, value in enumerate(config):
            yield from config_environments(value, f"{path}[{index}]")


def plan_environment(config: Any, environment: Mapping[str, str]) -> list[Environment]:
    """What the plan knows the workers inherit: the config's env_vars and the stage's own."""
    found: list[Environment] = [
        {name: (f"{where}.{name}", value) for name, value in env.items() if isinstance(value, str)}
        for where, env in config_environments(config)
    ]
    found.append({name: (f"environment.{name}", value) for name, value in environment.items()})
    return found


def _key_holding(config: Any, value: str, path: str = "") -> str | None:
    """The first key of the rendered config whose value is ``value``: where the user set it."""
    if isinstance(config, Mapping):
        for key, item in config.items():
            where = f"{path}.{key}" if path else str(key)
            # A mapping of the path onto itself (NeMo Evaluator's mounts) is not where it is set.
            found = where if item == value != key else _key_holding(item, value, where)
            if found is not None:
                return found
    return None


def _paths(plan: Mapping[str, Any], roles: str, loads: str) -> Iterator[tuple[str, str]]:
    """``plan[roles]`` (inputs or outputs) and the checkpoints of ``loads`` (starts or
    resumes), each once, by the config key that sets it."""
    checkpoints = plan.get("checkpoints", {}).get(loads, {})
    by_path = {path: key for key, path in checkpoints.items()}
    for role, path in plan.get(roles, {}).items():
        if not isinstance(path, str):
            continue
        key = by_path.pop(path, None)
        # The config is searched only for a path that is refused (a plan's usual paths are not).
        if key is None and unshared(path):
            key = _key_holding(plan.get("config", {}), path)
        yield key or f"{roles}.{role}", path
    yield from ((key, path) for path, key in by_path.items())


def _written_paths(plan: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Paths the run writes: its outputs, and the checkpoints it resumes (and saves to)."""
    return _paths(plan, "outputs", "resumes")


def _read_paths(plan: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Paths the run only reads: its inputs and the checkpoints it starts from."""
    return _paths(plan, "inputs", "starts")


def _storage_issue(key: str, path: str, nodes: str, hint: str) -> Issue:
    where = (
        "a relative path (each node resolves it in its own container's working directory)"
        if relative(path)
        else "a node-local path"
    )
    return Issue(
        key,
        f"{where} on {nodes}: every node must read or write the same files ({STORAGE_THREAD})",
        value=path,
        hint=hint,
    )


def _nodes(plan: Mapping[str, Any]) -> str:
    count = int(plan["hardware"]["num_nodes"])
    return f"a {count}-node run" if count > 1 else "a run its framework submits from this host"


def paths_on_shared_storage(
    plan: Mapping[str, Any],
    environments: Sequence[Environment],
    *,
    shared: Sequence[str] = (),
) -> tuple[list[Issue], list[Issue]]:
    """recipekit.storage.paths-on-shared-storage (NVIDIA-NeMo/RL#1770): (written, read) paths
    of a run that crosses hosts under a node-local root outside ``shared``. A written one (a
    checkpoint directory, a cache) breaks the run; a read one may be a copy staged on every
    node, which preflight's input check sees."""
    if not crosses_hosts(plan):
        return [], []
    nodes = _nodes(plan)
    hint = "use the artifact store (/artifacts) or a path the cluster profile's shared_paths lists"
    written = [
        _storage_issue(key, path, nodes, hint)
        for key, path in _written_paths(plan)
        if isinstance(path, str) and unshared(path, shared)
    ]
    for env in environments:
        written += [
            _storage_issue(key, value, nodes, hint)
            for name, (key, value) in env.items()
            if name in CACHE_VARIABLES and unshared(value, shared)
        ]
    read = [
        _storage_issue(key, path, nodes, "unless a copy is staged on every node: " + hint)
        for key, path in _read_paths(plan)
        if isinstance(path, str) and node_local(path, shared)
    ]
    return written, read


def colocated_vllm(plan: Mapping[str, Any]) -> bool:
    """NeMo-RL generating with vLLM on the training GPUs."""
    generation = plan.get("config", {}).get("policy", {}).get("generation") or {}
    colocated = generation.get("colocated") or {}
    return generation.get("backend") == "vllm" and colocated.get("enabled") is True


def _expandable(conf: str) -> bool:
    options = (part.strip().replace(" ", "") for part in conf.split(","))
    return any(option.lower() == "expandable_segments:true" for option in options)


def no_expandable_segments_with_colocated_vllm(
    plan: Mapping[str, Any], environments: Sequence[Environment]
) -> list[Issue]:
    """recipekit.allocator.no-expandable-segments-with-colocated-vllm (NVIDIA-NeMo/RL#2319,
    #2471). vLLM's sleep mode frees its weights and KV cache through its own CUDA memory pool
    between rollouts; with PyTorch's expandable segments the two fight over mapped segments,
    and the colocated run fails or leaks memory at the first refit. Only the vLLM workers'
    environment counts: the job's, which every worker inherits, and vllm_cfg.env_vars
    (vllm_generation.py); a training worker's own env_vars (megatron_cfg's, dtensor_cfg's:
    lm_policy.py) reach its process alone, where vLLM does not run, as NeMo-RL's DTensor
    examples set them beside colocated vLLM."""
    if not colocated_vllm(plan):
        return []
    return [
        Issue(
            key,
            "expandable segments break colocated vLLM's sleep and wake between rollouts "
            f"({ALLOCATOR_THREADS})",
            value=value,
            hint="remove expandable_segments:True, or run generation non-colocated",
        )
        for env in environments
        for name, (key, value) in env.items()
        if name == ALLOC_CONF and _expandable(value) and not _training_workers_own(key)
    ]


def _training_workers_own(key: str) -> bool:
    """A variable set by a training worker group's env_vars (``...megatron_cfg.env_vars.X``,
    ``...dtensor_cfg.env_vars.X``), which NeMo-RL gives that group's processes only."""
    return any(f"{backend}.env_vars." in key for backend in ("megatron_cfg", "dtensor_cfg"))


# A value of a credential-named config key that is a placeholder, not a credential: a local
# OpenAI-compatible server's key (NeMo Gym's examples give api_key: dummy_key; vLLM's convention
# is EMPTY) or a short word.
_PLACEHOLDER = re.compile(r"(?i).*(dummy|empty|none|null|placeholder|fake|unused|no[-_]?key).*")


def _looks_like_a_credential(value: str) -> bool:
    text = value.strip()
    return (
        len(text) >= 16
        and not any(c.isspace() for c in text)
        and "${" not in text
        and not _PLACEHOLDER.fullmatch(text)
    )


def _credential_keys(config: Any, path: str = "") -> Iterator[str]:
    """The key paths of the rendered config whose name says it holds a credential and whose
    value looks like one. An ``env_vars`` mapping is read as an environment
    (``config_environments``)."""
    if isinstance(config, Mapping):
        for key, item in config.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "env_vars" and isinstance(item, Mapping):
                continue
            if isinstance(item, str) and names_a_secret(str(key)):
                if _looks_like_a_credential(item):
                    yield where
            else:
                yield from _credential_keys(item, where)
    elif isinstance(config, list | tuple):
        for index, item in enumerate(config):
            yield from _credential_keys(item, f"{path}[{index}]")


# Values a framework reads as the name of a variable to take from the job's environment, not as
# the variable's value: NeMo Evaluator's launcher's host: and runtime: (common/env_vars.py,
# parse_env_var_value @ launcher 0.2.6; its lit: is a value).
_REFERENCES = {"nemo-evaluator": re.compile(r"(?:host|runtime):[A-Za-z_][A-Za-z0-9_]*")}
_WRITTEN = "it would land in the rendered config, the job directory and the run's logged settings"


def no_secrets_written(
    plan: Mapping[str, Any], environments: Sequence[Environment]
) -> tuple[list[Issue], list[Issue]]:
    """Secrets are never written: (errors, warnings). A credential variable the stage sets
    (its environment, the config's env_vars) is refused: the workers inherit the job's
    environment, so the shell that submits is where it belongs. A config key named for a
    credential whose value looks like one (not a placeholder, not an interpolation) is a
    warning: the framework may need it in its config, but a recipe is committed code. Neither
    message shows the value."""
    reference = _REFERENCES.get(plan.get("framework", {}).get("name", ""))
    variables = {
        key
        for env in environments
        for name, (key, value) in env.items()
        if names_a_secret(name)
        and value.strip()  # an empty value sets no credential
        and not (reference and reference.fullmatch(value))
    }
    errors = [
        Issue(
            key,
            f"a secret written into the stage: {_WRITTEN}",
            hint="export it in the submitting shell: Slurm hands it to the job (the profile's "
            "secret_env)",
        )
        for key in sorted(variables)
    ]
    warnings = [
        Issue(
            key,
            f"looks like a credential written into the recipe: {_WRITTEN}",
            hint="read it when the job runs: recipekit.nemo_rl.run_env.from_env('NAME')",
        )
        for key in _credential_keys(plan.get("config", {}))
    ]
    return errors, warnings


def plan_rules(
    plan: Mapping[str, Any], environment: Mapping[str, str]
) -> tuple[list[Issue], list[Issue]]:
    """(errors, warnings) at plan time. ``plan``: the planned run as ``Plan.as_json`` has it
    (hardware, framework launch, inputs, outputs, checkpoints, rendered config)."""
    environments = plan_environment(plan.get("config", {}), environment)
    written, read = paths_on_shared_storage(plan, environments)
    errors = no_expandable_segments_with_colocated_vllm(plan, environments)
    secrets, credentials = no_secrets_written(plan, environments)
    return errors + secrets, written + read + credentials


def submit_rules(
    plan: Mapping[str, Any],
    job_environment: Mapping[str, str],
    labels: Mapping[str, str],
    shared: Sequence[str],
) -> list[Issue]:
    """What submit refuses: ``job_environment`` is the job's (``launch.job_script``), each
    variable named by where it was set (``labels``); ``shared`` is what the profile mounts on
    every node. A read path under a node-local root stays preflight's to check."""
    job = {name: (labels.get(name, name), value) for name, value in job_environment.items()}
    environments = [*plan_environment(plan.get("config", {}), {}), job]
    written, _ = paths_on_shared_storage(plan, environments, shared=shared)
    return no_expandable_segments_with_colocated_vllm(plan, environments) + written


def preflight_rules(
    plan: Mapping[str, Any],
    shared: Sequence[str],
    environ: Mapping[str, str] | None = None,
) -> list[Issue]:
    """What a node refuses before the framework starts, on the environment it will inherit
    (the container's included). NeMo-RL writes its HF -> Megatron conversion under
    ``~/.cache/huggingface`` when neither NRL_MEGATRON_CHECKPOINT_DIR nor HF_HOME is set
    (nemo_rl/models/policy/utils.py:247-256): a node-local home is then refused too."""
    environ = os.environ if environ is None else environ
    job = {name: (f"job environment {name}", environ[name]) for name in environ}
    written, _ = paths_on_shared_storage(plan, [job], shared=shared)
    converts = plan.get("framework", {}).get("name") == "nemo-rl" and not any(
        environ.get(name, "").strip() for name in ("NRL_MEGATRON_CHECKPOINT_DIR", "HF_HOME")
    )
    # The home directory itself is taken as shared (it is on the clusters we target, and the
    # local test cluster's nodes share one host's /root); a HOME on scratch space is not.
    home = environ.get("HOME") or os.path.expanduser("~")
    fallback = f"{home.rstrip('/')}/.cache/huggingface"
    scratch = not fallback.startswith(("/root/", "~/")) and node_local(fallback, shared)
    if converts and crosses_hosts(plan) and scratch:
        written.append(
            _storage_issue(
                "job environment HF_HOME",
                f"unset, so {fallback}",
                _nodes(plan),
                "set hf_home in the cluster profile to a path on shared storage",
            )
        )
    return no_expandable_segments_with_colocated_vllm(plan, [job]) + written


# The rules the plan, submit and every node's preflight run for any stage whatever its
# framework (the rule catalogue cites them: recipekit.storage.*, recipekit.allocator.*).
PLAN_RULES = (
    paths_on_shared_storage,
    no_expandable_segments_with_colocated_vllm,
    no_secrets_written,
)

__all__ = [
    "PLAN_RULES",
    "names_a_secret",
    "no_expandable_segments_with_colocated_vllm",
    "no_secrets_written",
    "paths_on_shared_storage",
    "plan_rules",
    "preflight_rules",
    "submit_rules",
]
