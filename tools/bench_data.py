"""How fast the import-time data checks read JSONL (issue 43): MB/s and rows/s of the row checks
alone and with token statistics, the checking process's peak memory, and what a 10 GB dataset
would take at that rate. A benchmark, not a test: it writes a synthetic file of rows shaped as
the pinned NeMo-RL reads them (NeMo Gym rows: agent_ref.name, responses_create_params.input,
nemo_gym.py:676, rollouts.py:441; SFT rows: a messages list ending with the assistant's,
oai_format_dataset.py:188/:193 @ super-v3.5-posttraining).

    python3 tools/bench_data.py [--mb 200] [--format nemo-rl-messages] [--short]
                                [--no-tokens] [--tokenizer PATH/tokenizer.json]

Each measurement runs in a fresh process, so its peak resident memory is its own: the same
peak for 100 MB and for 1 GB shows memory bounded by the data's variety, not its size.
Without --tokenizer a byte-level BPE is trained here with the tokenizers library (its speed is
close to a real model's tokenizer.json; pass one to measure that). --short writes rows of 5-40
words (millions of rows per GB) instead of 20-600.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

TEN_GB = 10 * 1024**3
WORDS = "the of and to in is was for on that with as by at from it an be this which".split()
FORMATS = ("nemo-gym-jsonl", "nemo-rl-messages")


def _row(fmt: str, words: str) -> dict[str, Any]:
    if fmt == "nemo-gym-jsonl":
        return {
            "agent_ref": {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"},
            "responses_create_params": {
                "input": [{"role": "user", "content": f"Solve: {words}"}],
                "max_output_tokens": 1024,
            },
            "expected_answer": "42",
        }
    return {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": f"Solve: {words}"},
            {"role": "assistant", "content": f"The answer: {words[: len(words) // 2]}"},
        ]
    }


def write_rows(path: Path, megabytes: float, fmt: str, short: bool) -> int:
    rng = random.Random(0)
    low, high = (5, 40) if short else (20, 600)
    target, written = int(megabytes * 1024**2), 0
    with path.open("w") as out:
        while written < target:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))
            written += out.write(json.dumps(_row(fmt, words)) + "\n")
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


def _measure(data: str, fmt: str, tokenizer_path: str | None, out: Any) -> None:
    """In its own process: check the file, send back the statistics, time and peak memory."""
    from recipekit.datacheck.chat import ChatRows
    from recipekit.datacheck.gym import GymRows, load_tokenizer
    from recipekit.datacheck.scan import check_file

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tokenizer, identity = load_tokenizer(Path(tokenizer_path)) if tokenizer_path else (None, "")
    rules = GymRows() if fmt == "nemo-gym-jsonl" else ChatRows(fmt)
    start = time.perf_counter()
    stats = check_file(Path(data), rules, tokenizer=tokenizer, tokenizer_id=identity)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out.send((stats, elapsed, before, peak))


def measure(data: Path, fmt: str, tokenizer: Path | None) -> tuple[dict[str, Any], float, int, int]:
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    worker = ctx.Process(
        target=_measure, args=(str(data), fmt, str(tokenizer or "") or None, there)
    )
    worker.start()
    found = here.recv()
    worker.join()
    return found  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="size of the file to read")
    parser.add_argument("--format", choices=FORMATS, default="nemo-gym-jsonl")
    parser.add_argument("--short", action="store_true", help="rows of 5-40 words")
    parser.add_argument("--no-tokens", action="store_true", help="the row checks alone")
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.json to count tokens with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "train.jsonl"
        size = write_rows(data, args.mb, args.format, args.short)
        runs: list[tuple[str, Path | None]] = [("checks only", None)]
        if not args.no_tokens:
            runs.append(("checks + tokens", args.tokenizer or trained_tokenizer(folder)))
        for label, tokenizer_path in runs:
            stats, elapsed, before, peak = measure(data, args.format, tokenizer_path)
            rate = size / elapsed
            rows = stats["rows"]
            line = (
                f"{args.format} {label:<16} {size / 1024**2:.0f} MiB, {rows} rows in "
                f"{elapsed:.1f} s: {rate / 1024**2:.1f} MiB/s, {rows / elapsed / 1000:.0f} k rows/s"
            )
            lengths = next((v for k, v in stats.items() if k.endswith("_tokens")), None)
            if lengths is not None:
                counted = rows * lengths["p50"]  # about: the median row's tokens, every row
                line += f", ~{counted / elapsed / 1e6:.2f} M tokens/s"
            line += (
                f"; peak memory {peak / 1024:.0f} MiB ({before / 1024:.0f} MiB before reading)"
                f"; 10 GiB would take {TEN_GB / rate / 60:.0f} min"
            )
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
