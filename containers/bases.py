"""The base images stages are built on, declared by reference and pinned by ``lock``.

``./pants run recipes/super3:dapo-gb200 -- lock nemo-rl`` asks the registry (with your
``skopeo login`` credentials) and writes ``containers/nemo-rl.lock.json``: the index digest and,
for linux/amd64 and linux/arm64, the manifest, config, layers and diff_ids. Registries outside
this network cannot be reached from the build machines, so these stay unlocked until someone
with access runs ``lock``; until then ``package`` writes the Pex and the launcher layer only.

References are tags on purpose: the lock, not the tag, is what a build uses. Check that the tag
you lock is the one your stage was validated against (``framework.version`` of the stage).
"""

from recipekit.images.lock import BaseImage

# NeMo-RL: Super V3 GRPO/DAPO. The guide's current revision runs NGC's prebuilt Super V3 image
# (NVIDIA-NeMo/Nemotron@e27b3713, usage-cookbook/Nemotron-3-Super/grpo-dapo/
# grpo_training_cookbook.md: "nvcr.io/nvidia/nemo-rl:v0.5.0.nemotron_3_super"); its GB200/B200
# notebook used a build of the super-v3 branch (superv3-a90de923d, recipes/clusters.py).
NEMO_RL = BaseImage(
    name="nemo-rl",
    reference="nvcr.io/nvidia/nemo-rl:v0.5.0.nemotron_3_super",
    description="NeMo-RL (GRPO/DAPO, RL stages)",
)

# Super 3.5 RL stages (RLVR, teachers, MOPD). The recipe: "built from the stage-owned Dockerfile"
# from NeMo-RL's super-v3.5-posttraining branch at f299847f1 (NeMo Gym e24db4e6). No public image
# exists: this names where your build of it is pushed (NOT IN THE RECIPE); `lock` pins it.
NEMO_RL_SUPER35 = BaseImage(
    name="nemo-rl-super35",
    reference="nvcr.io/nvidia/nemo-rl:super-v3.5-posttraining-f299847f1",
    description="NeMo-RL super-v3.5-posttraining @ f299847f1 (Super 3.5 RL stages)",
)

# NeMo framework: Megatron-Bridge stages (pretraining, SFT). The recipe: the NeMo 26.08 container.
NEMO = BaseImage(
    name="nemo",
    reference="nvcr.io/nvidia/nemo:26.08",
    description="NeMo framework 26.08 (Megatron-Bridge stages)",
)

# vLLM's OpenAI server image: evaluation. The recipe: vllm/vllm-openai:v0.30.0.
VLLM = BaseImage(
    name="vllm",
    reference="docker.io/vllm/vllm-openai:v0.30.0",
    description="vLLM 0.30.0 (evaluation)",
)

BASES = {base.name: base for base in (NEMO_RL, NEMO_RL_SUPER35, NEMO, VLLM)}
