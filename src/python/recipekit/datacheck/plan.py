"""What ``pipeline plan`` says of a stage's data from the statistics its import recorded
(issue 43): the manifest's ``meta["content"]``, never the files, so a plan stays fast.

For NeMo Gym rows on NeMo-RL super-v3.5-posttraining, per prompt limit (recipekit's own rule
``nemo_rl/rules/sequence_budget.py`` says the same of the limits themselves):

- ``data.max_input_seq_length``: not applied. ``nemo_gym_data_processor`` takes it and never uses
  it (nemo_rl/data/processors.py:779; the prompt is built server-side by NeMo Gym), so nothing is
  cut or dropped for it. Said, not refused.
- ``env.nemo_gym.policy_max_input_tokens``: NeMo Gym ends a rollout whose prompt outgrows it
  (context_length_exceeded): the row trains on nothing. A warning with the count.
- ``policy.generation.vllm_cfg.max_model_len``: a prompt that fills it leaves vLLM no room and
  NeMo-RL raises (vllm_worker.py:77, vllm_worker_async.py:442 @ super-v3.5-posttraining): refused,
  unless ``policy_max_input_tokens`` is below it, which ends those rollouts first.

For NeMo-RL's SFT and preference rows (``datacheck.chat``) on an SFT, DPO or RM stage:

- the stage's ``data.*.dataset_name`` must name the class that reads the recorded format;
- ``data.max_input_seq_length`` is the length past which a processor cuts a row to a few tokens
  and sets its loss multiplier to 0 (``>=`` for SFT, ``>`` for a preference pair's longer side):
  those rows train on nothing. A warning with the count; refused when it is every row;
- an SFT stage's chat template (``policy.tokenizer.chat_template``, or the model's own) is
  rendered on the data's role sequences (``datacheck.template``): refused where NeMo-RL's
  per-message split would train on a sequence the template never produces.

A MOPD stage (``on_policy_distillation``) routes each row to a teacher by its agent: an agent
with no teacher is refused under ``strict_agent_name_match`` (NeMo-RL raises), else said with
its count (the default teacher scores it). Token counts recorded with another tokenizer than
the stage's model's (its ``tokenizer.json`` in the store) are a warning naming both.

Counts are of the message text's tokens (the chat template adds more), so they are at least the
number of prompts past a limit. Without token statistics (no tokenizer at import) lengths are not
compared, and the plan says so. A row's agent is checked against the stage's Gym config from the
recorded rows per agent where the import could not (``store import``, a config it had not read).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.datacheck.chat import FORMATS, MESSAGES, RESPONSE, chat_rows
from recipekit.datacheck.gym import FORMAT, LONGEST_KEPT, agents_of, gym_rows
from recipekit.errors import Issue
from recipekit.importers.data_paths import resolved_at
from recipekit.markers import UNSET

SUPER35 = "super-v3.5-posttraining"
PROCESSOR_CITE = "nemo_rl/data/processors.py:779 @ super-v3.5-posttraining"
VLLM_CITE = "vllm_worker.py:77, vllm_worker_async.py:442 @ super-v3.5-posttraining"


@attrs.frozen
class DataFindings:
    """Refusals (the framework would fail) and notes (what it does with the data)."""

    errors: tuple[Issue, ...] = ()
    notes: tuple[Issue, ...] = ()


def count_over(lengths: Mapping[str, Any], rows: int, limit: int) -> tuple[int, bool]:
    """How many prompts are at least ``limit`` long, and whether the count is exact (from the
    longest kept) or estimated from the percentiles (a lower bound, to 1% of the rows)."""
    longest = list(lengths.get("longest", ()))
    exact = sum(1 for n in longest if n >= limit)
    if exact < len(longest) or len(longest) >= rows or len(longest) < LONGEST_KEPT:
        return exact, True
    percentiles = list(lengths.get("percentiles", ()))
    share = sum(1 for n in percentiles[:-1] if n >= limit) / max(len(percentiles) - 1, 1)
    return max(exact, int(share * rows)), False


def _get(config: Mapping[str, Any], path: str) -> Any:
    """The value at ``path``, None where a key on the way is missing."""
    value = resolved_at(config, path)
    return None if value is UNSET else value


def stage_findings(
    stage: str,
    config: Mapping[str, Any],
    version: str,
    content: Mapping[str, Any],
    *,
    model_dir: Path | None = None,
) -> DataFindings:
    """What ``content`` (a data version's recorded statistics, by file) means for one stage's
    framework config at NeMo-RL ``version``; ``model_dir``: the version of the stage's model it
    reads, where the store holds it (its tokenizer and chat template)."""
    if SUPER35 not in version:
        return DataFindings()
    errors: list[Issue] = []
    notes: list[Issue] = []
    gym = {n: s for n, s in content.items() if isinstance(s, Mapping) and s.get("format") == FORMAT}
    chat = {
        n: s for n, s in content.items() if isinstance(s, Mapping) and s.get("format") in FORMATS
    }
    if gym and _get(config, "env.should_use_nemo_gym") is True:
        found = _gym_findings(stage, config, gym)
        errors += found.errors
        notes += found.notes
    if chat:
        found = _chat_findings(stage, config, chat, model_dir)
        errors += found.errors
        notes += found.notes
    notes += _tokenizer_notes(stage, content, model_dir)
    return DataFindings(tuple(errors), tuple(notes))


def _gym_findings(
    stage: str, config: Mapping[str, Any], content: Mapping[str, Any]
) -> DataFindings:
    """NeMo Gym rows against the stage's Gym config, prompt limits and MOPD routing."""
    errors: list[Issue] = []
    notes: list[Issue] = []
    paths = _get(config, "env.nemo_gym.config_paths")
    agents = agents_of(paths) if isinstance(paths, list | tuple) else None
    limit_in = _get(config, "data.max_input_seq_length")
    context = _get(config, "policy.generation.vllm_cfg.max_model_len")
    gym_limit = _get(config, "env.nemo_gym.policy_max_input_tokens")
    for name, stats in content.items():
        where = f"{stage}: {name}"
        opd = _opd_findings(where, config, stats)
        errors += opd.errors
        notes += opd.notes
        rows = int(stats.get("rows", 0))
        if agents is not None:
            unknown = {a: n for a, n in stats.get("agents", {}).items() if a not in agents}
            if unknown:
                shown = ", ".join(f"{a!r} ({n} rows)" for a, n in sorted(unknown.items()))
                errors.append(
                    Issue(
                        where,
                        f"rows name agents env.nemo_gym.config_paths does not define: {shown}",
                        hint="add the agent's Gym config to config_paths, or re-import the data",
                    )
                )
        tokens = stats.get("prompt_tokens")
        if not isinstance(tokens, Mapping):
            notes.append(
                Issue(where, "prompt token lengths not recorded (imported without a tokenizer)")
            )
            continue
        longest = tokens.get("max", 0)
        if isinstance(limit_in, int) and longest >= limit_in:
            count, exact = count_over(tokens, rows, limit_in)
            notes.append(
                Issue(
                    where,
                    f"{_count(count, exact)} of {rows} prompts reach data.max_input_seq_length = "
                    f"{limit_in} tokens: NeMo Gym rows are neither cut nor dropped for it (the "
                    f"processor does not use it: {PROCESSOR_CITE})",
                )
            )
        if isinstance(gym_limit, int) and longest > gym_limit:
            count, exact = count_over(tokens, rows, gym_limit + 1)
            notes.append(
                Issue(
                    where,
                    f"{_count(count, exact)} of {rows} prompts exceed "
                    f"env.nemo_gym.policy_max_input_tokens = {gym_limit}: NeMo Gym ends each "
                    "such rollout (context_length_exceeded), which trains on nothing",
                )
            )
        if isinstance(context, int) and longest >= context:
            count, exact = count_over(tokens, rows, context)
            shielded = isinstance(gym_limit, int) and gym_limit < context
            message = (
                f"{_count(count, exact)} of {rows} prompts fill "
                f"policy.generation.vllm_cfg.max_model_len = {context} tokens"
            )
            if shielded:
                notes.append(
                    Issue(where, f"{message}: NeMo Gym ends them first (policy_max_input_tokens)")
                )
            else:
                errors.append(
                    Issue(
                        where,
                        f"{message}: vLLM has no room to generate and NeMo-RL raises ({VLLM_CITE})",
                        hint="drop or shorten them, or raise max_model_len",
                    )
                )
    return DataFindings(tuple(errors), tuple(notes))


def _opd_findings(where: str, config: Mapping[str, Any], stats: Mapping[str, Any]) -> DataFindings:
    """A MOPD stage's rows whose agent routes to no teacher (opd.py's resolve_reference_aliases)."""
    opd = gym_rows()["opd"]
    distill = _get(config, "on_policy_distillation")
    if not isinstance(distill, Mapping) or distill.get("enabled") is not True:
        return DataFindings()
    routes = distill.get("teacher_model_by_agent_name") or {}
    unrouted = {a: n for a, n in stats.get("agents", {}).items() if a not in routes}
    if not unrouted:
        return DataFindings()
    shown = ", ".join(f"{a!r} ({n} rows)" for a, n in sorted(unrouted.items()))
    key = opd["key"]
    default = distill.get("default_teacher_alias")
    if distill.get("strict_agent_name_match") is True:
        why = f"strict_agent_name_match is on, so NeMo-RL raises on the first ({opd['strict']})"
    elif not default:
        why = f"no default_teacher_alias is set, so NeMo-RL raises on the first ({opd['unmapped']})"
    else:
        said = f"rows name agents {key} does not route: {shown}: the default teacher {default!r}"
        return DataFindings(notes=(Issue(where, f"{said} scores them ({opd['fallback']})"),))
    return DataFindings(
        errors=(
            Issue(
                where,
                f"rows name agents {key} does not route to a teacher: {shown}; {why}",
                hint="route the agent to a teacher, or drop its rows",
            ),
        )
    )


def _algorithm(config: Mapping[str, Any]) -> str | None:
    """sft, dpo or rm: the NeMo-RL entry point a config is for, by its own section."""
    return next(
        (name for name in ("sft", "dpo", "rm") if isinstance(config.get(name), Mapping)), None
    )


def _dataset_names(config: Mapping[str, Any]) -> dict[str, str]:
    """``data.<split>.dataset_name`` (and ``data.dataset_name``) where set, by where."""
    found: dict[str, str] = {}
    data = config.get("data")
    if not isinstance(data, Mapping):
        return found
    if isinstance(data.get("dataset_name"), str):
        found["data.dataset_name"] = data["dataset_name"]
    for split, section in data.items():
        if isinstance(section, Mapping) and isinstance(section.get("dataset_name"), str):
            found[f"data.{split}.dataset_name"] = section["dataset_name"]
    return found


def _chat_findings(
    stage: str, config: Mapping[str, Any], content: Mapping[str, Any], model_dir: Path | None
) -> DataFindings:
    """NeMo-RL's SFT and preference rows against an SFT, DPO or RM stage."""
    from recipekit.datacheck.template import nemo_rl_findings, read_template, shapes

    algorithm = _algorithm(config)
    if algorithm is None:
        return DataFindings()
    errors: list[Issue] = []
    notes: list[Issue] = []
    formats = chat_rows()["formats"]
    readers = {spec["dataset_name"]: name for name, spec in formats.items()}
    truncation = chat_rows()["truncation"]
    rule = truncation["sft" if algorithm == "sft" else "preference"]
    limit = _get(config, "data.max_input_seq_length")
    roles: dict[str, int] = {}
    for name, stats in content.items():
        where = f"{stage}: {name}"
        recorded = str(stats.get("format"))
        for key, dataset in _dataset_names(config).items():
            reads = readers.get(dataset)
            fits = reads == recorded or (reads == RESPONSE and recorded == MESSAGES)
            if reads is not None and not fits:
                errors.append(
                    Issue(
                        where,
                        f"holds {recorded} rows, and {key} = {dataset!r} reads {reads} rows "
                        f"({formats[reads]['class']})",
                        hint=f"set {key} to {formats[recorded]['dataset_name']!r}, or import "
                        "the data in the format it reads",
                    )
                )
        for shape, count in stats.get("roles", {}).items():
            roles[shape] = roles.get(shape, 0) + int(count)
        tokens = stats.get("conversation_tokens")
        rows = int(stats.get("rows", 0))
        if not isinstance(tokens, Mapping):
            notes.append(
                Issue(where, "row token lengths not recorded (imported without a tokenizer)")
            )
            continue
        if not isinstance(limit, int):
            continue
        over = limit if rule["op"] == ">=" else limit + 1
        if tokens.get("max", 0) < over:
            continue
        count, exact = count_over(tokens, rows, over)
        verb = "reach" if rule["op"] == ">=" else "exceed"
        side = " (a pair: its longer side)" if algorithm != "sft" else ""
        message = (
            f"{_count(count, exact)} of {rows} rows{side} {verb} data.max_input_seq_length = "
            f"{limit} tokens: NeMo-RL cuts each to a few tokens and sets its loss multiplier to "
            f"0, so they train on nothing ({rule['site']}; the limit passed at {rule['passed']})"
        )
        if exact and count >= rows:
            errors.append(Issue(where, message, hint="raise data.max_input_seq_length"))
        else:
            notes.append(Issue(where, message))
    if algorithm == "sft":
        value = resolved_at(config, "policy.tokenizer.chat_template")
        template = read_template("default" if value is UNSET else value, model_dir)
        if template is None:
            notes.append(
                Issue(
                    f"{stage}: policy.tokenizer.chat_template",
                    "not checked: the template is the model's and the store holds no "
                    "tokenizer_config.json or chat_template.jinja for it, or a .jinja file "
                    "recipekit cannot read here",
                )
            )
        else:
            found, said = nemo_rl_findings(template, shapes(roles))
            errors += [Issue(f"{stage}: {i.path}", i.message, hint=i.hint) for i in found]
            notes += [Issue(f"{stage}: {i.path}", i.message, hint=i.hint) for i in said]
    return DataFindings(tuple(errors), tuple(notes))


def _tokenizer_notes(stage: str, content: Mapping[str, Any], model_dir: Path | None) -> list[Issue]:
    """Token counts recorded with another tokenizer than the stage's model's."""
    import hashlib

    file = model_dir / "tokenizer.json" if model_dir is not None else None
    if file is None or not file.is_file():
        return []
    own = f"sha256:{hashlib.sha256(file.read_bytes()).hexdigest()}"
    notes = []
    for name, stats in content.items():
        if not isinstance(stats, Mapping):
            continue
        for key, lengths in stats.items():
            made = lengths.get("tokenizer") if isinstance(lengths, Mapping) else None
            if key.endswith("_tokens") and isinstance(made, str) and made != own:
                notes.append(
                    Issue(
                        f"{stage}: {name}",
                        f"{key} were counted with tokenizer {made[:19]}, and the stage's model "
                        f"({file}) has {own[:19]}: the counts and the limits compared with "
                        "them are another tokenizer's",
                        hint=f"re-import with --tokenizer {file}",
                    )
                )
    return notes


def _count(count: int, exact: bool) -> str:
    return f"at least {count}" if exact else f"about {count} or more"


def chain_findings(root: Path, planned: Sequence[Any], actions: Sequence[Any]) -> DataFindings:
    """Each stage that runs, against the statistics of every store version it reads."""
    from recipekit.lineage.store import read_marker

    errors: list[Issue] = []
    notes: list[Issue] = []
    for entry, action in zip(planned, actions, strict=True):
        if not action.runs or entry.plan is None:
            continue
        version = str(getattr(entry.plan.stage.framework, "version", ""))
        model_dir = next(
            (_version_dir(root, read.ref.name, read.version) for read in action.inputs
             if read.role == "model" and read.version is not None),
            None,
        )  # fmt: skip
        chat_roles: dict[str, int] = {}
        for read in action.inputs:
            if read.version is None:
                continue
            marker = read_marker(root / read.ref.name, read.version) or {}
            content = marker.get("meta", {}).get("content")
            if not isinstance(content, Mapping):
                continue
            found = stage_findings(
                entry.name, entry.plan.framework_config, version, content, model_dir=model_dir
            )
            errors += found.errors
            notes += found.notes
            found = energon_findings(entry.name, entry.plan.framework_config, content)
            errors += found.errors
            notes += found.notes
            found = lock_findings(entry.name, entry.plan.framework_config, content, model_dir)
            errors += found.errors
            notes += found.notes
            for stats in content.values():
                if isinstance(stats, Mapping) and isinstance(stats.get("roles"), Mapping):
                    for shape, count in stats["roles"].items():
                        chat_roles[shape] = chat_roles.get(shape, 0) + int(count)
        found = bridge_stage_findings(
            entry.name, entry.plan.stage, entry.plan.framework_config, model_dir, chat_roles
        )
        errors += found.errors
    return DataFindings(tuple(errors), tuple(notes))


def energon_findings(
    stage: str, config: Mapping[str, Any], content: Mapping[str, Any]
) -> DataFindings:
    """An Energon dataset's recorded splits against the Megatron-Bridge stage reading it: with
    ``dataset.do_validation`` Bridge builds a loader on split ``val`` (builders/energon.py,
    ``EnergonDatasetBuilder.build``), and Energon fails on one that is absent (metadata.py:83)
    or empty (``EmptyDatasetError``, metadata.py:98). Set true, refused; left to the recipe's
    default (``EnergonDatasetConfig.do_validation = True``), said."""
    from recipekit.datacheck.energon import FORMAT as ENERGON

    errors: list[Issue] = []
    notes: list[Issue] = []
    validation = _get(config, "dataset.do_validation")
    if validation is False or _get(config, "dataset.path") is None:
        return DataFindings()  # not validating, or no Energon dataset config
    for name, stats in content.items():
        if not isinstance(stats, Mapping) or stats.get("format") != ENERGON:
            continue
        splits = stats.get("splits", {})
        samples = splits.get("val", {}).get("samples", 0) if isinstance(splits, Mapping) else 0
        if samples:
            continue
        said = "has no split 'val'" if "val" not in splits else "lists no samples in split 'val'"
        where = f"{stage}: dataset.do_validation"
        if validation is True:
            errors.append(
                Issue(
                    where,
                    f"is true, and the Energon data ({name}) {said}: Energon fails when Bridge "
                    "builds the validation loader (metadata.py:83, :98 @ megatron-energon 7.4.1)",
                    hint="set dataset.do_validation: false, or import data with a val split",
                )
            )
        else:
            notes.append(
                Issue(
                    where,
                    f"is the recipe's default (true), and the Energon data ({name}) {said}: the "
                    "validation loader fails if the recipe validates",
                    hint="set dataset.do_validation: false, or import data with a val split",
                )
            )
    return DataFindings(tuple(errors), tuple(notes))


# Where a stage's sequence length is set: Megatron-Bridge's model and dataset, NeMo-RL's policy.
SEQUENCE_KEYS = ("model.seq_length", "dataset.seq_length", "policy.max_total_sequence_length")


def lock_findings(
    stage: str, config: Mapping[str, Any], content: Mapping[str, Any], model_dir: Path | None
) -> DataFindings:
    """Pre-tokenised data (``datacheck.pretokenized``) against the stage reading it: its model's
    tokenizer.json must be the one the data was tokenised with (another one's ids mean other
    words, and nothing fails), and its sequence no longer than the data was prepared for."""
    import hashlib

    from recipekit.datacheck.pretokenized import FORMAT as PRETOKENIZED

    errors: list[Issue] = []
    notes: list[Issue] = []
    locked = {
        n: s
        for n, s in content.items()
        if isinstance(s, Mapping) and s.get("format") == PRETOKENIZED
    }
    if not locked:
        return DataFindings()
    file = model_dir / "tokenizer.json" if model_dir is not None else None
    own = (
        f"sha256:{hashlib.sha256(file.read_bytes()).hexdigest()}"
        if file is not None and file.is_file()
        else None
    )
    lengths = {k: v for k in SEQUENCE_KEYS if isinstance(v := _get(config, k), int)}
    for name, stats in locked.items():
        made = str(stats.get("tokenizer", ""))
        if own is None:
            notes.append(
                Issue(
                    f"{stage}: {name}",
                    f"pre-tokenised with tokenizer {made[:19]}; the stage's model has no "
                    "tokenizer.json in the store to compare it with",
                )
            )
        elif own != made:
            errors.append(
                Issue(
                    f"{stage}: {name}",
                    f"was tokenised with tokenizer {made[:19]} (recorded at import), and the "
                    f"stage's model ({file}) has {own[:19]}: its token ids mean other words",
                    hint="re-tokenise the data with the model's tokenizer, or train the model "
                    "it was made for",
                )
            )
        prepared = stats.get("seq_length")
        for key, length in lengths.items():
            if isinstance(prepared, int) and length > prepared:
                errors.append(
                    Issue(
                        f"{stage}: {key}",
                        f"is {length}, and {name} was prepared for sequences of {prepared} "
                        "(recorded at import): the stage would read it as longer sequences "
                        "than it holds",
                        hint=f"set {key} to {prepared} or less, or prepare the data again",
                    )
                )
    return DataFindings(tuple(errors), tuple(notes))


def bridge_stage_findings(
    stage: str,
    spec: Any,
    config: Mapping[str, Any],
    model_dir: Path | None,
    roles: Mapping[str, int] | None = None,
) -> DataFindings:
    """A Megatron-Bridge fine-tuning stage (its recipe an SFT or PEFT one) against the chat
    template of the model version it starts from, where that version holds one: refused where
    Bridge could not build the assistant-only loss mask (``datacheck.template``)."""
    from recipekit.datacheck.template import bridge_findings, model_template, shapes

    if getattr(getattr(spec, "framework", None), "name", "") != "megatron-bridge":
        return DataFindings()
    target = str(_get(config, "recipe._target_") or "")
    # The fine-tuning recipes train on chat turns (nemotron_35_super_vl_sft_config, _peft_);
    # pretraining's image captions have no assistant turn to mask.
    if not any(part in target.rsplit(".", 1)[-1] for part in ("sft", "peft")):
        return DataFindings()
    template = model_template(model_dir)
    if template is None:
        return DataFindings()
    found = bridge_findings(template, shapes(roles))
    return DataFindings(tuple(Issue(f"{stage}: {i.path}", i.message, hint=i.hint) for i in found))


def _version_dir(root: Path, artifact: str, number: int) -> Path | None:
    from recipekit.lineage.store import versions

    for stored in versions(root, artifact):
        if stored.version == number:
            return root / artifact / stored.path
    return None
