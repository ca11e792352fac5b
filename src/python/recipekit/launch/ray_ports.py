"""The Ray port plan, and the lessons of NeMo-RL's ``ray.sub`` that it encodes.

Every port Ray opens is fixed, so a firewall rule or a port check can name it, and every fixed
port sits below the kernel's ephemeral range, where an outgoing connection could take it first.
Where several nodes share one host (the tests), each node shifts its block by ``node_offset``.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from recipekit.errors import FieldError
from recipekit.validators import at_least

# Linux's default net.ipv4.ip_local_port_range starts here.
EPHEMERAL_PORTS_START = 32768


def below_ephemeral(what: str, binder: str) -> Callable[[object, attrs.Attribute[int], int], None]:
    """A fixed port outside the ephemeral range, where any outgoing connection could take it
    before ``binder`` binds it."""

    def check(_: object, attribute: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            error = FieldError(f"{what} must be a port number", value)
            error.field_name = attribute.name  # type: ignore[attr-defined]
            raise error
        if not 1024 <= value < EPHEMERAL_PORTS_START:
            raise ValueError(
                f"{what} {attribute.name}={_shown(value)} must be in "
                f"1024..{EPHEMERAL_PORTS_START - 1} (a port number): "
                f"an ephemeral port can be taken by any outgoing connection before {binder} "
                "binds it"
            )

    return check


def _shown(value: int) -> str:
    # 10**5000 has more digits than Python writes out (4300): its size says enough.
    if abs(value) < 10**18:
        return str(value)
    sign = "-" if value < 0 else ""
    return f"{sign}<a {value.bit_length()}-bit number>"


_below_ephemeral = below_ephemeral("ray port", "Ray")


def _offset(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    # One function (not at_least alone, which lets None through and compares a string with
    # 0 as a TypeError): a profile's mistake is named at its line.
    if not isinstance(value, int) or isinstance(value, bool):
        error = FieldError("must be a whole number of ports", value)
        error.field_name = attribute.name  # type: ignore[attr-defined]
        raise error
    at_least(0)(_, attribute, value)


@attrs.frozen(kw_only=True)
class RayPorts:
    gcs: int = attrs.field(default=6379, validator=_below_ephemeral)
    dashboard: int = attrs.field(default=8265, validator=_below_ephemeral)
    node_manager: int = attrs.field(default=20001, validator=_below_ephemeral)
    object_manager: int = attrs.field(default=20002, validator=_below_ephemeral)
    runtime_env_agent: int = attrs.field(default=20003, validator=_below_ephemeral)
    dashboard_agent_grpc: int = attrs.field(default=20004, validator=_below_ephemeral)
    dashboard_agent_listen: int = attrs.field(default=20005, validator=_below_ephemeral)
    metrics_export: int = attrs.field(default=20006, validator=_below_ephemeral)
    min_worker: int = attrs.field(default=20100, validator=_below_ephemeral)
    max_worker: int = attrs.field(default=20999, validator=_below_ephemeral)
    # Several nodes on one host (tests): node k uses every per-node port + k * node_offset.
    node_offset: int = attrs.field(default=0, validator=_offset)

    def __attrs_post_init__(self) -> None:
        if self.max_worker <= self.min_worker:
            raise ValueError("ray worker port range is empty (max_worker <= min_worker)")
        fixed = self.fixed_ports(0)
        if len(set(fixed.values())) != len(fixed):
            raise ValueError(f"ray ports collide: {fixed}")
        in_range = [n for n, p in fixed.items() if self.min_worker <= p <= self.max_worker]
        if in_range:
            raise ValueError(f"ray ports {in_range} fall inside the worker port range")
        span = self.max_worker - min(self.node_manager, self.min_worker) + 1
        if self.node_offset and self.node_offset < span:
            raise ValueError(
                f"node_offset {self.node_offset} is smaller than one node's port block ({span})"
            )

    def fixed_ports(self, node_index: int) -> dict[str, int]:
        """The ports node ``node_index`` binds, by name (the head also binds gcs and dashboard)."""
        shift = node_index * self.node_offset
        ports = {
            "node_manager": self.node_manager + shift,
            "object_manager": self.object_manager + shift,
            "runtime_env_agent": self.runtime_env_agent + shift,
            "dashboard_agent_grpc": self.dashboard_agent_grpc + shift,
            "dashboard_agent_listen": self.dashboard_agent_listen + shift,
            "metrics_export": self.metrics_export + shift,
        }
        if node_index == 0:
            ports = {"gcs": self.gcs, "dashboard": self.dashboard, **ports}
        return ports

    def start_arguments(self, node_index: int) -> list[str]:
        """``ray start`` flags for node ``node_index``."""
        shift = node_index * self.node_offset
        ports = self.fixed_ports(node_index)
        args = [
            f"--node-manager-port={ports['node_manager']}",
            f"--object-manager-port={ports['object_manager']}",
            f"--runtime-env-agent-port={ports['runtime_env_agent']}",
            f"--dashboard-agent-grpc-port={ports['dashboard_agent_grpc']}",
            f"--dashboard-agent-listen-port={ports['dashboard_agent_listen']}",
            f"--metrics-export-port={ports['metrics_export']}",
            f"--min-worker-port={self.min_worker + shift}",
            f"--max-worker-port={self.max_worker + shift}",
        ]
        if node_index == 0:
            args += [f"--port={self.gcs}"]
        return args
