"""How fast ``data import rl`` reads NeMo Gym JSONL (issue 43): MB/s of the row checks alone and
with token statistics, and what a 10 GB dataset would take at that rate. A benchmark, not a
test: it writes a synthetic file of rows shaped as the pinned NeMo-RL indexes them (agent_ref.name,
responses_create_params.input: nemo_gym.py:676, rollouts.py:441 @ super-v3.5-posttraining).

    python3 tools/bench_data.py [--mb 200] [--tokenizer PATH/tokenizer.json]

Without --tokenizer a byte-level BPE is trained here with the tokenizers library (its speed is
close to a real model's tokenizer.json; pass one to measure that).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from recipekit.datacheck.gym import check_jsonl, load_tokenizer

TEN_GB = 10 * 1024**3
WORDS = "the of and to in is was for on that with as by at from it an be this which".split()


def write_rows(path: Path, megabytes: float) -> int:
    rng = random.Random(0)
    target, written = int(megabytes * 1024**2), 0
    with path.open("w") as out:
        while written < target:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 600)))
            row = {
                "agent_ref": {
                    "type": "responses_api_agents",
                    "name": "math_with_judge_simple_agent",
                },
                "responses_create_params": {
                    "input": [{"role": "user", "content": f"Solve: {words}"}],
                    "max_output_tokens": 1024,
                },
                "expected_answer": "42",
            }
            written += out.write(json.dumps(row) + "\n")
    return written


def trained_tokenizer(folder: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    built = Tokenizer(models.BPE())
    built.pre_tokenizer = pre_tokenizers.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=8000, show_progress=False)
    built.train_from_iterator([" ".join(WORDS)] * 1000, trainer=trainer)
    path = folder / "tokenizer.json"
    built.save(str(path))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="size of the file to read")
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.json to count tokens with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "train.jsonl"
        size = write_rows(data, args.mb)
        for label, tokenizer_path in (
            ("checks only", None),
            ("checks + tokens", args.tokenizer or trained_tokenizer(folder)),
        ):
            tokenizer, identity = load_tokenizer(tokenizer_path) if tokenizer_path else (None, "")
            start = time.perf_counter()
            stats = check_jsonl(data, tokenizer=tokenizer, tokenizer_id=identity)
            elapsed = time.perf_counter() - start
            rate = size / elapsed
            line = (
                f"{label:<16} {size / 1024**2:.0f} MiB, {stats['rows']} rows in {elapsed:.1f} s: "
            )
            line += f"{rate / 1024**2:.1f} MiB/s"
            if tokenizer is not None:
                tokens = sum(stats["prompt_tokens"]["longest"]) if stats["rows"] <= 1000 else None
                counted = tokens or stats["rows"] * stats["prompt_tokens"]["p50"]
                line += f", ~{counted / elapsed / 1e6:.2f} M tokens/s"
            line += f"; 10 GiB would take {TEN_GB / rate / 60:.0f} min"
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
