"""Keys of a Megatron-Bridge stage that follow another key, computed when the plan is made.

A ``DERIVED`` key takes its rule's value, so ``--set model.seq_length=8192`` moves the
dataset's sequence length with it, as the ``nemotron`` CLI's configs tie them
(``dataset.seq_length`` and ``model.seq_length`` both read ``${art:data,pack_size}``). Left apart
they would not stay apart: Megatron-Bridge's runner overwrites ``model.seq_length`` with the
dataset's (``scripts/training/recipe_runner.py``: ``sync_model_dataset_sequence_length``).
A key given a value keeps it; the checks then catch a disagreement.
"""

from __future__ import annotations

from recipekit.derivation import Derivation, same_rule

RULES: tuple[Derivation, ...] = (
    same_rule("dataset.seq_length", "model.seq_length"),
    # The Energon dataset batches for the loader itself: one micro-batch at a time.
    same_rule("dataset.micro_batch_size", "train.micro_batch_size"),
    # The Super-VL recipes decay the learning rate over the whole run
    # (nemotron_35_super_vl_pretrain: ``cfg.scheduler.lr_decay_iters = cfg.train.train_iters``).
    same_rule("scheduler.lr_decay_iters", "train.train_iters"),
)
