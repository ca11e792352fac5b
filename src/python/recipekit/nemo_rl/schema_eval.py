"""NeMo-RL main's evaluation master config (``examples/run_eval.py``) as typed sections.

One generation back-end (``generation``, as GRPO's policy has it) answers a benchmark
(``data``) scored by an environment (``env``). The data keys are the union of main's eval data
configs (MMLU, MMLU-Pro, AIME, GPQA, MATH, MMAU, Daily-Omni and local files;
``nemo_rl/evals/eval.py`` of NVIDIA-NeMo/RL@7ea279ab). Main only: the corpus has no super-v3 eval.
"""

from typing import Literal

import attrs

from recipekit.markers import Unset
from recipekit.nemo_rl import upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_common import GenerationExamplesMain, VllmConfigExamplesMain
from recipekit.nemo_rl.schema_main import ClusterMain, Environments, TokenizerMain
from recipekit.sections import frozen_section, optional, required, section
from recipekit.upstream.declared import undeclared
from recipekit.validators import at_least, upstream_values


@section("eval")
@frozen_section(kw_only=True, repr=False, eq=False)
class EvalConfig(keys.EvalConfigKeys):
    upstream = upstream_v35("nemo_rl.evals.eval:EvalConfig")

    # The scores eval.py's setup computes (pass@k, the reference configs' one, and cons@k).
    metric: str = required(upstream_values("nemo_rl.eval_metric"))
    num_tests_per_prompt: int = required(at_least(1))
    k_value: int = required(at_least(1))


@section("data")
@frozen_section(kw_only=True, repr=False, eq=False)
class EvalData:
    max_input_seq_length: int = required(at_least(1))
    # A benchmark NeMo-RL knows by name, or a local/remote file (with problem_key, ...).
    dataset_name: str = required()
    prompt_file: str | None | Unset = optional()
    system_prompt_file: str | None | Unset = optional()
    processor: str | Unset = optional()
    # Each prompt this many times (AIME: sampling variance over a small set).
    repeat: int | Unset = optional(at_least(1))
    split: str | None | Unset = optional()
    env_name: str | Unset = optional()
    problem_key: str | Unset = optional()
    solution_key: str | Unset = optional()
    file_format: Literal["csv", "json"] | Unset = optional()


@section("generation.vllm_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class EvalVllmConfig(VllmConfigExamplesMain):
    # The eval configs leave it to vLLM ("auto").
    kv_cache_dtype: Literal["auto", "fp8", "fp8_e4m3"] | Unset = optional()  # type: ignore[assignment]


@section("generation", aliases={"pad_token_id": "_pad_token_id"})
@frozen_section(kw_only=True, repr=False, eq=False)
class EvalGeneration(GenerationExamplesMain):
    undeclared_keys = undeclared(read=("num_prompts_per_step",))

    # Prompts handed to the generation back-end at a time (-1: all at once). Required: the
    # evaluation's setup indexes it with no default (nemo_rl/evals/eval.py:124).
    num_prompts_per_step: int = required(at_least(-1))
    vllm_cfg: EvalVllmConfig | Unset = optional()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class EvalMasterConfig:
    """``examples/run_eval.py --config`` (main, super-v3.5-posttraining)."""

    upstream = upstream_v35("nemo_rl.evals.eval:MasterConfig")

    eval: EvalConfig = required()
    generation: EvalGeneration = required()
    tokenizer: TokenizerMain = required()
    data: EvalData = required()
    env: Environments = required()
    cluster: ClusterMain = attrs.field(factory=ClusterMain)
