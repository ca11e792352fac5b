"""GB200 placement by rack: every GB200 stage's job script asks Slurm for its segment, H100 and
B200 ones do not, and preflight refuses nodes whose NVLink domains split a group. The node
inventory is written as `nvidia-smi -q` prints it (the Fabric block as on a GB200 tray: State,
Status, CliqueId, ClusterUUID, Health; kubernetes-sigs/dra-driver-nvidia-gpu#626 shows one)."""

from __future__ import annotations

import functools
from pathlib import Path

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.launch import preflight
from recipekit.launch.placement import (
    Domain,
    Placement,
    fabric_domain,
    inventory_file,
    placement_problem,
    ray_domain_resource,
)
from recipekit.launch.preflight import NodeContext, nvlink_domains_hold_the_groups
from recipekit.launch.profile import Gb200Settings
from recipekit.launch.run_files import run_files
from recipekit.plan import Plan, make_plan
from recipekit.review.discover import StageRef, discover_stages
from recipes.clusters import PROFILES

ROOT = Path(__file__).resolve().parents[4]
RACK_A = "5b2a2d4a-7c1e-4b8f-9d6e-0f1a2b3c4d5e"
RACK_B = "dc6e40c4-d722-4357-9ba6-5291dd461278"


def nvidia_smi_q(cluster_uuid: str, clique_id: str = "32766", *, state: str = "Completed") -> str:
    """`nvidia-smi -q` of a 4-GPU GB200 tray, in its own layout (fields padded to column 42)."""

    def field(indent: int, key: str, value: str) -> str:
        return f"{' ' * indent}{key:<{42 - indent}}: {value}"

    lines = [
        "",
        "==============NVSMI LOG==============",
        "",
        field(0, "Timestamp", "Mon Sep 29 12:40:26 2025"),
        field(0, "Driver Version", "570.133.20"),
        field(0, "CUDA Version", "12.8"),
        "",
        field(0, "Attached GPUs", "4"),
    ]
    for gpu in range(4):
        lines += [
            f"GPU 0000000{gpu + 8}:01:00.0",
            field(4, "Product Name", "NVIDIA GB200"),
            field(4, "Product Architecture", "Blackwell"),
            field(4, "GPU UUID", f"GPU-6328b923-c487-281a-fd27-291f5d27889{gpu}"),
            "    Fabric",
            field(8, "State", state),
            field(8, "Status", "Success"),
            field(8, "CliqueId", clique_id),
            field(8, "ClusterUUID", cluster_uuid),
            "        Health",
            field(12, "Summary", "Healthy"),
            field(12, "Bandwidth", "Full"),
            field(12, "Route Recovery in progress", "False"),
            field(12, "Route Unhealthy", "False"),
            field(12, "Access Timeout Recovery", "False"),
            field(4, "Processes", "None"),
            "",
        ]
    return "\n".join(lines)


H100_Q = nvidia_smi_q("00000000-0000-0000-0000-000000000000", "0")


@functools.cache
def _stages() -> tuple[StageRef, ...]:
    return tuple(discover_stages(ROOT))


def _script(ref: StageRef) -> str:
    plan = make_plan(ref.stage)
    profile = next(p for p in PROFILES.values() if p.node == ref.stage.hardware.node)
    script = run_files(plan, profile.for_base(ref.stage.framework.image)).job_script
    assert script is not None
    return script


def _crosses_a_node(plan: Plan) -> bool:
    found = plan.as_json().get("placement")
    return found is not None and "unplaced" not in found


@pytest.mark.parametrize("ref", _stages(), ids=lambda r: r.stage.name)
def test_gb200_scripts_ask_slurm_for_their_segment_and_no_other_does(ref: StageRef) -> None:
    plan = make_plan(ref.stage)
    if ref.stage.framework.launch == "delegated":
        pytest.skip("a delegated stage's script is no batch job")
    script = _script(ref)
    if ref.stage.hardware.node.name != "GB200":
        assert "--segment" not in script and "nvidia-smi -q" not in script
        return
    if ref.stage.hardware.num_nodes == 1:
        # One tray: every group is inside it, so inside its rack; nothing to ask Slurm.
        assert "--segment" not in script
        return
    # Every multi-node GB200 stage in recipes/ places a group across nodes, and asks for it.
    assert _crosses_a_node(plan), plan.as_json().get("placement")
    segment = plan.as_json()["placement"]["segment"]
    assert f"#SBATCH --segment={segment}\n" in script
    assert ref.stage.hardware.num_nodes % segment == 0  # sbatch refuses any other
    assert "topology/block" in script and "nvidia-smi \\\n    -q" in script


def test_nemo_rl_gets_the_segment_size_where_its_version_declares_it() -> None:
    by_name = {r.stage.name: make_plan(r.stage).as_json() for r in _stages()}
    # super-v3.5-posttraining declares cluster.segment_size: its training groups' span.
    assert by_name["rlvr"]["config"]["cluster"]["segment_size"] == 4
    assert by_name["rlvr"]["placement"]["order"] == "by-domain"
    # super-v3 does not: the key is never set, and the whole job is one segment.
    assert "segment_size" not in by_name["dapo-gb200"]["config"]["cluster"]
    assert by_name["dapo-gb200"]["placement"]["segment"] == 5


def test_a_segment_larger_than_the_clusters_domain_is_refused() -> None:
    ref = next(r for r in _stages() if r.stage.name == "sft-long-context")
    small = attrs.evolve(
        PROFILES["gb200-nvl72"], gb200=Gb200Settings(imex_channel=0, nvlink_domain_nodes=8)
    )
    with pytest.raises(RecipeError, match="16-node segments inside one NVLink domain; this"):
        run_files(make_plan(ref.stage), small.for_base(ref.stage.framework.image))


def test_nvidia_smi_q_gives_the_domain_or_why_not() -> None:
    assert fabric_domain(nvidia_smi_q(RACK_A)) == Domain(RACK_A, "32766")
    assert "no multi-node NVLink fabric" in str(fabric_domain(H100_Q))
    assert "State In Progress" in str(fabric_domain(nvidia_smi_q(RACK_A, state="In Progress")))
    mixed = nvidia_smi_q(RACK_A) + nvidia_smi_q(RACK_B).split("Attached GPUs", 1)[1]
    assert "different NVLink domains" in str(fabric_domain(mixed))


def _ctx(tmp_path: Path, plan: dict, monkeypatch: pytest.MonkeyPatch, racks: dict) -> NodeContext:
    """The nodes of ``racks`` (name -> ClusterUUID) as Slurm lists them, each with its file."""
    for node, rack in racks.items():
        path = tmp_path / inventory_file(node)
        path.parent.mkdir(exist_ok=True)
        path.write_text(nvidia_smi_q(rack))
    monkeypatch.setenv("SLURM_JOB_NODELIST", ",".join(racks))
    return NodeContext(
        plan=plan,
        profile=PROFILES["gb200-nvl72"],
        node_index=0,
        node_name=next(iter(racks)),
        node_address="127.0.0.1",
        run_path=str(tmp_path),
    )


def test_preflight_refuses_nodes_whose_racks_split_a_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = next(r for r in _stages() if r.stage.name == "sft-long-context")
    plan = make_plan(ref.stage).as_json()  # Megatron-Bridge: 16 consecutive nodes per rack
    good = {f"gb{i:03d}": RACK_A if i < 16 else RACK_B for i in range(32)}
    assert nvlink_domains_hold_the_groups(_ctx(tmp_path, plan, monkeypatch, good)) is None
    split = {f"gb{i:03d}": RACK_A if i < 12 else RACK_B for i in range(32)}
    problem = nvlink_domains_hold_the_groups(_ctx(tmp_path, plan, monkeypatch, split))
    assert problem is not None and "\n" not in problem
    assert problem.startswith("the plan's groups (tensor x context parallel (32 GPUs) over 8")
    assert "on nodes 1-16 would span NVLink domains: gb000,gb001," in problem
    assert f"gb011 in {RACK_A}/32766; gb012," in problem and f"gb015 in {RACK_B}/32766" in problem


def test_preflight_counts_whole_segments_where_nemo_rl_places_by_rack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = next(r for r in _stages() if r.stage.name == "teacher-rlhf-teacher1-stage1")
    plan = make_plan(ref.stage).as_json()  # 36 nodes; 16 training nodes, one 16-node group
    good = {f"gb{i:03d}": RACK_A if i < 18 else RACK_B for i in range(36)}
    assert nvlink_domains_hold_the_groups(_ctx(tmp_path, plan, monkeypatch, good)) is None
    split = {f"gb{i:03d}": RACK_A if i % 2 else RACK_B for i in range(30)}
    split |= {f"gb{i:03d}": "0e4a2b1c-3d5f-4a6b-8c7d-9e0f1a2b3c4d" for i in range(30, 36)}
    problem = nvlink_domains_hold_the_groups(_ctx(tmp_path, plan, monkeypatch, split))
    assert (
        problem is not None
        and "1 segments of 16 nodes inside one NVLink domain each are " "needed, the nodes form 0"
        in problem
    )
    # Preflight runs the check: its name and one line in the failures.
    lines: list[str] = []
    failures = preflight.run_preflight(_ctx(tmp_path, plan, monkeypatch, split), lines.append)
    assert any(f.startswith("nvlink-domains: the plan's groups") for f in failures)


def test_a_node_without_its_inventory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = next(r for r in _stages() if r.stage.name == "dapo-gb200")
    plan = make_plan(ref.stage).as_json()
    ctx = _ctx(tmp_path, plan, monkeypatch, {f"n{i}": RACK_A for i in range(1, 5)})
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-5]")
    problem = nvlink_domains_hold_the_groups(ctx) or ""
    assert problem.startswith("no NVLink domain for n5 (no nvidia-smi -q at ")


def test_ray_registers_the_nodes_domain_as_nemo_rl_reads_it(tmp_path: Path) -> None:
    plan = make_plan(next(r for r in _stages() if r.stage.name == "rlvr").stage).as_json()
    (tmp_path / inventory_file("gb001")).parent.mkdir()
    (tmp_path / inventory_file("gb001")).write_text(nvidia_smi_q(RACK_B))
    assert ray_domain_resource(plan, tmp_path, "gb001", print) == [
        '--resources={"nvlink_domain_' + RACK_B + '": 1}'
    ]


def test_placement_round_trips_and_checks_node_order() -> None:
    placement = Placement.from_json(
        {
            "segment": 4,
            "span": 2,
            "order": "node-order",
            "placed_nodes": 4,
            "groups": {"tensor parallel (8 GPUs)": 2},
        }
    )
    a, b = Domain(RACK_A, "1"), Domain(RACK_B, "1")
    assert (
        placement_problem(placement, ["n1", "n2", "n3", "n4"], {"n1": a, "n2": a, "n3": b, "n4": b})
        is None
    )
    assert "nodes 1-2" in str(
        placement_problem(placement, ["n1", "n2", "n3", "n4"], {"n1": a, "n2": b, "n3": b, "n4": b})
    )
