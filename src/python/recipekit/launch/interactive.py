"""Job steps on the head of a live interactive allocation: `attach` and `run`.

They share the allocation with the step that holds Ray up (``--overlap``) and take no GPUs of
their own (``--gres=none``): Ray's actors hold the GPUs; the driver and a shell need none.
"""

from __future__ import annotations

from recipekit.errors import Issue, RecipeError
from recipekit.launch.profile import ClusterProfile
from recipekit.launch.run_dir import INTERACTIVE_RECORD, LAUNCHER, RunDir


def live_cluster(run: RunDir) -> dict[str, str]:
    record = run.file(INTERACTIVE_RECORD)
    if not record.is_file():
        raise RecipeError(
            [
                Issue(
                    str(run.path),
                    "no interactive Ray cluster is up for this plan (yet)",
                    hint="`submit --interactive`, then wait for `logs` to show the cluster up",
                )
            ]
        )
    data = run.read_json(INTERACTIVE_RECORD)
    assert isinstance(data, dict)
    return {str(k): str(v) for k, v in data.items()}


def head_step(
    profile: ClusterProfile, job_id: str, head_node: str, command: list[str], *, pty: bool
) -> list[str]:
    return [
        "srun",
        f"--jobid={job_id}",
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={head_node}",
        "--gres=none",
        *(["--pty"] if pty else []),
        *profile.container.srun_flags(),
        *command,
    ]


def driver_step(profile: ClusterProfile, run: RunDir, job_id: str, head_node: str) -> list[str]:
    container = profile.container
    launcher = container.in_container(str(run.file(LAUNCHER)))
    command = [container.python, launcher, "driver", container.in_container(str(run.path))]
    return head_step(profile, job_id, head_node, command, pty=False)
