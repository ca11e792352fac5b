"""vLLM 0.25.1's own verdicts on its engine config classes, recorded as a fixture.

``recipekit.vllm.guards`` replays the checks of the config classes the engine builds from its
arguments (``tools/generate_vllm_guards.py``). This tool holds that replay to vLLM itself:

- ``cases`` (recipekit, no vLLM): for each case below (``vllm_kwargs`` a user could set), the
  keyword arguments each config class gets from them and the engine's constant defaults
  (``recipekit.vllm.guards.built_with``): the values the replay reads. Writes the fixture with
  no verdicts.
- ``record`` (where ``vllm`` imports: PyPI's 0.25.1 wheel unzipped on PYTHONPATH, with its
  pure-Python requirements and a CPU torch; no GPU): builds each class with them and writes
  what it raised (the exception's type, and the file and line in ``vllm/config`` it came from)
  or null.

    python3 tools/record_vllm_verdicts.py cases
    PYTHONPATH=<vllm wheel>:<its requirements> python3 tools/record_vllm_verdicts.py record

``recipekit/vllm/verdicts_test.py`` replays every case.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path("src/python/recipekit/vllm/verdicts/vllm-0.25.1.json")
MODULES = {
    "ParallelConfig": "vllm.config.parallel",
    "SchedulerConfig": "vllm.config.scheduler",
    "CacheConfig": "vllm.config.cache",
    "LoadConfig": "vllm.config.load",
    "ObservabilityConfig": "vllm.config.observability",
}
# vllm_kwargs, each breaking or keeping one check of the classes (id -> the keys).
CASES: dict[str, dict[str, Any]] = {
    "none": {},
    "elastic-ep-alone": {"enable_elastic_ep": True},
    "elastic-ep-with-eplb": {
        "enable_elastic_ep": True,
        "enable_eplb": True,
        "enable_expert_parallel": True,
    },
    "elastic-ep-pipeline": {
        "enable_elastic_ep": True,
        "enable_eplb": True,
        "enable_expert_parallel": True,
        "pipeline_parallel_size": 2,
    },
    "elastic-ep-external-lb": {
        "enable_elastic_ep": True,
        "enable_eplb": True,
        "enable_expert_parallel": True,
        "data_parallel_external_lb": True,
    },
    "numa-nodes-without-bind": {"numa_bind_nodes": [0]},
    "numa-nodes-with-bind": {"numa_bind": True, "numa_bind_nodes": [0]},
    "numa-cpus-without-bind": {"numa_bind_cpus": ["0-3"]},
    "traces-without-endpoint": {"collect_detailed_traces": ["worker"]},
    "traces-with-endpoint": {
        "collect_detailed_traces": ["worker"],
        "otlp_traces_endpoint": "http://127.0.0.1:4317",
    },
    "dcp-3": {"decode_context_parallel_size": 3},
    "dcp-a2a-alone": {"dcp_comm_backend": "a2a"},
    "eplb-without-ep": {"enable_eplb": True},
    "nnodes-2-ray": {"nnodes": 2, "distributed_executor_backend": "ray"},
    "load-format-dummy": {"load_format": "dummy"},
    "swap-space-0": {"swap_space": 0},
    "api-rank-beyond-count": {"_api_process_count": 1, "_api_process_rank": 1},
}


# What a class needs besides the engine's arguments (SchedulerConfig's InitVars, which the
# engine fills from the model).
BESIDES = {"SchedulerConfig": {"max_model_len": 8192, "is_encoder_decoder": False}}


def build_cases() -> list[dict[str, Any]]:
    from recipekit.vllm.guards import built_with, tables

    cases = []
    for case, given in CASES.items():
        classes = {name: built_with(name, given) | BESIDES.get(name, {}) for name in tables()}
        cases.append({"id": case, "vllm_kwargs": given, "classes": classes})
    return cases


def _raised_at(exc: BaseException) -> dict[str, Any]:
    """The exception pydantic wrapped, and the vllm/config line it was raised from."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        inner = (errors()[0].get("ctx") or {}).get("error")
        if isinstance(inner, BaseException):
            exc = inner
    line, file = 0, ""
    tb = exc.__traceback__
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if "/vllm/config/" in path:
            file, line = "vllm/config/" + path.split("/vllm/config/")[1], tb.tb_lineno
        tb = tb.tb_next
    return {"type": type(exc).__name__, "file": file, "line": line}


def record(fixture: dict[str, Any]) -> dict[str, Any]:
    import vllm  # noqa: F401  (imported first: its config package needs the platform set up)

    for case in fixture["cases"]:
        case["verdict"] = {}
        for name, kwargs in case["classes"].items():
            cls = getattr(importlib.import_module(MODULES[name]), name)
            try:
                cls(**kwargs)
                case["verdict"][name] = None
            except Exception as exc:  # noqa: BLE001 - any failure is the verdict
                case["verdict"][name] = _raised_at(exc)
    fixture["recorded_with"] = {"vllm": "0.25.1", "python": sys.version.split()[0]}
    return fixture


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="record-vllm-verdicts", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("cases", help="write the fixture's cases (recipekit, no vLLM)")
    sub.add_parser("record", help="add vLLM's verdicts (needs vllm importable)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "cases":
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        fixture: dict[str, Any] = {"vllm": "0.25.1", "cases": build_cases()}
        FIXTURE.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
        print(f"record-vllm-verdicts: {len(fixture['cases'])} cases -> {FIXTURE}")
        return 0
    fixture = record(json.loads(FIXTURE.read_text()))
    FIXTURE.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    errors = sum(1 for c in fixture["cases"] for v in c["verdict"].values() if v)
    print(f"record-vllm-verdicts: {len(fixture['cases'])} cases, {errors} errors -> {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
