import pytest

from recipekit.errors import RecipeError
from recipekit.lineage import (
    ArtifactRef,
    ExternalInput,
    Import,
    Pipeline,
    StageLineage,
    apply_overrides,
    is_lineage_override,
    parse_ref,
)


def test_references_default_to_latest_and_pin_versions_and_steps() -> None:
    assert str(parse_ref("super35-sft-model")) == "super35-sft-model:latest"
    pinned = parse_ref("super35-rl-rlvr-model:v3")
    assert (pinned.name, pinned.version, pinned.step) == ("super35-rl-rlvr-model", 3, None)
    selected = ArtifactRef.at_step("super35-rl-rlvr-model", 120)
    assert str(selected) == "super35-rl-rlvr-model:step-120"
    assert parse_ref(str(selected)) == selected and selected.step == 120


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("super35-sft-model:lastest", "did you mean 'latest'"),
        ("super35-sft-model:v03", "'vN'"),
        ("super35-sft-model:step120", "'step-N'"),
        ("-model", "starts and ends with a letter or digit"),
        ("team/super35-sft-model", "no ':' or '/'"),
        (":v1", "cannot be empty"),
    ],
)
def test_bad_references_say_why(text: str, says: str) -> None:
    with pytest.raises(RecipeError) as caught:
        parse_ref(text, path="run.model")
    assert says in str(caught.value)
    assert str(caught.value).startswith("run.model = ")


def _stage(name: str, model: str, output: str | None, **extra: str) -> StageLineage:
    inputs = {"model": parse_ref(model), **{k: parse_ref(v) for k, v in extra.items()}}
    return StageLineage(stage=name, inputs=inputs, output=output)


def test_roles_are_model_data_and_teachers() -> None:
    with pytest.raises(RecipeError) as caught:
        _stage("mopd", "a", "b", modle="c", teacher_Bad="d")
    text = str(caught.value)
    role = "a role is 'model', 'data' or 'teacher_<name>'"
    assert f"run.modle: {role} (did you mean 'model'?)" in text
    assert "run.teacher_Bad: a teacher role is teacher_<name>" in text
    ok = _stage("mopd", "a", "b", data="d", teacher_vision="t")
    assert ok.teachers == {"vision": parse_ref("t")}


def test_overrides_pin_an_existing_role_and_report_every_problem() -> None:
    rl = _stage("rlvr", "super35-sft-model", "super35-rl-rlvr-model", data="super35-rl-rlvr-data")
    assert is_lineage_override("run.model=x") and not is_lineage_override("grpo.seed=1")
    pinned = apply_overrides(rl, ["run.model=super35-sft-model:v3"])
    assert pinned.as_json()["inputs"] == {
        "model": "super35-sft-model:v3",
        "data": "super35-rl-rlvr-data:latest",
    }
    with pytest.raises(RecipeError) as caught:
        apply_overrides(rl, ["run.modle=x", "run.data=y:newest"])
    text = str(caught.value)
    assert text.startswith("rlvr: --set: 2 problems")
    assert "run.modle: rlvr has no input 'modle' (did you mean 'model'?)" in text
    assert "run.data = 'y:newest'" in text


def test_a_pipeline_refuses_missing_producers_duplicates_and_cycles() -> None:
    a = _stage("a", "m0", "m1")
    with pytest.raises(RecipeError) as caught:
        Pipeline(name="p", stages=[a, _stage("b", "m11", "m1")])
    text = str(caught.value)
    assert "b.output = 'm1': a already publishes this artifact" in text
    assert "a.run.model = 'm0:latest': no stage publishes this artifact" in text
    assert "b.run.model = 'm11:latest'" in text and "did you mean 'm1'" in text

    with pytest.raises(RecipeError, match="the stages form a cycle"):
        Pipeline(name="p", stages=[_stage("a", "m2", "m1"), _stage("b", "m1", "m2")])

    ok = Pipeline(
        name="p",
        stages=[_stage("b", "m1:step-7", "m2"), a],
        imports=[Import("m0", "model import")],
        release=ArtifactRef.at_step("m2", 3),
    )
    assert ok.order() == ["a", "b"]
    assert ok.selected_steps() == {"m1": (7,), "m2": (3,)}
    assert ok.producers() == {"m2": "b", "m1": "a"}


def test_external_inputs_render_as_what_they_are() -> None:
    stage = StageLineage(
        stage="pretrain",
        inputs={"model": ExternalInput("converted checkpoint", env_var="INIT")},
        output="m",
    )
    assert stage.as_json() == {"inputs": {"model": "${INIT}"}, "output": "m"}
