"""Cluster profiles, reviewed like recipes: ``submit --cluster NAME`` picks one by name.

These describe the Nemotron 3 Super GRPO/DAPO guide's clusters: fill in account, partition,
image and storage for yours, or add a profile here. Images are NeMo-RL containers built from the
super-v3 branch (the guide's ``superv3-a90de923d`` tag); pin them by digest before submitting.
"""

import attrs

from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE
from recipekit.launch.profile import (
    ArtifactStore,
    BaseContainer,
    ClusterProfile,
    Gb200Settings,
    Mount,
    Pyxis,
    Tracking,
)

# The guide mounts shared storage at /shared inside the container.
SHARED = (Mount("/lustre/your-team/shared", "/shared"),)
SHARED_PATHS = {
    "checkpoints": "/shared/checkpoints",
    "models": "/shared/models",
    "hf_home": "/shared/HF_HOME",
}

# The images of the other bases (containers/bases.py), by reference: pin each by digest before
# submitting. NVIDIA's NeMo image and vLLM's are multi-architecture; the Super 3.5 RL image is
# your build of NeMo-RL super-v3.5-posttraining @ f299847f1 (the Super 3.5 recipe: "built from the
# stage-owned Dockerfile"), pushed where your cluster pulls from.
BASES = {
    "nemo-rl-super35": BaseContainer(
        image="nvcr.io/your-org/nemo-rl:super-v3.5-posttraining-f299847f1",
        framework_root="/opt/nemo-rl",
    ),
    # Megatron-Bridge's scripts/training/run_recipe.py lives in its checkout in the NeMo image.
    "nemo": BaseContainer(image="nvcr.io/nvidia/nemo:26.08", framework_root="/opt/Megatron-Bridge"),
    "vllm": BaseContainer(image="docker.io/vllm/vllm-openai:v0.30.0", framework_root="/"),
}

b200 = ClusterProfile(
    name="b200",
    node=B200_NODE,
    account="your-account",
    partition="batch",
    # Where NeMo Evaluator's launcher (the eval stage) runs sbatch, over ssh: your login node.
    login_host="login.your-cluster.example",
    time_limit="08:00:00",
    container=Pyxis(image="nvcr.io/your-org/nemo-rl:superv3-a90de923d", mounts=SHARED),
    runs_dir="/lustre/your-team/shared/recipekit-runs",
    shared_paths=SHARED_PATHS,
    # Every artifact version (checkpoints, imported data), at /artifacts in every container.
    # `recipekit store init` it once; `recipekit store import` registers data and models.
    artifact_store=ArtifactStore(path="/lustre/your-team/shared/artifacts"),
    # The source checkouts stages mount (recipes/super35/sft.py: Megatron-Bridge for the
    # Super-VL recipes), at the commit each stage pins: submit and preflight check it.
    code_checkouts={"megatron-bridge": "/lustre/your-team/shared/code/Megatron-Bridge"},
    hf_home="/shared/HF_HOME",
    framework_root="/opt/nemo-rl",
    # Every finished run is recorded in W&B: submit needs WANDB_API_KEY in the shell. The Super
    # 3.5 recipe's env.toml: [wandb] project = "nemotron", entity = "YOUR-TEAM" (fill in yours).
    tracking=Tracking(mode="online", project="nemotron", entity="your-team"),
    bases=BASES,
)

gb200_nvl72 = attrs.evolve(
    b200,
    name="gb200-nvl72",
    node=GB200_NODE,
    partition="gb200nvl72",
    # GB200 nodes are aarch64: the image is the arm64 build of the same NeMo-RL commit.
    container=Pyxis(image="nvcr.io/your-org/nemo-rl-gb200:superv3-a90de923d", mounts=SHARED),
    # Ask the admins for your IMEX channel: ls /dev/nvidia-caps-imex-channels/ on a node.
    gb200=Gb200Settings(imex_channel=0, gloo_socket_ifname="enP5p9s0"),
)

# The guide's colocated H100 run fits the 2-hour checkpoint deadline of its config.
h100 = attrs.evolve(b200, name="h100", node=H100_NODE, time_limit="04:00:00")

PROFILES = {profile.name: profile for profile in (gb200_nvl72, b200, h100)}
