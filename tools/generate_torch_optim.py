#!/usr/bin/env python3
"""Write the table ``policy.optimizer`` and ``policy.scheduler`` are checked against, read from
the pinned PyTorch (``.reference/torch/2.11.0-wheel``, filled by ``tools/fetch-reference``):
``recipekit/pytorch/generated/optim_2_11_0.py``.

NeMo-RL's DTensor workers build the optimizer and each LR scheduler by name and spread the
section's ``kwargs`` into the constructor, after the one argument they pass themselves (the
parameters, the optimizer). For each class ``torch.optim`` and ``torch.optim.lr_scheduler``
export (their ``__all__``), the table holds:

- every parameter of its ``__init__`` (a class without one: its base's) with the annotation's
  type text and the default's source (None: required);
- whether it takes ``**kwargs`` (then an unknown key is not refused);
- the guards of ``__init__``: each ``raise`` whose enclosing ``if`` conditions read only the
  constructor's own parameters and constants (``not 0.0 <= lr``, ``fused and foreach``), with
  its file and line. A ``super().__init__(...)`` call at the top of the body brings the base's
  guards, written in this class's names (a base parameter given a constant or left at its
  default is that value). A parameter the body assigns is not read: its guard would test a
  value other than the one given.

    PYTHONPATH=src/python:. python3 tools/generate_torch_optim.py           # rewrites it
    PYTHONPATH=src/python:. python3 tools/generate_torch_optim.py --check   # exit 1 if stale

``recipekit/pytorch/generated_test.py`` regenerates it and fails on any difference.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from recipekit.upstream.annotations import type_text
from recipekit.upstream.classes import UpstreamSource
from tools.generated_modules import pins, python_dict, python_header, reference_dir, write_or_check
from tools.guard_reader import guards as guards_of
from tools.guard_reader import pinned_base, plain, readable, stored, super_call

TOOL = "tools/generate_torch_optim.py"
TORCH = "torch/2.11.0-wheel"
OUTPUT = "src/python/recipekit/pytorch/generated/optim_2_11_0.py"
# The packages whose exported classes NeMo-RL may name, and the module each name is under.
PACKAGES = ("torch.optim", "torch.optim.lr_scheduler")
# A YAML value is never a tensor: a ``float | Tensor`` parameter takes a float from a config.
_TENSOR = {"Tensor", "torch.Tensor"}


class GenerationError(Exception):
    """The pinned source is not what the reader expects: a site to read again."""


def _module_file(module: str) -> str:
    path = module.replace(".", "/")
    return f"{path}/__init__.py" if module in PACKAGES[:1] else f"{path}.py"


def _all(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            names = ast.literal_eval(node.value)
            return [str(n) for n in names]
    raise GenerationError("no __all__")


def exported_classes(source: UpstreamSource) -> dict[str, str]:
    """Each public name (``torch.optim.AdamW``) -> the ``module:Class`` defining it."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        tree = source.trees.get(package)
        if tree is None:
            raise GenerationError(f"{package} is not among the pinned files")
        scope = source.scope[package]
        for name in _all(tree):
            target = scope.get(name, f"{package}:{name}")
            if target.split(":")[0] == package and target not in source.nodes:
                continue  # a submodule (lr_scheduler, swa_utils) or a function
            if target not in source.nodes:
                raise GenerationError(f"{package}.{name}: {target} is not among the pinned files")
            found[f"{package}.{name}"] = target
    if not found:
        raise GenerationError("torch.optim exports no class here")
    return found


def _init(source: UpstreamSource, qualified: str) -> tuple[str, ast.FunctionDef]:
    """The ``module:Class`` whose ``__init__`` builds ``qualified``, and that function."""
    node = source.nodes[qualified]
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return qualified, item
    base = pinned_base(source, qualified)
    if base is None:
        raise GenerationError(f"{qualified}: no __init__ and no pinned base")
    return _init(source, base)


def _parameters(fn: ast.FunctionDef) -> list[tuple[str, ast.expr | None, ast.expr | None, int]]:
    """(name, annotation, default, line) of each parameter after ``self``."""
    positional = [*fn.args.posonlyargs, *fn.args.args][1:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(fn.args.defaults))
    defaults += fn.args.defaults
    found = [(a.arg, a.annotation, d, a.lineno) for a, d in zip(positional, defaults, strict=True)]
    found += [
        (a.arg, a.annotation, d, a.lineno)
        for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
    ]
    return found


def _without_tensor(annotation: ast.expr) -> ast.expr:
    """The annotation without its tensor members (``float | Tensor`` -> ``float``)."""

    class Drop(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
            left, right = self.visit(node.left), self.visit(node.right)
            if isinstance(node.op, ast.BitOr):
                if ast.unparse(left) in _TENSOR:
                    return right  # type: ignore[no-any-return]
                if ast.unparse(right) in _TENSOR:
                    return left  # type: ignore[no-any-return]
            return ast.BinOp(left=left, op=node.op, right=right)

    return Drop().visit(annotation)  # type: ignore[no-any-return]


Guard = tuple[str, str, str]


def guards(source: UpstreamSource, qualified: str) -> list[Guard]:
    """(condition, exception, ``file:line``) of each guard ``qualified``'s constructor raises on,
    in its own parameters' names."""
    return [(ast.unparse(c), e, w) for c, e, w in _guards(source, qualified)]


def _guards(source: UpstreamSource, qualified: str) -> list[tuple[ast.expr, str, str]]:
    owner, fn = _init(source, qualified)
    file = _module_file(owner.split(":")[0])
    params = _parameters(fn)
    names = {p[0] for p in params}
    found = [(g.condition, g.raised, f"{file}:{g.line}") for g in readable(guards_of(fn), names)]
    found_call = super_call(fn, "__init__")
    base = pinned_base(source, owner)
    if found_call is None or base is None:
        return found
    index, call = found_call
    base_params = _parameters(_init(source, base)[1])
    given: dict[str, ast.expr] = {}
    for (name, _, _, _), arg in zip(base_params, call.args, strict=False):
        given[name] = arg
    given |= {k.arg: k.value for k in call.keywords if k.arg is not None}
    for name, _, default, _ in base_params:
        if name not in given and default is not None:
            given[name] = default
    # A base parameter given something that is neither a constant nor a readable name of this
    # class is unknown here: its guards are dropped.
    before = stored(ast.Module(body=fn.body[:index], type_ignores=[]))
    known = {k: v for k, v in given.items() if plain(v, names - before)}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return known.get(node.id, node)

    for condition, raised, where in _guards(source, base):
        if plain(condition, set(known)):
            found.append((Rename().visit(condition), raised, where))
    return found


def describe(source: UpstreamSource, name: str, qualified: str) -> dict[str, Any]:
    owner, fn = _init(source, qualified)
    module = owner.split(":")[0]
    params = _parameters(fn)
    if not params:
        raise GenerationError(f"{name}: its __init__ takes nothing NeMo-RL could pass")
    parameters = {
        p: (
            "Any"
            if annotation is None
            else type_text(ast.unparse(_without_tensor(annotation)), module, source),
            None if default is None else ast.unparse(default),
            line,
        )
        for p, annotation, default, line in params[1:]
    }
    return {
        "file": _module_file(module),
        "line": fn.lineno,
        "passed": params[0][0],
        "parameters": parameters,
        "takes_any": fn.args.kwarg is not None,
        "guards": tuple(guards(source, qualified)),
    }


def generate(reference: Path | None = None) -> dict[str, str]:
    reference = reference or reference_dir()
    source = UpstreamSource.from_tree(reference / TORCH / "torch")
    classes = {
        name: describe(source, name, qualified)
        for name, qualified in sorted(exported_classes(source).items())
    }
    text = python_header(
        TOOL,
        [TORCH],
        pins(),
        ["torch/optim/__init__.py", "torch/optim/lr_scheduler.py", "torch/optim/*.py"],
        "The classes torch.optim and torch.optim.lr_scheduler export, as NeMo-RL's DTensor\n"
        "workers build them: name -> file, line of __init__, the parameter NeMo-RL passes itself\n"
        "(positionally), the others (name -> (type text, default's source or None when required,\n"
        "line)), whether **kwargs is taken, and the guards (condition on the parameters,\n"
        "exception, file:line). Types drop Tensor: a config's value is never one.",
    )
    text = text.replace("# ruff: noqa: E501\n", "# ruff: noqa: E501\n\nfrom typing import Any\n", 1)
    text += "\n" + python_dict(
        "CLASSES", "name -> how it is built", "dict[str, dict[str, Any]]", classes
    )
    return {OUTPUT: text}


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
