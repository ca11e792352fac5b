"""Action keys and the reason each stage runs, against a real artifact store in tmp_path, and
the lineage its versions then record (``recipekit store lineage``).

Each "run" of a stage is what its job leaves: its last checkpoint in the store, published with
``store.publish`` and the action meta its plan carries (``completed_meta``, as the job's
``run_record.publish_checkpoints`` passes it), which the version's completion marker records.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner, Result

import recipes
from recipekit.cli import recipekit_cli
from recipekit.errors import RecipeError
from recipekit.lineage.conversions import (
    MEGATRON_CONVERSIONS_VARIABLE,
    conversion_environment,
    converted_input,
    job_conversion_environment,
)
from recipekit.lineage.store import (
    completed_meta,
    import_version,
    init_store,
    input_problem,
    manifest_digest,
    publish,
    run_name,
    versions,
)
from recipekit.pipeline.actions import (
    IMAGE_CHANGED,
    INPUT_CHANGED,
    INPUT_MISSING,
    NO_OUTPUT,
    RECIPE_CHANGED,
    RERUN,
    UP_TO_DATE,
    Images,
    StageAction,
    StoreRecords,
    action_key,
    damaged_inputs,
    pinned_plans,
    plan_actions,
)
from recipekit.pipeline.chain import Chain, load_chain, plan_chain
from recipekit.plan import save_policy

ROOT = Path(recipes.__file__).resolve().parent.parent
UNTIL = "teacher-reasoning"  # pretrain -> sft -> sft-stage2 -> rlvr -> teacher-reasoning
IMPORTED = [
    "super35-sft-data",
    "super35-sft-stage2-data",
    "super35-rl-rlvr-data",
    "super35-rl-teacher-reasoning-data",
]


@pytest.fixture(scope="module")
def chain() -> Chain:
    return load_chain(Path("recipes/super35"), ROOT)


def _actions(
    chain: Chain,
    store: Path,
    overrides: list[str] | None = None,
    rerun: tuple[str, ...] = (),
    images: Images | None = None,
) -> dict[str, StageAction]:
    planned = plan_chain(chain, chain.between(None, UNTIL), overrides or [])
    actions = plan_actions(chain, planned, StoreRecords(store), rerun=rerun, images=images)
    return {a.stage: a for a in actions}


def _run(
    chain: Chain, store: Path, overrides: list[str] | None = None, images: Images | None = None
) -> None:
    """Every stage that runs, in order, as its job would: pinned plan, checkpoint, publish."""
    planned = plan_chain(chain, chain.between(None, UNTIL), overrides or [])
    actions = plan_actions(chain, planned, StoreRecords(store), images=images)
    for entry in pinned_plans(chain, planned, actions, overrides or []):
        assert entry.plan is not None and entry.lineage.output is not None
        policy = save_policy(entry.plan)
        run = run_name(entry.name, entry.plan.hash)
        steps = [*entry.lineage.keep_steps, policy.last] if policy else [None]
        for step in steps:
            saved = store / entry.lineage.output / run / (f"step_{step}" if step else "")
            saved.mkdir(parents=True)
            (saved / "weights.bin").write_bytes(entry.plan.hash.encode())
        keep = entry.lineage.keep_steps
        meta = completed_meta(entry.plan.as_json()["action"], store)
        publish(store, entry.lineage.output, run, keep_steps=keep, finished=not policy, meta=meta)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    init_store(root)
    for name in IMPORTED:
        data = tmp_path / name
        data.mkdir()
        (data / "train.jsonl").write_text(f"{name}\n")
        import_version(root, name, data, name="imported")
    return root


def test_a_chain_that_ran_is_up_to_date_and_each_key_covers_plan_and_inputs(
    chain: Chain, store: Path
) -> None:
    before = _actions(chain, store)
    assert {a.reason for a in before.values()} == {NO_OUTPUT}
    _run(chain, store)
    after = _actions(chain, store)
    assert {name: a.reason for name, a in after.items()} == {n: UP_TO_DATE for n in after}
    assert after["rlvr"].version == 1  # v0 is step-120, kept for the teachers
    # The key is the plan's hash and the identity of every input version.
    rlvr = after["rlvr"]
    assert rlvr.key == action_key(rlvr.plan_hash or "", {i.role: i.identity for i in rlvr.inputs})
    model, data = (i for i in rlvr.inputs)
    assert model.identity == f"{after['sft-stage2'].key}:latest"  # produced: key and selector
    assert data.identity.startswith("manifest:")  # imported: its manifest's digest
    teacher_model = next(i for i in after[UNTIL].inputs if i.role == "model")
    assert teacher_model.identity == f"{rlvr.key}:step-120"


def test_a_changed_rlvr_value_runs_rlvr_and_its_readers_only(chain: Chain, store: Path) -> None:
    _run(chain, store)
    changed = _actions(chain, store, ["rlvr:grpo.seed=7"])
    assert [n for n, a in changed.items() if not a.runs] == ["pretrain", "sft", "sft-stage2"]
    assert changed["rlvr"].reason == RECIPE_CHANGED
    assert [(c.key, c.new) for c in changed["rlvr"].changes] == [("config.grpo.seed", 7)]
    teacher = changed[UNTIL]
    assert teacher.reason == INPUT_CHANGED
    assert teacher.changed_inputs[0].startswith("run.model: rlvr runs first")
    # What runs is pinned to the versions that are up to date: rlvr reads sft-stage2's v0.
    planned = plan_chain(chain, chain.between(None, UNTIL), ["rlvr:grpo.seed=7"])
    pinned = pinned_plans(chain, planned, list(changed.values()), ["rlvr:grpo.seed=7"])
    assert [p.name for p in pinned] == ["rlvr", UNTIL]
    assert pinned[0].lineage.artifact_inputs()["model"].selector == "v0"
    assert "/artifacts/super35-sft-model/v0" in json.dumps(pinned[0].plan.framework_config)  # type: ignore[union-attr]
    assert (
        pinned[1].lineage.artifact_inputs()["model"].selector == "step-120"
    )  # rlvr makes it first


def test_a_removed_file_makes_the_version_incomplete_and_it_and_its_readers_run(
    chain: Chain, store: Path
) -> None:
    _run(chain, store)
    (store / "super35-sft-stage1-model").joinpath("latest", "weights.bin").unlink()
    after = _actions(chain, store)
    assert [n for n, a in after.items() if not a.runs] == ["pretrain"]
    assert after["sft"].reason == NO_OUTPUT
    assert after["sft-stage2"].reason == INPUT_CHANGED
    assert after["rlvr"].reason == INPUT_CHANGED and after[UNTIL].reason == INPUT_CHANGED
    # Run again, every stage is up to date on the new versions.
    _run(chain, store)
    again = _actions(chain, store)
    assert all(not a.runs for a in again.values())
    assert again["sft"].version == 1 and again["sft-stage2"].version == 1


def test_rerun_forces_one_stage_and_its_readers_and_a_typo_is_refused(
    chain: Chain, store: Path
) -> None:
    _run(chain, store)
    forced = _actions(chain, store, rerun=("sft-stage2",))
    assert forced["sft-stage2"].reason == RERUN
    assert not forced["sft"].runs and forced["rlvr"].runs
    with pytest.raises(RecipeError, match="did you mean 'sft-stage2'"):
        _actions(chain, store, rerun=("sft-stage3",))


def test_the_whole_chain_plans_with_its_keys_in_under_two_seconds(
    chain: Chain, store: Path
) -> None:
    start = time.perf_counter()
    planned = plan_chain(chain, chain.between(None, None))
    plan_actions(chain, planned, StoreRecords(store))
    assert time.perf_counter() - start < 2.0


def test_pipeline_plan_refuses_a_stage_that_would_read_a_damaged_version(
    chain: Chain, store: Path
) -> None:
    assert damaged_inputs(store, list(_actions(chain, store).values())) == []
    [data] = (store / "super35-sft-data").glob("imported/train.jsonl")
    data.write_text("")  # truncated after import: its manifest says otherwise
    [issue] = damaged_inputs(store, list(_actions(chain, store).values()))
    assert issue.path == "sft: run.data" and "train.jsonl" in issue.message, issue.render()


def test_pipeline_plan_refuses_a_version_changed_at_the_same_size(
    chain: Chain, store: Path
) -> None:
    [data] = (store / "super35-sft-data").glob("imported/train.jsonl")
    flipped = bytearray(data.read_bytes())
    flipped[0] ^= 0x01
    data.write_bytes(bytes(flipped))  # one bit: the same size, other bytes
    [issue] = damaged_inputs(store, list(_actions(chain, store).values()))
    assert issue.path == "sft: run.data", issue.render()
    assert f"{data} does not hold what its manifest's sha256 says" in issue.message


def _lineage(store: Path, ref: str, *extra: str) -> Result:
    return CliRunner().invoke(
        recipekit_cli.cli, ["store", "lineage", ref, "--store", str(store), *extra]
    )


def test_store_lineage_follows_the_recorded_input_versions_back_to_the_imports(
    chain: Chain, store: Path
) -> None:
    _run(chain, store)
    actions = _actions(chain, store)
    result = _lineage(store, "super35-rl-teacher-reasoning-model:latest")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    teacher, rlvr = actions[UNTIL], actions["rlvr"]
    assert lines[0].startswith("super35-rl-teacher-reasoning-model:v0 step-")
    assert f"plan {teacher.plan_hash[:12]}  key {teacher.key[:12]}" in lines[0]  # type: ignore[index]
    # The teacher read RLVR's step-120 (v0, kept), made from SFT stage 2's, SFT's, pretrain's.
    text = result.stdout
    # The run is the pinned plan's; the plan hash recorded is the recipe's, as plan shows it.
    assert lines[1].startswith("├─ model: super35-rl-rlvr-model:v0 step-120  run rlvr-")
    assert f"plan {rlvr.plan_hash[:12]}  key {rlvr.key[:12]}" in lines[1]  # type: ignore[index]
    for made in ("super35-sft-model", "super35-sft-stage1-model", "super35-pretrain-model"):
        assert f"model: {made}:v0" in text
    marker = (store / "super35-rl-rlvr-data" / ".versions" / "v0.json").read_text()
    digest = json.loads(marker)["meta"]["manifest_digest"]
    imported = "data: super35-rl-rlvr-data:v0  imported (no action recorded)"
    assert f"{imported}  manifest {digest[:12]}" in text
    assert "data: super35-rl-teacher-reasoning-data:v0" in lines[-1]

    teacher_ref = "super35-rl-teacher-reasoning-model:latest"
    as_json = json.loads(_lineage(store, teacher_ref, "--json").stdout)
    model = as_json["inputs"]["model"]
    assert (model["ref"], model["key"], model["plan_hash"]) == (
        "super35-rl-rlvr-model:v0",
        rlvr.key,
        rlvr.plan_hash,
    )
    assert model["inputs"]["data"]["manifest_digest"] == digest
    assert model["inputs"]["model"]["ref"] == "super35-sft-model:v0"


def test_store_lineage_refuses_an_unknown_name_and_a_damaged_version(
    chain: Chain, store: Path
) -> None:
    _run(chain, store)
    typo = _lineage(store, "super35-rl-rlvr-modle:latest")
    assert typo.exit_code == 2 and "Traceback" not in typo.output
    assert "holds no artifact 'super35-rl-rlvr-modle' (did you mean 'super35-rl-rlvr-model'" in (
        typo.stderr
    )
    missing = _lineage(store, "super35-sft-model:v7")
    assert missing.exit_code == 2 and "super35-sft-model:v7 is not a version" in missing.stderr
    sft = store / "super35-sft-model"
    weights = sft / os.readlink(sft / "v0") / "weights.bin"
    weights.write_bytes(b"")
    damaged = _lineage(store, "super35-sft-model:v0")
    assert damaged.exit_code == 2, damaged.output
    assert f"super35-sft-model:v0: is damaged: {weights} is 0 bytes" in damaged.stderr
    # A reader of the damaged version still shows where it came from, marked so.
    reader = _lineage(store, "super35-rl-rlvr-model:v0")
    assert reader.exit_code == 0, reader.output
    assert "model: super35-sft-model:v0" in reader.stdout and "DAMAGED" in reader.stdout


def test_submit_keeps_every_version_a_stage_that_runs_is_pinned_to(
    chain: Chain, store: Path
) -> None:
    from recipekit.pipeline.submit import keep_pinned

    _run(chain, store)
    # The teacher pinned to RLVR's latest (its last step, which no lineage pin keeps), while
    # RLVR's run may still be running or be requeued, its keep_top_k deleting old steps.
    pin = [f"{UNTIL}:run.model=super35-rl-rlvr-model:latest", f"{UNTIL}:grpo.seed=9"]
    planned = plan_chain(chain, [UNTIL], pin)
    actions = plan_actions(chain, planned, StoreRecords(store))
    [teacher] = actions
    assert teacher.runs and teacher.pins()["model"].selector == "v1"
    [line] = keep_pinned(store, actions)
    assert line.startswith("kept super35-rl-rlvr-model:v1 (step-1000) for teacher-reasoning: rlvr-")
    rlvr = store / "super35-rl-rlvr-model"
    [listed] = [v for v in versions(store, "super35-rl-rlvr-model") if v.version == 1]
    shutil.rmtree(rlvr / listed.run / "step_1000")  # the framework deletes it
    assert input_problem(store, "super35-rl-rlvr-model", "v1") is None
    assert keep_pinned(store, actions) == []  # kept already
    # Up-to-date stages' outputs are not touched: only what a stage that runs reads.
    assert [v.kept for v in versions(store, "super35-sft-model")] == [False]


def _conversion_dir(chain: Chain, store: Path, rerun: tuple[str, ...] = ()) -> str:
    planned = plan_chain(chain, chain.between(None, "rlvr"))
    actions = plan_actions(chain, planned, StoreRecords(store), rerun=rerun)
    [rlvr] = [p for p in pinned_plans(chain, planned, actions) if p.name == "rlvr"]
    assert rlvr.plan is not None
    return rlvr.plan.stage.environment[MEGATRON_CONVERSIONS_VARIABLE]


def test_the_conversion_cache_is_keyed_by_content_converter_and_options(
    chain: Chain, store: Path
) -> None:
    # rlvr (NeMo-RL, Megatron backend) converts the SFT model it starts from when it starts.
    _run(chain, store)
    marker = json.loads((store / "super35-sft-model" / ".versions" / "v0.json").read_text())
    plan = plan_chain(chain, ["rlvr"])[0].plan
    assert plan is not None and converted_input(plan.as_json()) == "super35-sft-model"
    source = f"manifest:{manifest_digest(marker['files'])}"
    first = _conversion_dir(chain, store, rerun=("rlvr",))
    assert {MEGATRON_CONVERSIONS_VARIABLE: first} == conversion_environment(plan.as_json(), source)
    # rlvr submitted on its own (no pipeline pins it): its job keys the same cache from the
    # version latest names when it starts.
    alone = plan.as_json()
    assert job_conversion_environment(alone, store) == {MEGATRON_CONVERSIONS_VARIABLE: first}
    assert first.startswith("/artifacts/.conversions/hf-to-megatron-")
    # The same version, converter and options: the same conversion, found again.
    assert _conversion_dir(chain, store, rerun=("rlvr",)) == first
    # Other bytes at the same path (SFT stage 2 re-made after a file went missing): rebuilt.
    (store / "super35-sft-model" / "latest" / "weights.bin").unlink()
    _run(chain, store)
    assert versions(store, "super35-sft-model")[-1].version == 1
    second = _conversion_dir(chain, store, rerun=("rlvr",))
    assert second != first
    assert job_conversion_environment(alone, store) == {MEGATRON_CONVERSIONS_VARIABLE: second}
    # Another converter (NeMo-RL version) or other options: never the same directory.
    framework = plan.stage.framework
    assert attrs.has(type(framework))
    other = attrs.evolve(framework, version="super-v3.5-posttraining@0000000")  # type: ignore[misc]
    moved = attrs.evolve(plan, stage=attrs.evolve(plan.stage, framework=other))
    assert conversion_environment(moved.as_json(), source) != conversion_environment(
        plan.as_json(), source
    )
    [fp64] = plan_chain(chain, ["rlvr"], ["rlvr:policy.megatron_cfg.moe_router_dtype=fp64"])
    assert fp64.plan is not None
    assert conversion_environment(fp64.plan.as_json(), source) != conversion_environment(
        plan.as_json(), source
    )
    # A stage that converts nothing (Megatron-Bridge SFT) gets no cache.
    sft = plan_chain(chain, ["sft"])[0].plan
    assert sft is not None and conversion_environment(sft.as_json(), source) == {}
    assert job_conversion_environment(sft.as_json(), store) == {}


# A profile whose images are pinned by digest (``digest``: one hex digit, repeated), its
# artifact store the test's. Only the Super 3.5 RL base's digest is ``rl_digest``.
PROFILE = """
import attrs
from recipes.clusters import PROFILES
from recipekit.launch.profile import ArtifactStore

def _pinned(image, digit):
    return image.split(":")[0] + "@sha256:" + digit * 64

base = PROFILES["b200"]
profile = attrs.evolve(
    base,
    container=attrs.evolve(base.container, image=_pinned(base.container.image, "0")),
    bases={{
        k: attrs.evolve(v, image=_pinned(v.image, {rl_digest!r} if k == "nemo-rl-super35" else "0"))
        for k, v in base.bases.items()
    }},
    artifact_store=ArtifactStore(path={store!r}),
)
"""


def _profile_file(tmp_path: Path, store: Path, rl_digest: str) -> str:
    path = tmp_path / f"cluster_{rl_digest}.py"
    path.write_text(PROFILE.format(store=str(store), rl_digest=rl_digest))
    return f"{path}:profile"


def test_a_new_image_digest_runs_the_stages_on_that_image_and_their_readers(
    chain: Chain, store: Path, tmp_path: Path
) -> None:
    from recipekit.launch.profiles import find_profile
    from recipekit.pipeline.submit import chain_images

    first = _profile_file(tmp_path, store, "a")
    images = chain_images(find_profile(first))
    _run(chain, store, images=images)
    same = _actions(chain, store, images=images)
    assert all(not a.runs for a in same.values())
    rl_image = "nvcr.io/your-org/nemo-rl@sha256:" + "a" * 64
    assert same["rlvr"].images == {"nemo-rl-super35": rl_image}
    # The key covers the images: with none (no profile) it is another key.
    assert _actions(chain, store)["rlvr"].runs
    # A new digest of the Super 3.5 RL image in the profile: the RL stages run, the
    # Megatron-Bridge stages (NeMo image, unchanged) stay up to date.
    second = _profile_file(tmp_path, store, "b")
    changed = _actions(chain, store, images=chain_images(find_profile(second)))
    assert [n for n, a in changed.items() if not a.runs] == ["pretrain", "sft", "sft-stage2"]
    assert changed["rlvr"].reason == IMAGE_CHANGED
    [change] = changed["rlvr"].changes
    assert (change.key, change.old) == ("images.nemo-rl-super35", rl_image)
    assert change.new == rl_image.replace("a" * 64, "b" * 64)
    assert changed[UNTIL].reason == IMAGE_CHANGED
    # pipeline plan says so, naming the image.
    result = CliRunner().invoke(
        recipekit_cli.cli,
        ["pipeline", "plan", "recipes/super35", "--until", "rlvr", "--cluster", second],
    )
    assert result.exit_code == 0, result.output
    assert "RUNS                       the image changed" in result.stdout
    assert f'~ images.nemo-rl-super35: "{rl_image}" -> ' in result.stdout
    as_json = CliRunner().invoke(
        recipekit_cli.cli,
        ["pipeline", "plan", "recipes/super35", "--until", "rlvr", "--cluster", second,
         "--format", "json"],
    )  # fmt: skip
    [*_, rlvr] = json.loads(as_json.stdout)["stages"]
    assert rlvr["action"]["reason"] == IMAGE_CHANGED
    assert rlvr["action"]["images"] == {"nemo-rl-super35": change.new}


def test_an_input_the_store_does_not_hold_is_missing_not_changed(chain: Chain, store: Path) -> None:
    shutil.rmtree(store / "super35-rl-rlvr-data")
    actions = _actions(chain, store)
    assert actions["rlvr"].reason == INPUT_MISSING
    assert actions["rlvr"].changed_inputs == (
        "run.data: the store has no whole version of super35-rl-rlvr-data:latest",
    )


def test_status_draws_a_stage_up_to_date_only_when_its_action_does_not_run(
    chain: Chain, store: Path, tmp_path: Path
) -> None:
    from recipekit.launch.profiles import find_profile
    from recipekit.lineage.status import StageState
    from recipekit.pipeline.status import stage_statuses
    from recipekit.pipeline.submit import as_submitted, chain_images, chain_status

    profile = find_profile(_profile_file(tmp_path, store, "a"))
    _run(chain, store, images=chain_images(profile))
    # An older SFT stage 1 model imported: it is latest now, and SFT stage 2 (planned from
    # itself, so reading latest, not the version SFT's key made) reads it.
    old = tmp_path / "old-sft-stage1"
    old.mkdir()
    (old / "weights.bin").write_bytes(b"older")
    import_version(store, "super35-sft-stage1-model", old, name="older")
    planned = plan_chain(chain, chain.between("sft-stage2", UNTIL))
    planned, sources = as_submitted(chain, planned, profile)
    rows = chain_status(planned, profile, sources)
    by_stage = {row["stage"]: row for row in rows}
    assert by_stage["sft-stage2"]["versions"]  # its output has a version, of other inputs
    assert by_stage["sft-stage2"]["action"] == {"runs": True, "reason": INPUT_CHANGED}
    statuses = stage_statuses(chain, planned, rows)
    for name in ("sft-stage2", "rlvr", UNTIL):
        assert statuses[name].state is StageState.SKIPPED, name
    assert statuses["sft-stage2"].note == f"not submitted; it runs: {INPUT_CHANGED}"
    # Planned from SFT, stage 2 reads the version SFT's key made: all up to date.
    planned = plan_chain(chain, chain.between("sft", UNTIL))
    planned, sources = as_submitted(chain, planned, profile)
    rows = chain_status(planned, profile, sources)
    assert rows[1]["action"] == {"runs": False, "reason": UP_TO_DATE, "version": "v0"}
    statuses = stage_statuses(chain, planned, rows)
    assert statuses["sft-stage2"].state is StageState.UP_TO_DATE
    assert "(v0)" in statuses["sft-stage2"].note


def test_status_shows_each_stage_as_the_last_pipeline_submit_left_it(
    chain: Chain, store: Path, tmp_path: Path
) -> None:
    """Planned again after its jobs ran, a stage's plan is not the one submitted (an input its
    producer has made since is pinned now; a key with a run already gets a new attempt), and
    an up-to-date stage's run directory holds the old job that made its version. Status reads
    the submission's record instead: the job each stage was submitted as, and up to date for
    the ones it did not submit, naming the job that made their version."""
    from recipekit.launch.profiles import find_profile
    from recipekit.launch.run_dir import JOB_RECORD
    from recipekit.lineage.status import StageState
    from recipekit.pipeline.status import stage_statuses
    from recipekit.pipeline.submissions import StageRecord, record_submission
    from recipekit.pipeline.submit import as_submitted, chain_images, chain_status

    profile = find_profile(_profile_file(tmp_path, store, "a"))
    _run(chain, store, images=chain_images(profile))
    planned = plan_chain(chain, chain.between(None, UNTIL))
    runs = Path(profile.runs_dir)

    def job_in(run: str, job: str) -> str:
        (runs / run).mkdir(parents=True, exist_ok=True)
        (runs / run / JOB_RECORD).write_text(json.dumps({"job_id": job}))
        return run

    # pretrain's own run directory (the plan's) holds the job that made its version.
    pretrain = next(e for e in planned if e.name == "pretrain")
    assert pretrain.plan is not None
    job_in(run_name("pretrain", pretrain.plan.hash), "7")
    up_to_date = {"runs": False, "reason": UP_TO_DATE, "version": "v0"}
    ran = {"runs": True, "reason": RECIPE_CHANGED}
    record_submission(
        runs,
        chain.pipeline.name,
        {
            "pretrain": StageRecord(up_to_date),
            "sft": StageRecord(up_to_date),
            "sft-stage2": StageRecord(up_to_date),
            "rlvr": StageRecord(ran, run=job_in("rlvr-000000000001", "42")),
        },
    )
    # A later submission of one stage adds to the record, run directories no plan names now.
    record_submission(
        runs,
        chain.pipeline.name,
        {UNTIL: StageRecord(ran, run=job_in(f"{UNTIL}-000000000002", "43"))},
    )
    planned, sources = as_submitted(chain, planned, profile)
    rows = {row["stage"]: row for row in chain_status(planned, profile, sources)}
    assert rows["rlvr"]["job"] == "42" and rows[UNTIL]["job"] == "43"
    assert rows["rlvr"]["action"] == ran
    assert rows["pretrain"]["job"] is None
    assert rows["pretrain"]["made_by"]["job"] == "7"
    statuses = stage_statuses(chain, planned, list(rows.values()))
    for name in ("pretrain", "sft", "sft-stage2"):
        assert statuses[name].state is StageState.UP_TO_DATE, name
    assert statuses["pretrain"].note.endswith("(v0), made by job 7")
    assert statuses["rlvr"].job == "42" and statuses[UNTIL].job == "43"
    # Without the record, a stage is judged by its action now: all up to date, none a job.
    (runs / ".pipelines" / f"{chain.pipeline.name}.json").unlink()
    planned, sources = as_submitted(chain, planned, profile)
    rows = {row["stage"]: row for row in chain_status(planned, profile, sources)}
    assert all(row["job"] is None for row in rows.values()), rows
    statuses = stage_statuses(chain, planned, list(rows.values()))
    assert {statuses[n].state for n in rows} == {StageState.UP_TO_DATE}


def test_a_path_from_the_environment_is_keyed_by_the_files_it_names(
    chain: Chain, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pretraining reads its checkpoint and data from ${SUPER35_INIT_CHECKPOINT} and
    ${SUPER35_PRETRAIN_DATA}: too many bytes to hash, so keyed by the path and every file's
    name, size and modification time. Another checkpoint behind the variable, or the variable
    pointing elsewhere, runs pretraining and what reads it."""
    checkpoint, data = tmp_path / "init", tmp_path / "data"
    for folder in (checkpoint, data):
        (folder / "shard").mkdir(parents=True)
        (folder / "shard" / "part-0.bin").write_bytes(b"0" * 64)
    monkeypatch.setenv("SUPER35_INIT_CHECKPOINT", str(checkpoint))
    monkeypatch.setenv("SUPER35_PRETRAIN_DATA", str(data))
    _run(chain, store)
    assert not any(a.runs for a in _actions(chain, store).values())
    # The same files again: still up to date.
    (checkpoint / "shard" / "part-0.bin").touch()
    changed = _actions(chain, store)
    assert changed["pretrain"].reason == INPUT_CHANGED
    [change] = changed["pretrain"].changed_inputs
    assert change.startswith("run.model: ${SUPER35_INIT_CHECKPOINT} names other files"), change
    assert f"({checkpoint}@" in change and f" -> {checkpoint}@" in change, change
    assert changed["sft"].reason == INPUT_CHANGED  # it reads what pretraining makes anew
    # Elsewhere, or unset: another identity each.
    monkeypatch.setenv("SUPER35_INIT_CHECKPOINT", str(data))
    assert _actions(chain, store)["pretrain"].runs
    monkeypatch.delenv("SUPER35_INIT_CHECKPOINT")
    assert "unset" in _actions(chain, store)["pretrain"].changed_inputs[0]
