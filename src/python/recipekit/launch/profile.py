"""Cluster profiles: where and how a plan runs, reviewed like recipes (no YAML, no TOML).

A profile says which Slurm account and partition to use, which container runtime starts the
job, what shared storage must be mounted, and which environment the job needs. Secrets are
never part of a profile: their *names* are, and their values travel from the submitting shell.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal

import attrs

from recipekit.errors import FieldError, Issue, RecipeError
from recipekit.hardware import NodeType
from recipekit.job_rules import names_a_secret
from recipekit.launch.ray_ports import RayPorts, below_ephemeral
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.validators import (
    absolute_path,
    at_least,
    instance_of,
    matching,
    single_line_problem,
    str_mapping,
)

if TYPE_CHECKING:
    import cattrs

    from recipekit.checkouts import CodeCheckout


_time_limit = matching(r"(\d+-)?\d{1,2}:\d{2}:\d{2}", "expected [D-]HH:MM:SS, e.g. 04:00:00")

# Every value of a profile that reaches the job script is checked against what Slurm and the
# shell accept, when the profile is made. sbatch reads its #SBATCH directives without quotes
# (a space splits one, a newline ends the block and drops the directives after it), srun splits
# --container-mounts at ',' and ':', and a comment line ends at a newline: so names and paths
# come from a small alphabet, matched whole, and no value holds a control character (every
# string, keys and free text too, is one line: validators.single_line_problem).
_SLURM_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_slurm_name = matching(
    _SLURM_NAME, "must be a name of letters, digits, '.', '_' and '-' (as Slurm takes it)"
)
_partitions = matching(
    f"{_SLURM_NAME}(,{_SLURM_NAME})*",
    "must be a partition name, or several separated by ',' (letters, digits, '.', '_', '-')",
)
_path_alphabet = matching(
    r"/[A-Za-z0-9._+@=~/-]*",
    "must be a path of letters, digits and '._+@=~/-' (no space, ',', ':' or '%': sbatch "
    "reads its directives unquoted and srun splits mounts at ',' and ':')",
)


def _job_path(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    # One function, not a list: attrs would run a list from its own frames, and a profile's
    # mistake is reported at the innermost frame outside recipekit and attrs' generated code.
    if value is None:  # absolute_path lets None through, for the fields that are optional
        _fail(attribute, "must be an absolute path, not None", value)
    absolute_path(_, attribute, value)
    _path_alphabet(_, attribute, value)


_image = matching(
    r"[A-Za-z0-9][A-Za-z0-9._/:@#+-]*",
    "must be an image reference (registry/name:tag or @sha256:digest), with no space",
)
_command = matching(r"[A-Za-z0-9._/+-]+", "must be a command or a path, with no space")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _path_text(value: Any) -> Any:
    """A ``pathlib`` path is accepted where a profile takes a path, as its text."""
    return str(value) if isinstance(value, PurePath) else value


def _fail(attribute: attrs.Attribute[Any], message: str, value: Any) -> None:
    error = FieldError(message, value)
    error.field_name = attribute.name  # type: ignore[attr-defined]
    raise error


def _one_line(attribute: attrs.Attribute[Any], text: str, what: str) -> None:
    """``text`` (``what`` names it in the message: a key, a key's value) is one line."""
    problem = single_line_problem(text)
    if problem:
        _fail(attribute, f"{what} {problem}", text)


def _env_name(attribute: attrs.Attribute[Any], name: Any) -> None:
    if isinstance(name, str):
        _one_line(attribute, name, f"{name!r}")
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        _fail(attribute, f"{name!r} is not an environment variable name", name)


def _env_mapping(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Environment the job script exports: names the shell takes, values it quotes (one line:
    review.compiled reads an export per line, and nothing means a control character here)."""
    str_mapping(_, attribute, value)
    for key, text in value.items():
        _env_name(attribute, key)
        _one_line(attribute, text, f"{key}'s value")


def _names(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A tuple of environment variable names (a bare string would be read as its letters)."""
    if isinstance(value, str) or not isinstance(value, tuple):
        _fail(attribute, "must be a tuple of names, e.g. ('WANDB_API_KEY',)", value)
    for name in value:
        _env_name(attribute, name)


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _path_mapping(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Named paths on shared storage: names without control characters, paths as above."""
    str_mapping(_, attribute, value)
    for key, path in value.items():
        _one_line(attribute, key, f"{key!r}")
        _job_path(_, attribute, path)


def _text_mapping(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Names and free text the job prints (a preflight check skipped, and why): one line each."""
    str_mapping(_, attribute, value)
    for key, text in value.items():
        _one_line(attribute, key, f"{key!r}")
        _one_line(attribute, text, f"{key}'s value")


Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


# attrs' own combinators (optional, in_, a list of validators) would run a validator from
# attrs' frames, and a profile's mistake is reported at the innermost frame outside recipekit
# (loading._recipe_frame): these run it from recipekit's, so the error names the profile's line.
def _optional(validator: Validator) -> Validator:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            validator(instance, attribute, value)

    return check


def _every(*validators: Validator) -> Validator:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        for validator in validators:
            validator(instance, attribute, value)

    return check


def _choice(*allowed: str) -> Validator:
    """One of ``allowed``, and never None (recipekit's one_of lets None through: a schema key
    left unset; a profile's JSON would not read back with it)."""
    listed = ", ".join(repr(a) for a in allowed)

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, str):
            _one_line(attribute, value, "the value")
        if not isinstance(value, str) or value not in allowed:
            _fail(attribute, f"must be one of {listed}", value)

    return check


def _interval(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    instance_of(int, float, what="seconds")(_, attribute, value)
    if isinstance(value, float) and not math.isfinite(value):
        _fail(attribute, "must be a finite number of seconds", value)
    at_least(0.1)(_, attribute, value)


def _own_kind(kind: str) -> Validator:
    """``kind`` names the class in the profile's JSON (the job reads the profile back by it):
    Pyxis(kind='oci-bundle') would be read back as an OciBundle, a made-up kind not at all."""

    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, str):
            _one_line(attribute, value, "the kind")
        if value != kind:
            _fail(attribute, f"is {kind!r} (the container's class says which it is)", value)

    return check


@attrs.frozen
class Mount:
    """A host path bind-mounted into the container."""

    host: str = attrs.field(validator=_job_path)
    container: str = attrs.field(validator=_job_path)

    @classmethod
    def parse(cls, text: str) -> Mount:
        host, _, container = text.partition(":")
        return cls(host, container or host)

    def __str__(self) -> str:
        return f"{self.host}:{self.container}"


def _mounts(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(m, Mount) for m in value):
        _fail(attribute, "must be a tuple of Mount(host, container)", value)


# Pyxis scopes a container's name to the job, so one name serves every job.
CONTAINER_NAME = "recipekit"


@attrs.frozen(kw_only=True)
class Pyxis:
    """Run every job step in a container with pyxis/enroot (``srun --container-image``)."""

    image: str = attrs.field(validator=_image)
    mounts: tuple[Mount, ...] = attrs.field(default=(), converter=_as_tuple, validator=_mounts)
    # Inside the container.
    python: str = attrs.field(default="python3", validator=_command)

    kind: str = attrs.field(default="pyxis", validator=_own_kind("pyxis"))

    def srun_flags(self) -> list[str]:
        # Named, the container is created once per node and job and reused by the job's later
        # steps (preflight, then the framework, then the record): an unnamed one is imported
        # from the image again for every step. Pyxis removes it when the job ends.
        flags = [f"--container-image={self.image}", f"--container-name={CONTAINER_NAME}"]
        if self.mounts:
            flags.append("--container-mounts=" + ",".join(str(m) for m in self.mounts))
        return flags

    def in_container(self, host_path: str) -> str:
        return _in_container(self.mounts, host_path)


def _in_container(mounts: tuple[Mount, ...], host_path: str) -> str:
    for mount in sorted(mounts, key=lambda m: -len(m.host)):
        if host_path == mount.host or host_path.startswith(mount.host.rstrip("/") + "/"):
            return mount.container + host_path[len(mount.host.rstrip("/")) :]
    raise RecipeError([Issue("profile.container.mounts", f"{host_path} is not under any mount")])


@attrs.frozen(kw_only=True)
class OciBundle:
    """Run every job step in an unpacked OCI bundle with Slurm's own container support
    (``srun --container=DIR``; the cluster's oci.conf names the runtime, e.g. runc): for
    clusters without pyxis. A runtime takes its bind mounts from the bundle's config.json, so
    ``mounts`` must be the ones the bundle was made with (``launch.oci_bundle.pull_bundle``).
    """

    # A directory every node reaches at this path (shared storage), holding config.json and rootfs.
    bundle: str = attrs.field(validator=_job_path)
    mounts: tuple[Mount, ...] = attrs.field(default=(), converter=_as_tuple, validator=_mounts)
    # Inside the container.
    python: str = attrs.field(default="python3", validator=_command)

    kind: str = attrs.field(default="oci-bundle", validator=_own_kind("oci-bundle"))

    def srun_flags(self) -> list[str]:
        return [f"--container={self.bundle}"]

    def in_container(self, host_path: str) -> str:
        return _in_container(self.mounts, host_path)


@attrs.frozen(kw_only=True)
class NoContainer:
    """Run job steps directly on the node, with this Python (it must have Ray)."""

    python: str = attrs.field(default="python3", validator=_command)

    kind: str = attrs.field(default="none", validator=_own_kind("none"))

    def srun_flags(self) -> list[str]:
        return []

    def in_container(self, host_path: str) -> str:
        return host_path


@attrs.frozen(kw_only=True)
class Gb200Settings:
    """Multi-node NVLink on GB200 NVL72: the IMEX channel the job's GPUs share memory through."""

    # /dev/nvidia-caps-imex-channels/channel<N>: N counts from 0.
    imex_channel: int = attrs.field(
        validator=_every(instance_of(int, what="a channel number"), at_least(0)),
    )
    nccl_mnnvl_enable: bool = attrs.field(
        default=True, validator=instance_of(bool, what="True or False")
    )
    # The interface Gloo binds to; the wrong one hangs torch.distributed at start-up.
    gloo_socket_ifname: str = attrs.field(
        default="enp0s1",
        validator=matching(r"[A-Za-z0-9._-]{1,15}", "must be a network interface's name"),
    )
    imex_device_dir: str = attrs.field(
        default="/dev/nvidia-caps-imex-channels", validator=_job_path
    )
    # Nodes of one NVLink domain as Slurm's topology/block sees it (BlockSizes): an NVL72 rack
    # holds 18 compute trays of 4 GPUs. The job's --segment must fit in it (launch.placement).
    nvlink_domain_nodes: int = attrs.field(
        default=18, validator=_every(instance_of(int, what="a node count"), at_least(1))
    )
    # Whether the cluster's sbatch takes --segment (Slurm 24.05+; an older sbatch refuses the
    # whole script as an unrecognized option). Off, the job asks for no segment and only
    # preflight's rack check keeps the groups together.
    slurm_segment: bool = attrs.field(
        default=True, validator=instance_of(bool, what="true or false")
    )

    def environment(self) -> dict[str, str]:
        return {
            "NVIDIA_IMEX_CHANNELS": str(self.imex_channel),
            "NCCL_MNNVL_ENABLE": "1" if self.nccl_mnnvl_enable else "0",
            "GLOO_SOCKET_IFNAME": self.gloo_socket_ifname,
        }


@attrs.frozen(kw_only=True)
class ArtifactStore:
    """Shared storage holding every artifact version (``recipekit.lineage.store``): every
    container of every stage sees it at ``/artifacts``, where plans read inputs and write
    checkpoints. Without a container, every node must mount it at ``/artifacts`` itself."""

    # The host path, the same on every node (shared storage).
    path: str = attrs.field(converter=_path_text, validator=_job_path)

    def mount(self) -> Mount:
        return Mount(self.path, ARTIFACTS_ROOT)


TrackingMode = Literal["online", "offline", "off"]


@attrs.frozen(kw_only=True)
class Tracking:
    """Where the head records a finished run (W&B): its plan, lineage and output artifact.

    "online" needs ``WANDB_API_KEY`` in the submitting shell (``submit`` refuses without it);
    "offline" writes the run under the run directory for ``wandb sync`` later; "off" records
    nothing. The key is never part of a profile: Slurm hands it to the job as environment.
    """

    mode: TrackingMode = attrs.field(
        default="online", validator=_choice("online", "offline", "off")
    )
    # The recipe, Configuration: env.toml's [wandb] project = "nemotron".
    project: str = attrs.field(default="nemotron", validator=_slurm_name)
    # None: the API key's default entity.
    entity: str | None = attrs.field(default=None, validator=_optional(_slurm_name))


@attrs.frozen
class BaseContainer:
    """The container image a stage on one base (a name in ``containers/bases.py``) runs in on
    this cluster, and where that image holds the framework's checkout."""

    image: str = attrs.field(validator=_image)
    framework_root: str = attrs.field(converter=_path_text, validator=_job_path)


def _bases(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        _fail(attribute, "must be a dict of base names to BaseContainer(...)", value)
    for base, found in value.items():
        if isinstance(base, str):
            _one_line(attribute, base, f"base {base!r}")
        if not isinstance(base, str) or not re.fullmatch(_SLURM_NAME, base):
            _fail(attribute, f"{base!r} is not a base's name", base)
        if not isinstance(found, BaseContainer):
            _fail(
                attribute,
                f"{base}: must be BaseContainer(image=..., framework_root=...), not "
                f"{type(found).__name__}",
                found,
            )


def _allowance_fits(profile: ClusterProfile) -> None:
    """The start-up allowance leaves the framework some of the time limit."""
    from recipekit.launch.time_budget import limit_seconds

    limit = limit_seconds(profile.time_limit)
    if profile.startup_allowance_s is not None and profile.startup_allowance_s >= limit:
        raise RecipeError(
            [
                Issue(
                    f"profile {profile.name}: startup_allowance_s",
                    f"{profile.startup_allowance_s} s leaves no training time in the time "
                    f"limit {profile.time_limit} ({limit} s)",
                    value=profile.startup_allowance_s,
                    hint="a longer time_limit, or the start-up this cluster's jobs measure",
                )
            ]
        )


@attrs.frozen(kw_only=True)
class ClusterProfile:
    # Every field is checked when the profile is made (a profile file that sets a field to the
    # wrong type fails when it loads, naming the field, before anything is written).
    name: str = attrs.field(validator=_slurm_name)
    node: NodeType = attrs.field(validator=instance_of(NodeType, what="a NodeType"))
    partition: str = attrs.field(validator=_partitions)
    account: str | None = attrs.field(default=None, validator=_optional(_slurm_name))
    # Where a framework that is its own Slurm client (a "delegated" stage: NeMo Evaluator's
    # launcher) submits from, over ssh: its execution.hostname. Usually the login node.
    login_host: str | None = attrs.field(
        default=None,
        validator=_optional(matching(r"[A-Za-z0-9._@-]+", "must be a host name (or user@host)")),
    )
    time_limit: str = attrs.field(default="04:00:00", validator=_time_limit)
    # Seconds of each job that are not the framework's training time: image pull, preflight,
    # Ray, loading weights and starting vLLM before its clock starts, the last save after it
    # stops. The framework's save deadline is time_limit minus this (launch.time_budget):
    # measure a stage's start-up in its log ("ray cluster complete", the framework's first
    # step) and set this above it; too short, and Slurm's time limit comes first. None: a
    # quarter of the time limit, at most 30 minutes (``startup_allowance``).
    startup_allowance_s: int | None = attrs.field(
        default=None,
        validator=_optional(_every(instance_of(int, what="whole seconds"), at_least(0))),
    )
    # Seconds before the time limit that Slurm signals the job (``#SBATCH --signal``), the last
    # line of defence when start-up outran the allowance: a framework that saves on a signal
    # (Megatron-Bridge) must save and stop within it, so it is the time this cluster's storage
    # takes to write a checkpoint, and more. Slurm may signal up to a minute early: a time limit
    # shorter than this plus 60 s gets no signal (``continuation.script_directives``).
    time_limit_signal_s: int = attrs.field(
        default=120, validator=_every(instance_of(int, what="whole seconds"), at_least(1))
    )
    container: Pyxis | OciBundle | NoContainer = attrs.field(
        factory=NoContainer,
        validator=instance_of(
            Pyxis, OciBundle, NoContainer, what="Pyxis, OciBundle or NoContainer"
        ),
    )
    # Shared storage (host paths) for each run's plan, launcher and logs.
    runs_dir: str = attrs.field(converter=_path_text, validator=_job_path)
    # Shared paths (as the job sees them) that must be mounted and writable on every node.
    shared_paths: dict[str, str] = attrs.field(factory=dict, validator=_path_mapping)
    # Where artifact versions live; None: this cluster runs no stage that reads or publishes
    # artifacts (submit refuses such a stage).
    artifact_store: ArtifactStore | None = attrs.field(
        default=None,
        validator=_optional(instance_of(ArtifactStore, what="an ArtifactStore")),
    )
    # How often the head of a Ray stage publishes new checkpoints while the framework runs
    # (a pinned step must be kept before the framework's keep policy deletes it).
    publish_interval_s: float = attrs.field(
        default=60.0,
        validator=_interval,
    )
    hf_home: str | None = attrs.field(
        default=None, converter=_path_text, validator=_optional(_job_path)
    )
    gb200: Gb200Settings | None = attrs.field(
        default=None,
        validator=_optional(instance_of(Gb200Settings, what="Gb200Settings")),
    )
    extra_env: dict[str, str] = attrs.field(factory=dict, validator=_env_mapping)
    # Names read from the submitting shell and handed to the job by Slurm's --export.
    secret_env: tuple[str, ...] = attrs.field(
        default=("WANDB_API_KEY", "HF_TOKEN"), converter=_as_tuple, validator=_names
    )
    ray_ports: RayPorts = attrs.field(
        factory=RayPorts, validator=instance_of(RayPorts, what="a RayPorts")
    )
    # How long the head waits for every node's Ray (and a worker for the head's GCS). None:
    # derived from the node count (``ray_start_timeout``), so 144 nodes get more than 16.
    ray_start_timeout_s: int | None = attrs.field(
        default=None,
        validator=_optional(_every(instance_of(int, what="whole seconds"), at_least(1))),
    )
    # torch.distributed's MASTER_PORT for "per-gpu" stages, bound by rank 0 on the first node.
    # NOT IN THE RECIPE: torch.distributed's default port (torchrun --master-port).
    master_port: int = attrs.field(default=29500, validator=below_ephemeral("port", "rank 0"))
    # Where several nodes share one host (tests), simultaneous Ray starts time out; worker k
    # then waits for worker k-1's raylet. Real clusters start every worker at once.
    start_workers_one_at_a_time: bool = attrs.field(
        default=False, validator=instance_of(bool, what="True or False")
    )
    # The framework's checkout inside the container (NeMo-RL's examples/ live here).
    framework_root: str = attrs.field(
        default="/opt/nemo-rl", converter=_path_text, validator=_job_path
    )
    # Preflight checks to skip, with the reason (printed in the job log).
    preflight_skip: dict[str, str] = attrs.field(factory=dict, validator=_text_mapping)
    # How the launcher reaches the nodes. "mounted": the upstream image (by digest) runs the
    # launcher Pex copied to the run directory on shared storage, as ray.sub users work today.
    # "baked": the container image is the stage image `publish` pushed, launcher and plan inside.
    shipping: Literal["mounted", "baked"] = attrs.field(
        default="mounted", validator=_choice("mounted", "baked")
    )
    tracking: Tracking = attrs.field(
        factory=Tracking, validator=instance_of(Tracking, what="a Tracking")
    )
    # The base whose image ``container`` names; stages on other bases (Megatron-Bridge on NeMo,
    # evaluation on vLLM, Super 3.5 RL) run in the image ``bases`` gives for theirs.
    default_base: str = attrs.field(default="nemo-rl", validator=_slurm_name)
    bases: dict[str, BaseContainer] = attrs.field(factory=dict, validator=_bases)
    # Where the source checkouts stages mount live on shared storage (host paths), by name
    # (``CodeCheckout.name``, e.g. "megatron-bridge"): the job mounts each at the stage's
    # mount point, and submit and preflight check its commit.
    code_checkouts: dict[str, str] = attrs.field(factory=dict, validator=_path_mapping)

    def __attrs_post_init__(self) -> None:
        _allowance_fits(self)
        # The job reaches its run directory through the container's mounts.
        self.container.in_container(self.runs_dir)
        store_issue = self._artifact_store_issue()
        if store_issue is not None:
            raise RecipeError([store_issue])
        if self.shipping == "baked" and isinstance(self.container, NoContainer):
            raise RecipeError(
                [
                    Issue(
                        f"profile {self.name}: shipping",
                        "baked needs a container image (Pyxis or OciBundle)",
                    )
                ]
            )

    def _artifact_store_issue(self) -> Issue | None:
        store, container = self.artifact_store, self.container
        if store is None:
            return None
        where = f"profile {self.name}: artifact_store.path"
        if isinstance(container, NoContainer) and store.path != ARTIFACTS_ROOT:
            return Issue(
                where,
                f"without a container the job sees host paths, so every node must have the "
                f"store at {ARTIFACTS_ROOT}",
                value=store.path,
                hint=f"mount it at {ARTIFACTS_ROOT} on every node, or run in a container",
            )
        if isinstance(container, OciBundle) and store.mount() not in container.mounts:
            return Issue(
                where,
                "an OCI bundle takes its mounts from its config.json: make the bundle with "
                f"the mount {store.mount()}",
                value=store.path,
            )
        return None

    def job_container(self, code: Sequence[CodeCheckout]) -> Pyxis | OciBundle | NoContainer:
        """The container the job's steps run in: pyxis also mounts the artifact store and the
        stage's source checkouts (``code``)."""
        container = self.container
        if not isinstance(container, Pyxis):
            return container
        wanted = [self.artifact_store.mount()] if self.artifact_store is not None else []
        for checkout in code:
            if checkout.name in self.code_checkouts:
                wanted.append(Mount(self.code_checkouts[checkout.name], checkout.mount))
        added = tuple(m for m in wanted if m not in container.mounts)
        return attrs.evolve(container, mounts=(*container.mounts, *added)) if added else container

    @property
    def python(self) -> str:
        return self.container.python

    @property
    def startup_allowance(self) -> int:
        """``startup_allowance_s``, or by default a quarter of the time limit, at most 30 min."""
        from recipekit.launch.time_budget import DEFAULT_STARTUP_ALLOWANCE_S, limit_seconds

        if self.startup_allowance_s is not None:
            return self.startup_allowance_s
        return min(DEFAULT_STARTUP_ALLOWANCE_S, limit_seconds(self.time_limit) // 4)

    def ray_start_timeout(self, num_nodes: int) -> int:
        """``ray_start_timeout_s``, or by default one derived from the node count
        (``launch.bringup.ray_start_timeout``)."""
        from recipekit.launch.bringup import ray_start_timeout

        if self.ray_start_timeout_s is not None:
            return self.ray_start_timeout_s
        return ray_start_timeout(num_nodes)

    def for_base(self, base: str) -> ClusterProfile:
        """This profile as a stage on ``base`` runs on it: that base's image and checkout."""
        if not isinstance(self.container, Pyxis) or base == self.default_base:
            return self
        found = self.bases.get(base)
        if found is None:
            known = ", ".join(sorted({self.default_base, *self.bases}))
            raise RecipeError(
                [
                    Issue(
                        f"profile {self.name}: bases",
                        f"no container for base image {base!r} (this profile has: {known})",
                        hint=f"add bases={{{base!r}: BaseContainer(image=..., framework_root=...)}}"
                        " in recipes/clusters.py",
                    )
                ]
            )
        return attrs.evolve(
            self,
            container=attrs.evolve(self.container, image=found.image),
            framework_root=found.framework_root,
            default_base=base,
            bases={},
        )

    def site_values(self, base: str) -> dict[str, str | None]:
        """What a "delegated" framework's own Slurm client is told of this cluster, by its
        placeholder (``recipekit.framework.SITE_PLACEHOLDERS``), for a stage on ``base``;
        None where the profile has no value. Without a container of ours the client still
        starts containers of its own: their image is the one ``bases`` gives."""
        image = self.container.image if isinstance(self.container, Pyxis) else None
        if image is None and base in self.bases:
            image = self.bases[base].image
        return {
            "{login_host}": self.login_host,
            "{account}": self.account,
            "{partition}": self.partition,
            "{image}": image,
        }

    def inlined_secrets(self) -> list[Issue]:
        """Secrets written into the profile (they would land in the job script): refused."""
        issues = []
        for key in self.extra_env:
            if key in self.secret_env or names_a_secret(key):
                issues.append(
                    Issue(
                        f"profile {self.name}: extra_env.{key}",
                        "a secret must not be written into a profile (it would land in the job "
                        "script)",
                        hint=f"export {key} in the submitting shell and list it in secret_env",
                    )
                )
        return issues


_CONTAINER_KINDS: dict[str, type[Pyxis | OciBundle | NoContainer]] = {
    "pyxis": Pyxis,
    "oci-bundle": OciBundle,
    "none": NoContainer,
}


@functools.cache
def _converter() -> cattrs.Converter:
    # Made on first use: `plan` never writes a profile, and importing cattrs costs it ~45 ms.
    import cattrs

    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(
        Pyxis | OciBundle | NoContainer,
        lambda d, _: converter.structure(d, _CONTAINER_KINDS[d.get("kind", "none")]),
    )
    return converter


def profile_to_json(profile: ClusterProfile) -> dict[str, Any]:
    out = _converter().unstructure(profile)
    assert isinstance(out, dict)
    return out


def profile_from_json(data: dict[str, Any]) -> ClusterProfile:
    return _converter().structure(data, ClusterProfile)
