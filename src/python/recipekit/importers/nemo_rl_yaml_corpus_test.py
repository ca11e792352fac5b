"""Every NeMo-RL YAML of the shared corpus, both branches: compile(import(yaml)) is the config
NeMo-RL loads from the YAML, key for key.

The oracle is not recipekit's loader (the importer reads YAML with it, so a loader bug would pass
on both sides): it is ``tools/fetch_reference.nemo_rl_expand``, OmegaConf's own load and resolve
with NeMo-RL's inheritance and resolvers, written separately from NeMo-RL's documented
behaviour. recipekit's loader (``yaml_loader.expand``) is held to the same oracle below.

Each file is imported with the environment variables its ``${oc.env:...}`` read unset (they are
run-time references, not read at import), and compared with them set: the compiled config is
resolved as NeMo-RL resolves its config file, so both sides see the same environment. The only
keys the compiled config may add are those the import reported as required by the schema and
absent from the YAML (super-v3's GRPOConfig requires two that no config sets: ``GRPOConfig``
in ``nemo_rl/algorithms/grpo.py`` of NVIDIA-NeMo/RL@8af543ad).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.importers.nemo_rl_yaml import compile_object, import_yaml
from recipekit.loading import load_object
from recipekit.nemo_rl.yaml_loader import expand
from recipekit.review.keydiff import diff
from tools.fetch_reference import nemo_rl_expand

REFERENCE = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR", ".reference"))
CORPUS = REFERENCE / "nemo-rl"
# Files under nemo-rl/ that are not configs NeMo-RL loads, and why (each test below checks the
# reason still holds).
EXCLUDED = {
    # Its header: "Only env.nemo_gym is read (dry-run NemoGym._spinup)": a docker build input
    # listing Gym environments to pre-install, not a run config.
    "main/examples/nemo_gym/prefetch_super_all_envs.yaml": "not a NeMo-RL run config",
    # defaults: stage2_swe_pivot.yaml, which super-v3 (8af543ad) does not have: NeMo-RL cannot
    # load it either.
    "super-v3/examples/configs/super/small_stage2_swe_pivot_8node.yaml": "no such file",
}
# What the corpus's ${oc.env:...} read, set for the comparison only.
ENVIRONMENT = {"HF_HOME": "/env-test/hf_home", "PERSISTENT_CACHE": "/env-test/persistent"}


def _corpus() -> list[str]:
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("**/*.yaml"))


ROUND_TRIP = [name for name in _corpus() if name not in EXCLUDED]


def test_the_corpus_is_there_on_both_branches() -> None:
    # A wrong RECIPEKIT_REFERENCE_DIR would otherwise parametrize nothing and pass.
    branches = {name.split("/")[0] for name in ROUND_TRIP}
    assert branches == {"super-v3", "main"}
    assert len(ROUND_TRIP) >= 150
    assert set(EXCLUDED) <= set(_corpus())


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip_key_for_key(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = CORPUS / name
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)
    imported = import_yaml(path)
    module = tmp_path / "imported_recipe.py"
    module.write_text(imported.source)
    compiled, warnings = compile_object(load_object(f"{module}:recipe"))
    hatched = [w.path for w in imported.warnings if w.path not in imported.added]
    assert [w.path for w in warnings] == hatched

    for variable, value in ENVIRONMENT.items():
        monkeypatch.setenv(variable, value)
    changes = diff(nemo_rl_expand(path), _as_nemo_rl_resolves(compiled))
    assert [c for c in changes if not (c.kind == "added" and c.key in imported.added)] == []


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_recipekits_loader_agrees_with_omegaconf(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in ENVIRONMENT.items():
        monkeypatch.setenv(variable, value)
    assert diff(nemo_rl_expand(CORPUS / name), expand(CORPUS / name)) == []


def _as_nemo_rl_resolves(config: dict[str, object]) -> object:
    """The compiled config as NeMo-RL reads it at run time: its ``${oc.env:...}`` filled in."""
    if "${oc.env:" not in repr(config):
        return config
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.create(config), resolve=True)


@pytest.mark.parametrize("name", sorted(EXCLUDED))
def test_excluded_files_are_not_configs_nemo_rl_loads(name: str) -> None:
    with pytest.raises(RecipeError) as failure:
        import_yaml(CORPUS / name)
    assert EXCLUDED[name] in failure.value.render()
