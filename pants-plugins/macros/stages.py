# BUILD-file macros (Pants build_file_prelude_globs): one call declares a stage's targets.
#
#   recipe_stage(name="rlvr", stage="recipes.super35.rl:rlvr", base="nemo-rl-super35")
#
# gives `:rlvr-launcher`, the stage launcher Pex (dist/<folder>/<name>.pex, booted by /bin/sh:
# stage_launcher), and `:rlvr`, whose `run` runs that launcher and whose `package` writes
# dist/<folder>/<name>/: the Pex (stage.pex, entries stored), the two layers and, once
# containers/<base>.lock.json exists, the two-architecture image (stage_artifacts; both in
# pants-plugins/recipekit_images).


def recipe_stage(name, stage, base, **kwargs):
    module, _, _ = stage.partition(":")
    folder = module.rsplit(".", 1)[0]
    stage_launcher(
        name=f"{name}-launcher",
        stage=stage,
        output_path=f"{folder}/{name}.pex",
        dependencies=[
            module.replace(".", "/") + ".py",
            "src/python/recipekit/cli:cli",
            "recipes/clusters.py",
            # containers/bases.py: the base images `lock NAME` pins.
            "containers/bases.py:bases",
        ],
        execution_mode="venv",
        # The container's CPython (3.12 in the NVIDIA images, 3.11 on Debian 12) and the submit
        # host's, on x86_64 (B200, H100) and aarch64 (GB200): one Pex runs on all of them.
        complete_platforms=[
            "containers:linux_x86_64-cp311",
            "containers:linux_x86_64-cp312",
            "containers:linux_aarch64-cp311",
            "containers:linux_aarch64-cp312",
        ],
        shebang="/usr/bin/env python3",
        **kwargs,
    )
    stage_artifacts(
        name=name,
        launcher=f":{name}-launcher",
        base_lock=f"containers/{base}.lock.json",
    )
