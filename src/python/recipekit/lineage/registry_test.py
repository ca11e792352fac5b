"""`recipekit data import` / `model import` with real wandb, offline, and a real artifact store:
read back from W&B's files and the store's index and markers."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recipekit.cli import recipekit_cli
from recipekit.lineage.registry import default_artifact, importable
from recipekit.lineage.store import check_version, init_store, read_marker, versions
from recipekit.lineage.tracking import read_offline_run
from recipes.super35.lineage import IMPORTS, SUPER35


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Everything wandb writes stays in tmp_path; no key, no network.
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    for var in ("WANDB_PROJECT", "WANDB_ENTITY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    for var, sub in (("WANDB_CONFIG_DIR", "config"), ("WANDB_CACHE_DIR", "cache"),
                     ("WANDB_DATA_DIR", "data"), ("WANDB_ARTIFACT_DIR", "artifacts")):  # fmt: skip
        monkeypatch.setenv(var, str(tmp_path / sub))
    return tmp_path


@pytest.fixture
def store(offline: Path) -> Path:
    root = offline / "artifacts"
    init_store(root)
    return root


def _recipekit(*args: str) -> Result:
    return CliRunner().invoke(recipekit_cli.cli, list(args))


def _import(store: Path, *args: str) -> Result:
    return _recipekit(*args, "--store", str(store))


def _run_dir(result: Result) -> Path:
    found = re.search(r"^W&B run: (\S+)$", result.stdout, re.MULTILINE)
    assert found, result.stdout
    return Path(found.group(1))


def test_defaults_are_the_pipelines_imports() -> None:
    # The recipe's CLI table, as recipes/super35/lineage.py declares it (not written twice).
    assert {
        (group, kind): default_artifact(SUPER35, group, kind)
        for group, kinds in (("data", ("sft", "rl")), ("model", ("pretrain", "sft", "rl")))
        for kind in kinds
    } == {
        ("data", "sft"): "super35-sft-data",
        ("data", "rl"): "super35-rl-rlvr-data",
        ("model", "pretrain"): "super35-pretrain-model",
        ("model", "sft"): "super35-sft-model",
        ("model", "rl"): "super35-rl-rlvr-model",
    }
    assert {i.artifact for i in IMPORTS if "data import" in i.command} <= set(
        importable(SUPER35, "data")
    )
    # A variant's artifact keeps its type (lineage.py names the tiny configs' "-tiny").
    assert "super35-pretrain-model-tiny" in importable(SUPER35, "model")


def test_data_import_rl_references_train_and_val(offline: Path, store: Path) -> None:
    train, val = offline / "prompts.jsonl", offline / "held-out.jsonl"
    # Rows as the pinned NeMo-RL reads them (datacheck/gym_rows.json: agent_ref.name and
    # responses_create_params.input); data import reads every one before registering.
    row = '{"agent_ref": {"name": "mcqa_simple_agent"}, "responses_create_params": {"input": "%s"}}'
    train.write_text(row % "1+1" + "\n")
    val.write_text(row % "2+2" + "\n")
    result = _import(store, "data", "import", "rl", str(train), "--val", str(val))
    assert result.exit_code == 0, result.output
    assert f"wandb sync {_run_dir(result)}" in result.stdout
    recorded = read_offline_run(_run_dir(result))
    [artifact] = recorded.logged
    assert (artifact.name, artifact.type, artifact.aliases) == (
        "super35-rl-rlvr-data",
        "dataset",
        ("latest",),
    )
    # References to the files where they are: W&B uploads nothing.
    assert sorted(artifact.references) == sorted([train.as_uri(), val.as_uri()])
    assert artifact.metadata["command"] == "super35 data import rl PATH"
    assert recorded.job_type == "import"
    # The store's version holds the files under the names the RL stages read, hard-linked.
    [version] = versions(store, "super35-rl-rlvr-data")
    where = store / "super35-rl-rlvr-data" / version.path
    assert sorted(p.name for p in where.iterdir()) == ["train.jsonl", "val.jsonl"]
    assert os.stat(where / "train.jsonl").st_ino == os.stat(train).st_ino
    marker = read_marker(store / "super35-rl-rlvr-data", 0)
    assert marker is not None
    assert {f["name"]: f["size"] for f in marker["files"]} == {
        "train.jsonl": train.stat().st_size,
        "val.jsonl": val.stat().st_size,
    }
    digest = marker["meta"]["manifest_digest"]
    assert marker["meta"]["imported"]["sources"] == {"train": str(train), "val": str(val)}
    # W&B records the same version and digest.
    assert artifact.metadata["store"] == {
        "version": "v0",
        "path": str(where),
        "manifest_digest": digest,
    }
    assert f"super35-rl-rlvr-data:v0 (latest) = {where}  (manifest {digest[:12]})" in (
        result.stdout
    )


def test_model_import_with_a_name_registers_that_artifact(offline: Path, store: Path) -> None:
    checkpoint = offline / "ckpt" / "iter_0000200"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    result = _import(
        store, "model", "import", "sft", str(offline / "ckpt"), "--name", "super35-sft-stage1-model"
    )
    assert result.exit_code == 0, result.output
    [artifact] = read_offline_run(_run_dir(result)).logged
    assert (artifact.name, artifact.type) == ("super35-sft-stage1-model", "model")
    assert artifact.references == ((checkpoint / "model.safetensors").as_uri(),)
    [version] = versions(store, "super35-sft-stage1-model")
    assert check_version(store, "super35-sft-stage1-model", version).whole
    assert (store / "super35-sft-stage1-model" / "latest" / "iter_0000200").is_dir()
    default = _import(store, "model", "import", "rl", str(offline / "ckpt"))
    assert default.exit_code == 0, default.output
    [artifact] = read_offline_run(_run_dir(default)).logged
    assert artifact.name == "super35-rl-rlvr-model"
    # Imported again: the next version, under a folder of its own.
    again = _import(store, "model", "import", "rl", str(offline / "ckpt"))
    assert again.exit_code == 0, again.output
    assert [v.path for v in versions(store, "super35-rl-rlvr-model")] == [
        "import-v0",
        "import-v1",
    ]


@pytest.fixture
def other_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A folder on another filesystem than tmp_path (/dev/shm, a tmpfs), removed after."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem here (/dev/shm is the store's)")
    folder = Path(tempfile.mkdtemp(dir=shm, prefix="recipekit-import-"))
    yield folder
    shutil.rmtree(folder)


def test_mistakes_are_messages_and_record_nothing(
    offline: Path, store: Path, other_filesystem: Path
) -> None:
    data = offline / "energon"
    data.mkdir()
    (data / "part-0.tar").write_bytes(b"samples")
    elsewhere = other_filesystem / "energon"
    elsewhere.mkdir()
    (elsewhere / "part-0.tar").write_bytes(b"samples")
    no_store = offline / "not-a-store"
    no_store.mkdir()
    profile = offline / "profiles.py"
    profile.write_text(
        "import attrs\nfrom recipes.clusters import PROFILES\n"
        "bare = attrs.evolve(PROFILES['b200'], artifact_store=None)\n"
    )
    store_args = ("--store", str(store))
    cases = {
        ("data", "import", "sft", str(elsewhere), *store_args): (
            f"data path: {elsewhere} is not on the artifact store's filesystem ({store}) "
            f"(move or copy it onto the store's filesystem (under {offline}) first)"
        ),
        ("data", "import", "sft", str(data)): (
            "--cluster/--store: neither given: name the artifact store once"
        ),
        ("data", "import", "sft", str(data), "--store", str(no_store)): (
            f"{no_store}: no artifact store (make one with: recipekit store init {no_store})"
        ),
        ("data", "import", "sft", str(data), "--cluster", f"{profile}:bare"): (
            f"--cluster {profile}:bare: the profile names no artifact store"
        ),
        ("data", "import", "rl", str(data), *store_args): (
            f"train path = '{data}': is a directory (give the JSONL file)"
        ),
        ("data", "import", "sft", str(offline / "missing"), *store_args): (
            f"data path = '{offline}/missing': does not exist"
        ),
        ("data", "import", "sft", str(data), "--name", "super35-sft-dta", *store_args): (
            "--name = 'super35-sft-dta': no stage of the super35 pipeline reads or publishes "
            "this artifact (did you mean 'super35-sft-data'"
        ),
        ("data", "import", "sft", str(data), "--name", "super35-sft-model", *store_args): (
            "is a model artifact, not a dataset (register it with `model import`)"
        ),
        ("model", "import", "sft", str(data), "--mode", "online", *store_args): (
            "tracking: WANDB_API_KEY: is not set"
        ),
    }
    for args, message in cases.items():
        result = _recipekit(*args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (offline / "wandb").exists()
    assert [p.name for p in store.iterdir()] == [".recipekit-artifact-store"]


def test_help_explains_with_the_pipelines_names() -> None:
    for args, default in (
        (("data", "import", "sft"), "super35-sft-data"),
        (("data", "import", "rl"), "super35-rl-rlvr-data"),
        (("model", "import", "pretrain"), "super35-pretrain-model"),
    ):
        result = _recipekit(*args, "--help")
        assert result.exit_code == 0, result.output
        text = " ".join(result.stdout.split())
        assert f"Registers {default} by default (super35 lineage)." in text
        assert "nothing is uploaded" in text
    assert "super35-sft-stage2-data" in _recipekit("data", "import", "sft", "--help").stdout


# A cluster profile whose store and run directories are the test's, its images pinned by
# digest (submit refuses tags): what `--cluster FILE.py:profile` reads.
PROFILE = """
import attrs
from recipes.clusters import PROFILES
from recipekit.launch.profile import ArtifactStore, Mount, Pyxis

def _pinned(image):
    return image.split(":")[0] + "@sha256:" + "0" * 64

base = PROFILES["gb200-nvl72"]
profile = attrs.evolve(
    base,
    container=Pyxis(image=_pinned(base.container.image), mounts=(Mount({runs!r}, "/shared"),)),
    bases={{k: attrs.evolve(v, image=_pinned(v.image)) for k, v in base.bases.items()}},
    artifact_store=ArtifactStore(path={store!r}),
    runs_dir={runs!r},
)
"""


def test_what_is_imported_is_what_the_reading_stage_plans_and_submits_with(
    offline: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recipekit.launch.profiles import find_profile
    from recipekit.pipeline.actions import NO_OUTPUT, StoreRecords, pinned_plans, plan_actions
    from recipekit.pipeline.chain import load_chain, plan_chain
    from recipekit.pipeline.submit import chain_issues

    root = Path(__file__).resolve().parents[4]  # the checkout: recipes/ is there
    monkeypatch.chdir(root)
    runs = offline / "runs"
    runs.mkdir()
    cluster_file = offline / "cluster.py"
    cluster_file.write_text(PROFILE.format(store=str(store), runs=str(runs)))
    cluster = f"{cluster_file}:profile"
    checkpoint = offline / "sft" / "iter_0000010"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    train = offline / "train.jsonl"
    row = {"agent_ref": {"name": "mcqa_simple_agent"}, "responses_create_params": {"input": "1+1"}}
    train.write_text(json.dumps(row) + "\n")
    # The recipe's Quick Start, with the cluster whose store the stages read.
    for args in (
        ("model", "import", "sft", str(offline / "sft")),
        ("data", "import", "rl", str(train), "--val", str(train)),
    ):
        result = _recipekit(*args, "--cluster", cluster)
        assert result.exit_code == 0, result.output

    planned = _recipekit(
        "pipeline", "plan", "recipes/super35", "--from", "rlvr", "--until", "rlvr",
        "--cluster", cluster, "--format", "json",
    )  # fmt: skip
    assert planned.exit_code == 0, planned.output
    [row] = json.loads(planned.stdout)["stages"]
    action = row["action"]
    assert (action["runs"], action["reason"]) == (True, NO_OUTPUT)
    digests = {
        name: (read_marker(store / name, 0) or {})["meta"]["manifest_digest"]
        for name in ("super35-sft-model", "super35-rl-rlvr-data")
    }
    assert {role: (i["version"], i["identity"]) for role, i in action["inputs"].items()} == {
        "model": ("v0", f"manifest:{digests['super35-sft-model']}"),
        "data": ("v0", f"manifest:{digests['super35-rl-rlvr-data']}"),
    }
    # What submit would submit: rlvr pinned to the imported versions, nothing refused.
    chain = load_chain(Path("recipes/super35"), root)
    stages = plan_chain(chain, ["rlvr"])
    actions = plan_actions(chain, stages, StoreRecords(store))
    [pinned] = pinned_plans(chain, stages, actions)
    assert pinned.plan is not None
    text = json.dumps(pinned.plan.framework_config)
    assert "/artifacts/super35-sft-model/v0" in text
    assert "/artifacts/super35-rl-rlvr-data/v0/train.jsonl" in text
    assert chain_issues([pinned], find_profile(cluster)) == []
