"""Baked shipping end to end: the job runs inside the stage image that ``publish`` pushed.

A stage image (the image tests' Debian base, locked from a loopback registry, plus the launcher
layers with the plan baked in) is published; the test pulls it back by digest into an OCI bundle
(``recipekit.launch.oci_bundle``) and submits a head-launched SFT stage with a baked
profile whose container is that bundle. Slurm runs every job step in it (``srun
--container=BUNDLE``, runc): preflight's baked-plan check and the framework's entry point run on
the image's Python, from the image's launcher, against the image's plan.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from recipekit.images.oci import Layout, Platform
from recipekit.launch.oci_bundle import pull_bundle
from recipekit.launch.profile import Mount
from recipekit.launch.run_dir import PLAN_FILE, PROVENANCE_FILE
from tests.integration.images.conftest import run_launcher
from tests.integration.support.local_slurm import LocalSlurm

HERE = Path(__file__).resolve().parent
STAGES = HERE / "baked_stages.py"
SLURM_TESTS = HERE.parent / "slurm"
FAKE_ENTRY = SLURM_TESTS / "fake_train.py"
# The stage launcher without a stage of its own (tests/integration/slurm:stage-launcher).
LAUNCHER = Path("tests.integration.slurm/stage-launcher.pex")
IMAGE_LAUNCHER_DIR = Path("/opt/recipekit")

PROFILE = """\
import sys

sys.path.insert(0, {slurm_tests!r})
from fake_stages import FAKE_NODE
from recipekit.launch.profile import ClusterProfile, Mount, OciBundle, Tracking

profile = ClusterProfile(
    name="local-baked",
    node=FAKE_NODE,
    partition="gpu",
    time_limit="00:10:00",
    container=OciBundle(bundle={bundle!r}, mounts=(Mount({root!r}, {root!r}),)),
    shipping="baked",
    runs_dir={runs!r},
    # The local cluster's nodes are one host: the test's whole folder is storage they all see.
    shared_paths={{"checkpoints": {checkpoints!r}, "workspace": {root!r}}},
    framework_root={framework!r},
    tracking=Tracking(mode="off"),
)
"""

# Megatron-Bridge's run_recipe.py in the framework checkout, run with the image's Python: it notes
# what it sees of the image, then is fake_train.py.
ENTRY = """\
#!/usr/bin/python3
import json, os, runpy, sys
from pathlib import Path

run = Path(os.environ["RECIPEKIT_RUN_DIR"])
baked = Path("/opt/recipekit/plan/plan.json")
(run / "container.json").write_text(json.dumps({{
    "baked_plan_hash": json.loads(baked.read_text())["hash"] if baked.is_file() else None,
    # Slurm's client is on the node, not in the image.
    "srun_visible": Path("/usr/bin/srun").exists(),
    "python": sys.executable,
}}))
sys.argv[0] = {fake_entry!r}
runpy.run_path({fake_entry!r}, run_name="__main__")
"""


def _host_platform() -> Platform:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}[platform.machine()]
    return Platform.parse(f"linux/{arch}")


def test_a_published_stage_image_runs_the_job_as_an_oci_bundle(
    debian_base: Layout, registry: str, oci_slurm: LocalSlurm, tmp_path: Path
) -> None:
    assert LAUNCHER.is_file(), f"{LAUNCHER} is missing: run under ./pants test"
    # The job's launcher path exists only in the image: nothing on the node can stand in for it.
    assert not IMAGE_LAUNCHER_DIR.exists()
    started = time.monotonic()
    root = tmp_path / "ws"
    shared = root / "shared"
    for path in ("artifacts/model", "artifacts/data", "checkpoints", "bin"):
        (shared / path).mkdir(parents=True)
    framework = root / "framework"
    entry = framework / "scripts" / "training" / "run_recipe.py"
    entry.parent.mkdir(parents=True)
    # Only the workspace is mounted into the container: the stand-in's code goes there too.
    fake_entry = shutil.copy(FAKE_ENTRY, shared / "bin" / FAKE_ENTRY.name)
    entry.write_text(ENTRY.format(fake_entry=str(fake_entry)))
    entry.chmod(0o755)
    stage = {"RECIPEKIT_STAGE": f"{STAGES}:head", "RECIPEKIT_BAKED_ROOT": str(root)}

    def launcher(*arguments: str) -> str:
        return run_launcher(*arguments, pex=LAUNCHER.resolve(), cwd=tmp_path, extra_env=stage)

    # The base in the registry, locked; the stage image built on it and published.
    base_ref = f"{registry}/recipekit/debian-python:bookworm"
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--all",
            "--preserve-digests",
            "--quiet",
            "--dest-tls-verify=false",
            f"oci:{debian_base.root}:base",
            f"docker://{base_ref}",
        ],
        check=True,
        capture_output=True,
    )
    lock = tmp_path / "debian-python.lock.json"
    launcher("lock", base_ref, "--name", "debian-python", "--out", str(lock), "--no-tls-verify")
    out = tmp_path / "artifacts"
    launcher("artifacts", str(out), "--pex", str(LAUNCHER.resolve()), "--lock", str(lock))
    manifest = json.loads((out / "artifacts.json").read_text())
    published = launcher(
        "publish",
        str(out / "image"),
        "--registry",
        f"{registry}/recipekit/sft-head-baked:test",
        "--lock",
        str(lock),
        "--no-tls-verify",
    )
    digest = re.search(r"sha256:[0-9a-f]{64}", published)
    assert digest and digest.group(0) == manifest["image"]["index_digest"], published
    published_at = time.monotonic()

    # Pulled back by digest into a bundle on the shared storage.
    image = f"{registry}/recipekit/sft-head-baked@{digest.group(0)}"
    bundle = pull_bundle(
        image,
        root / "bundle",
        platform=_host_platform(),
        mounts=[Mount(str(root), str(root))],
        tls_verify=False,
    )
    baked_plan = json.loads((bundle / "rootfs/opt/recipekit/plan/plan.json").read_text())
    assert baked_plan["hash"] == manifest["plan_hash"]
    pulled_at = time.monotonic()

    (root / "runs").mkdir()  # on the shared storage: submit never creates it
    profile = root / "profile.py"
    profile.write_text(
        PROFILE.format(
            slurm_tests=str(SLURM_TESTS),
            bundle=str(bundle),
            root=str(root),
            runs=str(root / "runs"),
            checkpoints=str(shared / "checkpoints"),
            framework=str(framework),
        )
    )
    submitted = oci_slurm.run(
        [sys.executable, str(LAUNCHER.resolve()), "submit", "--cluster", f"{profile}:profile"],
        env={
            **oci_slurm.env(),
            **stage,
            "PATH": f"{shared / 'bin'}:{oci_slurm.env()['PATH']}",
            "HOME": str(tmp_path),
            "PEX_ROOT": str(tmp_path / ".pex-root"),
        },
        timeout=120,
    )
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    job_id = re.search(r"as Slurm job (\d+)", submitted.stdout)
    log_line = re.search(r"^log: (\S+)$", submitted.stdout, re.MULTILINE)
    assert job_id and log_line, submitted.stdout
    state = oci_slurm.wait_for_job(job_id.group(1), timeout=300)
    log = Path(log_line.group(1))
    text = log.read_text(errors="replace")
    print(
        f"lock, build, publish {published_at - started:.1f} s; "
        f"bundle {pulled_at - published_at:.1f} s; "
        f"submit and run {time.monotonic() - pulled_at:.1f} s"
    )
    assert state == "COMPLETED", text + oci_slurm.log_tail("slurmd-n1")

    run_dir = log.parent.parent
    plan = json.loads((run_dir / PLAN_FILE).read_text())
    assert plan["hash"] == baked_plan["hash"]
    # Submit recorded the image the job runs in by digest (the bundle says which it was).
    provenance = json.loads((run_dir / PROVENANCE_FILE).read_text())
    assert provenance["images"] == {"stage": image}
    # Baked: no launcher copied to the run directory; every step runs the image's, in the bundle.
    assert not list(run_dir.glob("*.pex"))
    script = (run_dir / "job.sbatch").read_text()
    # The launcher's steps, all in the bundle: preflight, the framework, and (the profile's time
    # limit gives the stage a save deadline) the head's decision whether it continues; tracking
    # is off.
    steps = 3 if "Whether the stage is done or continues" in script else 2
    assert script.count("\nsrun ") == script.count(f"--container={bundle} ") == steps, script
    assert "preflight baked-plan: ok" in text, text
    assert "[n1 head] entry point exited with status 0" in text, text
    seen_in_image = json.loads((run_dir / "container.json").read_text())
    assert seen_in_image == {
        "baked_plan_hash": plan["hash"],
        "srun_visible": False,
        "python": "/usr/bin/python3",
    }
    [seen] = [json.loads(p.read_text()) for p in (run_dir / "seen").glob("*.json")]
    assert seen["arguments_match_plan"] and seen["SLURMD_NODENAME"] == "n1"
    # fake_train.py saves sft-tiny at train_iters=20.
    assert (shared / "checkpoints" / "head" / "iter_0000020" / "output.bin").is_file()
    # Nothing of the job (launcher, stand-in, runtime) outlives it on the node.
    assert oci_slurm.wait_for_no_node_processes(r"launcher|fake_train|runc", timeout=30) == []
