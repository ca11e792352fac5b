"""Write src/python/recipekit/datacheck/chat_rows.json: what the pinned NeMo-RL reads from a row of
its SFT (response) and preference (DPO/RM) JSONL, and how the pinned NeMo-RL and Megatron-Bridge
turn a chat template into the assistant-only loss mask, found in their sources with ``ast``
(issue 43). recipekit reads the JSON, never ``.reference/``; ``datacheck/chat_test.py``
regenerates it and compares.

- ``formats``: per dataset class (``openai_format``, ``ResponseDataset``, ``PreferenceDataset``,
  ``BinaryPreferenceDataset``): the registry name, the keys a row is read by (the class's
  ``__init__`` defaults) with the line each is indexed at, and the assertions its reader makes
  (the last message is the assistant's; exactly two completions of different rank; a prompt is
  text or a message list).
- ``messages``: what ``get_formatted_message_log`` reads of each message (its ``role``), and which
  roles the SFT loss trains on (``roles_to_train_on``).
- ``truncation``: where each processor compares a row's tokens with ``max_seq_length`` (``>=`` for
  SFT, ``>`` for preference pairs): past it the row's tokens are cut to a few and its loss
  multiplier is 0, and the entry points pass ``data.max_input_seq_length`` as that length.
- ``template.nemo_rl``: how NeMo-RL renders a conversation (each prefix ``messages[: i + 1]``
  through ``apply_chat_template``, split where two renderings first differ), the roles
  ``add_generation_prompt`` applies to, how ``policy.tokenizer.chat_template`` is read (None,
  ``default``, a ``.jinja`` file, or template text) and the template ``None`` stands for.
- ``template.megatron_bridge``: the pattern of a ``{% generation %}`` block (``GENERATION_REGEX``),
  the template families whose role markers Bridge finds without one (each family's required
  markers and assistant start), and where it raises when neither applies.

A read the pinned source no longer has stops the tool, so an upgrade that moves one is seen.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.generated_modules import CHECKOUT, pins, reference_dir, write_or_check

TOOL = "tools/generate_chat_rows.py"
OUTPUT = CHECKOUT / "src/python/recipekit/datacheck/chat_rows.json"
NEMO_RL = "nemo-rl/super-v3.5-posttraining"
BRIDGE = "megatron-bridge/main"

RESPONSE = "nemo_rl/data/datasets/response_datasets"
PREFERENCE = "nemo_rl/data/datasets/preference_datasets"
OAI_PY = f"{RESPONSE}/oai_format_dataset.py"
RESPONSE_PY = f"{RESPONSE}/response_dataset.py"
PREFERENCE_PY = f"{PREFERENCE}/preference_dataset.py"
BINARY_PY = f"{PREFERENCE}/binary_preference_dataset.py"
PROCESSORS_PY = "nemo_rl/data/processors.py"
MESSAGES_PY = "nemo_rl/data/llm_message_utils.py"
TEMPLATES_PY = "nemo_rl/data/chat_templates.py"
ALGO_UTILS_PY = "nemo_rl/algorithms/utils.py"
SFT_PY = "nemo_rl/algorithms/sft.py"
DATA_UTILS_PY = "nemo_rl/data/utils.py"
RUN_SFT_PY = "examples/run_sft.py"
BRIDGE_UTILS_PY = "src/megatron/bridge/data/datasets/utils.py"
BRIDGE_CHAT_PY = "src/megatron/bridge/data/conversation_processing.py"


def _fail(what: str) -> SystemExit:
    return SystemExit(f"{TOOL}: {what} is not in the pinned source")


class _Source:
    """One pinned file, parsed."""

    def __init__(self, root: Path, path: str) -> None:
        self.path = path
        self.tree = ast.parse((root / path).read_text())

    def site(self, node: ast.AST) -> str:
        return f"{self.path}:{getattr(node, 'lineno', 0)}"

    def function(self, name: str, within: ast.AST | None = None) -> ast.FunctionDef:
        for node in ast.walk(within or self.tree):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        raise _fail(f"{self.path}: def {name}")

    def klass(self, name: str) -> ast.ClassDef:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node
        raise _fail(f"{self.path}: class {name}")

    def first(self, test: Callable[[ast.AST], bool], within: ast.AST | None = None) -> ast.AST:
        found = sorted(
            (n for n in ast.walk(within or self.tree) if test(n)),
            key=lambda n: getattr(n, "lineno", 0),
        )
        if not found:
            raise _fail(f"{self.path}: a read")
        return found[0]

    def sites(self, test: Callable[[ast.AST], bool], within: ast.AST | None = None) -> list[str]:
        lines = sorted({getattr(n, "lineno", 0) for n in ast.walk(within or self.tree) if test(n)})
        if not lines:
            raise _fail(f"{self.path}: a read")
        return [f"{self.path}:{line}" for line in lines]


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _defaults(function: ast.FunctionDef) -> dict[str, Any]:
    """A function's keyword parameters with constant defaults."""
    args = function.args.args
    found: dict[str, Any] = {}
    with_defaults = args[len(args) - len(function.args.defaults) :]
    for arg, default in zip(with_defaults, function.args.defaults, strict=True):
        if isinstance(default, ast.Constant):
            found[arg.arg] = default.value
    return found


def _reads_of(source: _Source, method: ast.AST, attribute: str) -> list[str]:
    """Where ``data[self.<attribute>]`` is indexed in ``method``."""
    return source.sites(
        lambda n: isinstance(n, ast.Subscript) and _text(n.slice) == f"self.{attribute}", method
    )


def _formats(root: Path) -> dict[str, Any]:
    oai = _Source(root, OAI_PY)
    response = _Source(root, RESPONSE_PY)
    preference = _Source(root, PREFERENCE_PY)
    binary = _Source(root, BINARY_PY)
    processors = _Source(root, PROCESSORS_PY)
    registry = _Source(root, f"{RESPONSE}/__init__.py")
    preference_registry = _Source(root, f"{PREFERENCE}/__init__.py")

    def registered(source: _Source, cls: str) -> str:
        """The name ``data.*.dataset_name`` gives a class in the registry dict."""
        table = source.first(
            lambda n: isinstance(n, ast.Assign) and _text(n.targets[0]) == "DATASET_REGISTRY"
        )
        assert isinstance(table, ast.Assign) and isinstance(table.value, ast.Dict)
        for key, value in zip(table.value.keys, table.value.values, strict=True):
            if isinstance(key, ast.Constant) and _text(value) == cls:
                return str(key.value)
        raise _fail(f"{source.path}: {cls} in DATASET_REGISTRY")

    oai_init = oai.function("__init__", oai.klass("OpenAIFormatDataset"))
    oai_format = oai.function("format_data", oai.klass("OpenAIFormatDataset"))
    last_is_assistant = oai.first(
        lambda n: isinstance(n, ast.Assert) and "'assistant'" in _text(n.test), oai_format
    )
    oai_keys = _defaults(oai_init)

    response_init = response.function("__init__", response.klass("ResponseDataset"))
    response_format = response.function("format_data", response.klass("ResponseDataset"))
    response_keys = _defaults(response_init)
    messages_kept = response.first(
        lambda n: isinstance(n, ast.Compare) and _text(n).startswith("'messages' not in"),
        response_init,
    )

    binary_init = binary.function("__init__", binary.klass("BinaryPreferenceDataset"))
    binary_format = binary.function("format_data", binary.klass("BinaryPreferenceDataset"))
    binary_keys = _defaults(binary_init)
    prompt_list = binary.first(
        lambda n: isinstance(n, ast.Call)
        and _text(n).startswith("isinstance(data[self.prompt_key]"),
        binary_format,
    )

    preprocess = processors.function("preference_preprocessor")
    two = processors.first(
        lambda n: isinstance(n, ast.Assert) and "len(datum_dict['completions']) == 2" in _text(n),
        preprocess,
    )
    tie = processors.first(lambda n: isinstance(n, ast.Raise), preprocess)
    preference.klass("PreferenceDataset")  # the class that reads the rows as they are
    return {
        "nemo-rl-messages": {
            "class": f"{OAI_PY}:OpenAIFormatDataset",
            "dataset_name": registered(registry, "OpenAIFormatDataset"),
            "keys": {
                "messages": {
                    "key": oai_keys["chat_key"],
                    "type": "list",
                    "sites": _reads_of(oai, oai_format, "chat_key"),
                },
                "tools": {
                    "key": oai_keys["tool_key"],
                    "type": "list",
                    "optional": True,
                    "sites": _reads_of(oai, oai_format, "tool_key"),
                },
            },
            "last_role": {"role": "assistant", "site": oai.site(last_is_assistant)},
        },
        "nemo-rl-response": {
            "class": f"{RESPONSE_PY}:ResponseDataset",
            "dataset_name": registered(registry, "ResponseDataset"),
            "keys": {
                "input": {
                    "key": response_keys["input_key"],
                    "type": "str",
                    "sites": _reads_of(response, response_format, "input_key"),
                },
                "output": {
                    "key": response_keys["output_key"],
                    "type": "str",
                    "sites": _reads_of(response, response_format, "output_key"),
                },
            },
            # A file whose rows carry "messages" is read as they are (nemo-rl-messages).
            "messages_instead": response.site(messages_kept),
        },
        "nemo-rl-preference": {
            "class": f"{PREFERENCE_PY}:PreferenceDataset",
            "dataset_name": registered(preference_registry, "PreferenceDataset"),
            "keys": {
                "context": {
                    "key": "context",
                    "type": "list",
                    "sites": processors.sites(
                        lambda n: isinstance(n, ast.Subscript)
                        and _text(n) == "datum_dict['context']",
                        preprocess,
                    ),
                },
                "completions": {
                    "key": "completions",
                    "type": "list",
                    "sites": [processors.site(two)],
                },
            },
            "completions": {
                "count": 2,
                "count_site": processors.site(two),
                "rank_site": processors.sites(
                    lambda n: isinstance(n, ast.Subscript) and _text(n.slice) == "'rank'",
                    preprocess,
                )[0],
                "tie_site": processors.site(tie),
                "completion_site": processors.sites(
                    lambda n: isinstance(n, ast.Subscript) and _text(n.slice) == "'completion'",
                    preprocess,
                )[0],
            },
        },
        "nemo-rl-binary-preference": {
            "class": f"{BINARY_PY}:BinaryPreferenceDataset",
            "dataset_name": registered(preference_registry, "BinaryPreferenceDataset"),
            "keys": {
                "prompt": {
                    "key": binary_keys["prompt_key"],
                    "type": "str | list",
                    "sites": [binary.site(prompt_list)],
                },
                "chosen": {
                    "key": binary_keys["chosen_key"],
                    "type": "str",
                    "sites": _reads_of(binary, binary_format, "chosen_key"),
                },
                "rejected": {
                    "key": binary_keys["rejected_key"],
                    "type": "str",
                    "sites": _reads_of(binary, binary_format, "rejected_key"),
                },
            },
        },
    }


def _messages(root: Path) -> dict[str, Any]:
    messages = _Source(root, MESSAGES_PY)
    sft = _Source(root, SFT_PY)
    formatted = messages.function("get_formatted_message_log")
    mask = messages.function("add_loss_mask_to_message_log")
    trained = sft.sites(
        lambda n: isinstance(n, ast.keyword)
        and n.arg == "roles_to_train_on"
        and _text(n.value) == "['assistant']"
    )
    return {
        "role": {
            "type": "str",
            # Compared where the role decides something (not where it is printed).
            "sites": messages.sites(
                lambda n: isinstance(n, ast.Compare) and _text(n.left).endswith("['role']"),
                formatted,
            ),
        },
        "trained_roles": ["assistant"],
        "trained_sites": [
            *trained,
            *messages.sites(
                lambda n: isinstance(n, ast.Compare)
                and _text(n) == "message['role'] in roles_to_train_on",
                mask,
            ),
        ],
    }


def _truncation(root: Path) -> dict[str, Any]:
    processors = _Source(root, PROCESSORS_PY)
    data_utils = _Source(root, DATA_UTILS_PY)
    run_sft = _Source(root, RUN_SFT_PY)

    def compared(function: str) -> tuple[str, str]:
        body = processors.function(function)
        node = processors.first(
            lambda n: isinstance(n, ast.Compare) and _text(n.comparators[0]) == "max_seq_length",
            body,
        )
        assert isinstance(node, ast.Compare)
        op = {ast.GtE: ">=", ast.Gt: ">"}[type(node.ops[0])]
        return op, processors.site(node)

    def passes(source: _Source, within: ast.AST) -> list[str]:
        return source.sites(
            lambda n: isinstance(n, ast.keyword)
            and n.arg == "max_seq_length"
            and _text(n.value) == "data_config['max_input_seq_length']",
            within,
        )

    sft_op, sft_site = compared("sft_processor")
    pair_op, pair_site = compared("preference_preprocessor")
    return {
        "key": "data.max_input_seq_length",
        "sft": {"op": sft_op, "site": sft_site, "passed": passes(run_sft, run_sft.tree)[0]},
        "preference": {
            "op": pair_op,
            "site": pair_site,
            "passed": passes(data_utils, data_utils.function("setup_preference_data"))[0],
        },
    }


def _nemo_rl_template(root: Path) -> dict[str, Any]:
    messages = _Source(root, MESSAGES_PY)
    utils = _Source(root, ALGO_UTILS_PY)
    templates = _Source(root, TEMPLATES_PY)
    formatted = messages.function("get_formatted_message_log")
    render = messages.first(
        lambda n: isinstance(n, ast.Call)
        and _text(n.func) == "tokenizer.apply_chat_template"
        and bool(n.args)
        and _text(n.args[0]) == "message_log_strs[:i + 1]",
        formatted,
    )
    split = messages.first(
        lambda n: isinstance(n, ast.Call) and _text(n.func) == "get_first_index_that_differs",
        formatted,
    )
    prompt_roles = messages.first(
        lambda n: isinstance(n, ast.Compare)
        and _text(n.left) == "message['role']"
        and isinstance(n.comparators[0], ast.List),
        formatted,
    )
    assert isinstance(prompt_roles, ast.Compare)
    tokenizer = utils.function("get_tokenizer")

    def branch(test: str) -> str:
        return utils.site(
            utils.first(
                lambda n: isinstance(n, ast.Compare | ast.Call) and _text(n) == test, tokenizer
            )
        )

    common = templates.klass("COMMON_CHAT_TEMPLATES")
    shipped = {
        _text(node.targets[0]): ast.literal_eval(node.value)
        for node in common.body
        if isinstance(node, ast.Assign)
    }
    if "passthrough_prompt_response" not in shipped:
        raise _fail(f"{TEMPLATES_PY}: passthrough_prompt_response")
    return {
        "render": messages.site(render),
        "split": messages.site(split),
        "generation_prompt_roles": ast.literal_eval(prompt_roles.comparators[0]),
        "generation_prompt_site": messages.site(prompt_roles),
        "key": "policy.tokenizer.chat_template",
        "none": branch("tokenizer_config['chat_template'] is None"),
        "default": branch("tokenizer_config['chat_template'].lower() == 'default'"),
        "file": branch("tokenizer_config['chat_template'].endswith('.jinja')"),
        "passthrough": shipped["passthrough_prompt_response"],
        "passthrough_site": templates.site(
            next(
                n
                for n in common.body
                if isinstance(n, ast.Assign)
                and _text(n.targets[0]) == "passthrough_prompt_response"
            )
        ),
        "shipped": shipped,
    }


def _bridge_template(root: Path) -> dict[str, Any]:
    utils = _Source(root, BRIDGE_UTILS_PY)
    chat = _Source(root, BRIDGE_CHAT_PY)
    regex = utils.first(
        lambda n: isinstance(n, ast.AnnAssign | ast.Assign)
        and "GENERATION_REGEX" in _text(n.target if isinstance(n, ast.AnnAssign) else n.targets[0])
    )
    assert isinstance(regex, ast.AnnAssign | ast.Assign)
    call = regex.value
    assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.Constant)
    preprocess = utils.function("_chat_preprocess")
    reraised = utils.first(
        lambda n: isinstance(n, ast.Raise) and "{% generation %}" in _text(n), preprocess
    )
    infer = chat.function("infer_assistant_mask_boundary_config")
    families: list[dict[str, Any]] = []
    # Families tested with all(marker in template for marker in (...)) and then given their
    # assistant start by keyword (GLM), and the candidates table (ChatML, Llama 3, Gemma, ...).
    for node in ast.walk(infer):
        if isinstance(node, ast.If) and "in template for marker in" in _text(node.test):
            generator = node.test.args[0] if isinstance(node.test, ast.Call) else None
            if not isinstance(generator, ast.GeneratorExp):
                continue
            markers = ast.literal_eval(generator.generators[0].iter)
            start = next(
                (k.value.value for n in ast.walk(node) if isinstance(n, ast.Call)
                 for k in n.keywords if k.arg == "assistant_start"
                 and isinstance(k.value, ast.Constant)),
                None,
            )  # fmt: skip
            if start is not None:
                families.append({"markers": list(markers), "assistant_start": start,
                                 "site": chat.site(node)})  # fmt: skip
        if isinstance(node, ast.AnnAssign) and _text(node.target) == "candidates":
            assert isinstance(node.value, ast.Tuple)
            for entry in node.value.elts:
                assert isinstance(entry, ast.Tuple)
                families.append(
                    {
                        "markers": list(ast.literal_eval(entry.elts[0])),
                        "assistant_start": ast.literal_eval(entry.elts[1]),
                        "site": chat.site(entry),
                    }
                )
    if not families:
        raise _fail(f"{BRIDGE_CHAT_PY}: the template families")
    build = chat.function("build_assistant_loss_mask")
    unable = chat.first(
        lambda n: isinstance(n, ast.Raise) and "Unable to build assistant loss mask" in _text(n),
        build,
    )
    unmatched = chat.first(
        lambda n: isinstance(n, ast.Raise) and "did not match any loss-contributing" in _text(n),
        build,
    )
    return {
        "generation_regex": call.args[0].value,
        "regex_site": utils.site(regex),
        "families": families,
        "raises": chat.site(unable),
        "raises_unmatched": chat.site(unmatched),
        "reraised": utils.site(reraised),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    reference = reference or reference_dir()
    pinned = pins()
    nemo_rl = reference / NEMO_RL
    table = {
        "generated_by": TOOL,
        "sources": {NEMO_RL: pinned[NEMO_RL], BRIDGE: pinned[BRIDGE]},
        "formats": _formats(nemo_rl),
        "messages": _messages(nemo_rl),
        "truncation": _truncation(nemo_rl),
        "template": {
            "nemo_rl": _nemo_rl_template(nemo_rl),
            "megatron_bridge": _bridge_template(reference / BRIDGE),
        },
    }
    return {str(OUTPUT.relative_to(CHECKOUT)): json.dumps(table, indent=1, sort_keys=True) + "\n"}


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
