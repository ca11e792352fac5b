"""Ray's GCS settings for a multi-node job, as NeMo-RL's own launch sets them.

At scale, the burst of actor start-up sends thousands of RegisterWorker RPCs to the one GCS on
the head: its RPC queue backs up, workers time out registering, the raylet kills them, and
NCCL collectives inside vLLM hang for good (NeMo-RL #3089, #3158). NeMo-RL's ``ray.sub``
(NVIDIA-NeMo/RL@7ea279ab, lines 273-374) exports ``RAY_<config>`` variables before every
``ray start``; Ray reads them at process start. It sets them at every node count (they are
sized for the worst burst); what it derives is the GCS's thread pools, from the node's CPU count
(``CPUTot`` of the first node: one ``scontrol show node``, #3132). The job script takes the
count from ``SLURM_CPUS_ON_NODE`` instead (the job is ``--exclusive``, so that is the node's
every CPU), which costs no call to Slurm.

A variable the submitting shell or the profile (``extra_env``) already set wins, as in
``ray.sub`` (``${NAME:-default}``).
"""

from __future__ import annotations

import attrs

# The job script's variable for the node's CPU count, and Slurm's, that it is read from.
CPUS_VARIABLE = "cpus_per_node"
SLURM_CPUS = "SLURM_CPUS_ON_NODE"


@attrs.frozen
class RaySetting:
    """``RAY_<config>``: ``fixed``, or ``cpus * per_cpu // divisor`` (at least 1)."""

    config: str
    why: str
    fixed: str | None = None
    per_cpu: int = 0
    divisor: int = 1

    @property
    def variable(self) -> str:
        return f"RAY_{self.config}"

    def value(self, cpus_per_node: int) -> str:
        if self.fixed is not None:
            return self.fixed
        return str(max(1, cpus_per_node * self.per_cpu // self.divisor))

    def shell(self) -> str:
        """The value in bash, from ``$cpus_per_node``."""
        if self.fixed is not None:
            return self.fixed
        if self.per_cpu == 1 and self.divisor == 1:
            return f"${CPUS_VARIABLE}"
        product = CPUS_VARIABLE
        product += f" * {self.per_cpu}" if self.per_cpu != 1 else ""
        product += f" / {self.divisor}" if self.divisor != 1 else ""
        return f"$(( {product} > 0 ? {product} : 1 ))"


# NVIDIA-NeMo/RL ray.sub @ 7ea279ab, by line; defaults are Ray's (src/ray/common/ray_config_def.h).
GCS_SETTINGS: tuple[RaySetting, ...] = (
    RaySetting(
        "gcs_server_rpc_server_thread_num",
        "threads polling GCS requests: the node's cores (Ray: a quarter; ray.sub:300)",
        per_cpu=1,
    ),
    RaySetting(
        "num_server_call_thread",
        "threads sending GCS replies: half the cores (ray.sub:301)",
        per_cpu=1,
        divisor=2,
    ),
    RaySetting(
        "gcs_server_rpc_client_thread_num",
        "threads polling the GCS's own calls to raylets: the cores (ray.sub:302)",
        per_cpu=1,
    ),
    RaySetting(
        "gcs_max_active_rpcs_per_handler",
        "in-flight RPCs per GCS handler: twice Ray's auto default (ray.sub:309)",
        per_cpu=200,
    ),
    RaySetting(
        "worker_register_timeout_seconds",
        "raylet kills a worker not registered by then (Ray: 60; ray.sub:321)",
        fixed="120",
    ),
    RaySetting(
        "gcs_rpc_server_connect_timeout_s",
        "first connection to the GCS (Ray: 5; ray.sub:322)",
        fixed="120",
    ),
    RaySetting(
        "gcs_rpc_server_reconnect_timeout_s",
        "reconnecting to the GCS (Ray: 60; ray.sub:323)",
        fixed="120",
    ),
    RaySetting(
        "gcs_server_request_timeout_seconds",
        "synchronous GCS requests (Ray: 60; ray.sub:324)",
        fixed="120",
    ),
    RaySetting(
        "raylet_report_resources_period_milliseconds",
        "resource reports to the GCS, 5x rarer (Ray: 100; ray.sub:333)",
        fixed="500",
    ),
    RaySetting(
        "task_events_report_interval_ms",
        "task events to the GCS, 5x rarer (Ray: 1000; ray.sub:334)",
        fixed="5000",
    ),
    RaySetting(
        "num_workers_soft_limit",
        "idle workers per node, each holding a GCS connection (Ray: CPUs; ray.sub:342)",
        fixed="16",
    ),
    RaySetting(
        "grpc_keepalive_time_ms",
        "GCS keepalive pings, 6x rarer (Ray: 10 s; ray.sub:351)",
        fixed="60000",
    ),
    RaySetting(
        "grpc_keepalive_timeout_ms",
        "keepalive ACK wait, not below the interval (Ray: 20 s; ray.sub:352)",
        fixed="60000",
    ),
    RaySetting(
        "enable_timeline",
        "no timeline event per actor and task (ray.sub:359)",
        fixed="false",
    ),
    RaySetting(
        "event_stats",
        "no event-loop statistics in the GCS (ray.sub:360)",
        fixed="false",
    ),
    RaySetting(
        "ray_syncer_message_refresh_interval_ms",
        "cross-node state refresh, 3x rarer (Ray: 3 s; ray.sub:372)",
        fixed="10000",
    ),
    RaySetting(
        "core_worker_internal_heartbeat_ms",
        "worker heartbeats to the raylet (Ray: 1 s; ray.sub:373)",
        fixed="5000",
    ),
    RaySetting(
        "health_check_period_ms",
        "GCS health probes of nodes; a dead node is seen in ~50 s, not ~15 s (ray.sub:374)",
        fixed="10000",
    ),
)


def gcs_settings(num_nodes: int, cpus_per_node: int) -> dict[str, str]:
    """``RAY_<config>`` -> value for a Ray cluster of ``num_nodes`` nodes of ``cpus_per_node``
    CPUs. NeMo-RL applies the same tuning at every node count (``ray.sub`` has no threshold):
    the node count does not change a value, the CPU count sizes the thread pools."""
    if num_nodes < 1 or cpus_per_node < 1:
        raise ValueError(f"{num_nodes} nodes of {cpus_per_node} CPUs: both must be at least 1")
    return {s.variable: s.value(cpus_per_node) for s in GCS_SETTINGS}


def gcs_script_lines(num_nodes: int) -> list[str]:
    """The job script's block: the CPU count from Slurm's environment, then one ``export`` a
    setting that keeps a value already set."""
    lines = [
        f"# Ray's GCS for {num_nodes} node(s), as NeMo-RL's ray.sub tunes it at every size",
        "# (#3089, #3158): start-up's registration burst would otherwise time out and hang NCCL.",
        "# Thread pools follow the node's CPUs (the job is exclusive); a value set before wins.",
        f"{CPUS_VARIABLE}=${{{SLURM_CPUS}:-1}}",
    ]
    for setting in GCS_SETTINGS:
        name = setting.variable
        lines.append(f'export {name}="${{{name}:-{setting.shell()}}}"  # {setting.why}')
    return lines
