"""NeMo-RL, as recipekit knows it: the typed configs of its ``super-v3`` and ``main`` branches.

Everything that changes with a NeMo-RL upgrade lives in this package: the sections, one module
per version (``schema_super_v3``, ``schema_main``; ``schema_common`` and the per-algorithm
``schema_*`` modules widen them for NeMo-RL's other entry points), the derivations its YAML did
with ``${...}`` (``derivations``, ``derivations_main``), the checks that know its semantics
(``checks``), the framework objects (``framework``: GRPO; ``algorithms``: every entry point) and
its YAML loader (``yaml_loader``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from recipekit.upstream.declared import Declared, declared

if TYPE_CHECKING:
    from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain

NEMO_RL_VERSION = "super-v3"
# The branch whose config schema is main's (``schema_main``): Super 3.5's RL stages run it.
SUPER35_BRANCH = "super-v3.5-posttraining"


def runs_super35(config: object) -> TypeGuard[GRPOMasterConfigMain]:
    """Whether ``config`` is a master config of main's schema. Its class says so
    (``nemo_rl_branch``), so a check need not import main's schema to ask: a Super 3 plan
    never loads it."""
    return getattr(type(config), "nemo_rl_branch", NEMO_RL_VERSION) == SUPER35_BRANCH


# The pinned sources whose config types the sections model (3rdparty/reference/manifest.toml):
# each section names its upstream class (``upstream = upstream_v35("module:Name")``), and
# recipekit.sections gives it every key that class declares (recipekit.upstream.declared).
SUPER_V3_TYPES = "nemo-rl/super-v3"
SUPER35_TYPES = f"nemo-rl/{SUPER35_BRANCH}"


def upstream_v3(*qualified: str) -> Declared:
    """NeMo-RL's config class ``module:Name`` at super-v3 (several: a family NeMo-RL picks from
    at run time), as the generated table has it."""
    return declared(SUPER_V3_TYPES, *qualified)


def upstream_v35(*qualified: str) -> Declared:
    """NeMo-RL's config class(es) ``module:Name`` at super-v3.5-posttraining."""
    return declared(SUPER35_TYPES, *qualified)
