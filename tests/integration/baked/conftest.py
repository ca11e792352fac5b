"""Fixtures: the image tests' Debian base and loopback registry, and a local Slurm whose
job steps can run in OCI bundles (Slurm's own ``srun --container``, runc as the runtime)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator

import pytest

from tests.integration.images.conftest import (  # noqa: F401
    debian_base,
    registry,
    registry_root,
    tools,
)
from tests.integration.support.local_slurm import LocalSlurm, local_slurm


def oci_conf(runc: str, state_dir: str) -> str:
    """Slurm 22.05's oci.conf for runc: one container per task, named by node, user, job, step
    and task; RunTimeRun (create and start in one) rather than RunTimeCreate/RunTimeStart."""
    runtime = f"{runc} --root={state_dir}"
    name = "%n.%u.%j.%s.%t"
    return (
        f'RunTimeQuery="{runtime} state {name}"\n'
        f'RunTimeKill="{runtime} kill -a {name}"\n'
        f'RunTimeDelete="{runtime} delete --force {name}"\n'
        f'RunTimeRun="{runtime} run {name} -b %b"\n'
    )


@pytest.fixture(scope="module")
def oci_slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    runc = shutil.which("runc")
    if runc is None:
        pytest.fail("runc is missing (install tools/system-packages/baked.list with apt-get)")
    started = time.monotonic()
    with local_slurm(tmp_path_factory.mktemp("slurm"), nodes=1, gpus_per_node=4) as cluster:
        # slurmstepd reads oci.conf (beside slurm.conf) at every step, so it may come after start.
        (cluster.conf_path.parent / "oci.conf").write_text(
            oci_conf(runc, str(cluster.tmp_dir / "runc"))
        )
        print(f"local Slurm {cluster.netns} with oci.conf up in {time.monotonic() - started:.1f} s")
        yield cluster
