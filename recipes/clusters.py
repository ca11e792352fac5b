"""Cluster profiles, reviewed like recipes: ``submit --cluster NAME`` picks one by name.

These describe the guide's clusters (seed 000): fill in account, partition, image and storage
for yours, or add a profile here. Images are NeMo-RL containers built from the super-v3 branch
(the guide's ``superv3-a90de923d`` tag); pin them by digest before submitting.
"""

import attrs

from recipekit.hardware import B200_NODE, GB200_NODE, H100_NODE
from recipekit.launch.profile import ClusterProfile, Gb200Settings, Mount, Pyxis, Tracking

# The guide mounts shared storage at /shared inside the container.
SHARED = (Mount("/lustre/your-team/shared", "/shared"),)
SHARED_PATHS = {
    "checkpoints": "/shared/checkpoints",
    "models": "/shared/models",
    "hf_home": "/shared/HF_HOME",
}

b200 = ClusterProfile(
    name="b200",
    node=B200_NODE,
    account="your-account",
    partition="batch",
    time_limit="08:00:00",
    container=Pyxis(image="nvcr.io/your-org/nemo-rl:superv3-a90de923d", mounts=SHARED),
    runs_dir="/lustre/your-team/shared/recipekit-runs",
    shared_paths=SHARED_PATHS,
    hf_home="/shared/HF_HOME",
    framework_root="/opt/nemo-rl",
    # Every finished run is recorded in W&B: submit needs WANDB_API_KEY in the shell. Seed 004's
    # env.toml: [wandb] project = "nemotron", entity = "YOUR-TEAM" (fill in yours).
    tracking=Tracking(mode="online", project="nemotron", entity="your-team"),
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
