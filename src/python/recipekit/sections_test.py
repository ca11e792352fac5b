from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.markers import DERIVED, UNSET, Unset
from recipekit.nemo_rl.schema_super_v3 import (
    Cluster,
    DTensor,
    LoRA,
    MathEnvironment,
    Megatron,
    SchedulerMilestones,
    VllmConfig,
)
from recipekit.sections import (
    SECTION_PATH,
    frozen_section,
    is_section,
    optional,
    required,
    section,
    upstream_key,
)


def _only_issue(exc: pytest.ExceptionInfo[RecipeError]) -> str:
    assert len(exc.value.issues) == 1
    return exc.value.issues[0].render()


def test_unknown_keyword_gets_did_you_mean_with_the_framework_path() -> None:
    with pytest.raises(RecipeError) as exc:
        Cluster(gpus_per_nod=4)  # type: ignore[call-arg]
    assert _only_issue(exc) == ("cluster.gpus_per_nod: unknown key (did you mean 'gpus_per_node'?)")


def test_bool_is_not_an_integer() -> None:
    with pytest.raises(RecipeError) as exc:
        Cluster(gpus_per_node=True)
    assert "cluster.gpus_per_node = True: expected an integer" in _only_issue(exc)


def test_enumeration_lists_the_allowed_values() -> None:
    with pytest.raises(RecipeError) as exc:
        MathEnvironment(num_workers=1, math_verify_impl="sympy")
    text = _only_issue(exc)
    assert "env.<name>.math_verify_impl = 'sympy': not an accepted value" in text
    # The values and where the pin defines them, read from its source.
    assert "math_environment.py:" in text and "'dapo_math_verify', 'hf_math_verify'" in text


def test_literal_type_lists_its_values() -> None:
    with pytest.raises(RecipeError) as exc:
        LoRA(enabled=True, dropout_position="middle")  # type: ignore[arg-type]
    assert "expected one of 'pre', 'post'" in _only_issue(exc)


def test_range_is_checked_where_the_field_is_declared() -> None:
    with pytest.raises(RecipeError) as exc:
        Cluster(num_nodes=0)
    assert _only_issue(exc) == "cluster.num_nodes = 0: must be >= 1"


def test_missing_required_key_is_named() -> None:
    with pytest.raises(RecipeError) as exc:
        MathEnvironment()
    assert _only_issue(exc) == "env.<name>.num_workers: required key is missing"


def test_all_problems_of_a_section_are_reported_together() -> None:
    with pytest.raises(RecipeError) as exc:
        VllmConfig(tensor_parallel_size="4", kv_cache_dtype="fp16", bogus=1)  # type: ignore
    paths = {i.path for i in exc.value.issues}
    assert "policy.generation.vllm_cfg.bogus" in paths
    assert "policy.generation.vllm_cfg.tensor_parallel_size" in paths
    assert "policy.generation.vllm_cfg.kv_cache_dtype" in paths
    assert "policy.generation.vllm_cfg.async_engine" in paths  # required, missing


def test_sections_are_frozen_and_lists_become_tuples() -> None:
    m = SchedulerMilestones(milestones=[50, 100])  # type: ignore[arg-type]
    assert m.milestones == (50, 100)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        m.milestones = (1,)  # type: ignore[misc]


def test_evolve_rechecks_the_new_value() -> None:
    d = DTensor(enabled=False)
    with pytest.raises(RecipeError):
        attrs.evolve(d, tensor_parallel_size=0)


def test_alias_field_keeps_the_framework_key_in_errors() -> None:
    with pytest.raises(RecipeError) as exc:
        DTensor(enabled=False, v2="yes")  # type: ignore[arg-type]
    assert _only_issue(exc).startswith("policy.dtensor_cfg._v2 = 'yes'")


def test_megatron_requires_its_layout_keys() -> None:
    with pytest.raises(RecipeError) as exc:
        Megatron(enabled=True)
    paths = {i.path for i in exc.value.issues}
    assert "policy.megatron_cfg.tensor_model_parallel_size" in paths


def test_a_sections_repr_eq_and_hash_behave_as_attrs_would() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        size: int = required()
        name: str | None | Unset = optional()

    @attrs.frozen(kw_only=True)
    class Compiled:
        size: int
        name: str | None | Unset = attrs.field(default=UNSET)

    lean, twin = Lean(size=2, name="a"), Lean(size=2, name="a")
    assert repr(lean) == repr(Compiled(size=2, name="a")).replace("Compiled", "Lean")
    assert lean == twin and hash(lean) == hash(twin) and lean != Lean(size=3, name="a")
    assert lean != Compiled(size=2, name="a")  # type: ignore[comparison-overlap]
    assert len({lean, twin}) == 1


def test_a_sections_init_is_attrs_own() -> None:
    seen: list[tuple[str, int]] = []

    def note(instance: Any, attribute: Any, value: int) -> None:
        # attrs runs each validator once every field is set, in field order.
        assert instance.first is not None and instance.second is not None
        seen.append((attribute.name, value))

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        first: int = attrs.field(validator=note)
        second: int = attrs.field(default=7, validator=note)
        many: dict[str, int] = attrs.field(factory=dict)
        derived_from_self: int = attrs.field(
            default=attrs.Factory(lambda self: self.first * 10, takes_self=True)
        )

    lean = Lean(first=1)
    assert (lean.first, lean.second, lean.many, lean.derived_from_self) == (1, 7, {}, 10)
    assert seen == [("first", 1), ("second", 7)]
    assert Lean(first=1).many is not lean.many  # a fresh dict each time
    assert attrs.evolve(lean, second=8).second == 8 and seen[-1] == ("second", 8)
    with attrs.validators.disabled():
        Lean(first=2)
    assert seen[-1] == ("second", 8)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        lean.first = 2  # type: ignore[misc]


def test_post_init_runs_and_computed_fields_are_not_keywords() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        size: int = required()
        double: int = attrs.field(init=False)

        def __attrs_post_init__(self) -> None:
            object.__setattr__(self, "double", 2 * self.size)

    assert Lean(size=3).double == 6
    with pytest.raises(RecipeError) as exc:
        Lean(size=3, double=5)  # type: ignore[call-arg]
    assert _only_issue(exc) == "demo.double: is computed by the section, not set"


def test_field_level_eq_repr_and_hash_are_honoured() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        size: int = required()
        note: str = attrs.field(default="", eq=False, repr=False)
        shown: int = attrs.field(default=1, repr=lambda v: f"<{v}>")

    @attrs.frozen(kw_only=True)
    class Compiled:
        size: int
        note: str = attrs.field(default="", eq=False, repr=False)
        shown: int = attrs.field(default=1, repr=lambda v: f"<{v}>")

    a, b = Lean(size=1, note="x"), Lean(size=1, note="y")
    assert a == b and hash(a) == hash(b)
    assert repr(a) == repr(Compiled(size=1, note="x")).replace("Compiled", "Lean")


def test_attrs_own_validators_are_answered_with_the_key_path() -> None:
    @section("demo.part")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Lean:
        mode: str = attrs.field(default="a", validator=attrs.validators.in_(("a", "b")))

    with pytest.raises(RecipeError) as exc:
        Lean(mode="c")
    assert _only_issue(exc).startswith("demo.part.mode = 'c': ")


def test_a_subclass_without_section_is_refused_not_built_as_its_parent() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Parent:
        y: int = 1

    @frozen_section(kw_only=True, repr=False, eq=False)
    class Child(Parent):
        y: int = 5

    with pytest.raises(TypeError, match="declare it with @section"):
        Child()

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Declared(Parent):
        y: int = 5

    assert Declared().y == 5


def test_a_derived_section_keeps_its_bases_key_order() -> None:
    # A schema version states only what it changes; its keys still come out in the framework's
    # order: a re-declared key where the base had it, an added key after the one it names.
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Base:
        a: int = 1
        b: int = 2
        c: int = 3

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Version(Base):
        a: int | str = optional()  # type: ignore[assignment]  # a version may re-type a key
        a2: int = optional(after="a")
        a3: int = optional()
        d: int = optional(after="c")

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Appended(Base):
        z: int = optional()

    assert [f.name for f in attrs.fields(Version)] == ["a", "a2", "a3", "b", "c", "d"]
    assert [f.name for f in attrs.fields(Appended)] == ["a", "b", "c", "z"]
    assert Version(a="x", b=5).b == 5


def test_after_must_name_a_key_of_the_section() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Base:
        a: int = 1

    with pytest.raises(TypeError, match=r"after='nope' names no key of the section \(keys: a\)"):

        @frozen_section(kw_only=True, repr=False, eq=False)
        class Version(Base):
            b: int = optional(after="nope")

    with pytest.raises(TypeError, match="derive from none"):

        @frozen_section(kw_only=True, repr=False, eq=False)
        class Alone:
            b: int = optional(after="a")


@pytest.mark.parametrize(
    "field",
    [attrs.field(converter=int), attrs.field(alias="other")],
    ids=["converter", "alias"],
)
def test_a_section_refuses_what_its_init_would_not_do(field: Any) -> None:
    refused = r"Odd: a section checks each value.*; size would need"
    with pytest.raises(TypeError, match=refused):

        @section("demo")
        @frozen_section(kw_only=True, repr=False, eq=False)
        class Odd:
            size: int = field


# --- every section in the tree, against plain attrs ------------------------------------------


def _all_section_classes() -> list[type]:
    import gc
    import importlib
    import pkgutil

    import recipekit
    from recipekit.review.discover import discover_stages

    for info in pkgutil.walk_packages(recipekit.__path__, "recipekit."):
        if not info.name.endswith("_test") and ".cli" not in info.name:
            importlib.import_module(info.name)
    discover_stages(Path(__file__).resolve().parents[3])
    gc.collect()
    found: dict[type, None] = {}
    todo: list[type] = [object]
    while todo:
        parent = todo.pop()
        subs: list[type] = type.__subclasses__(parent)
        for sub in subs:
            if sub not in found:
                found[sub] = None
                todo.append(sub)
    # attrs makes a slotted class anew; the class it started from lingers among __subclasses__
    # until collected, and is no class of the tree: only classes attrs made count.
    return [c for c in found if is_section(c) and "__attrs_attrs__" in c.__dict__]


SECTIONS = _all_section_classes()


def _twin(cls: type) -> type:
    """The same fields as a plain attrs.frozen class: attrs' own __init__, __repr__, __eq__."""
    fields = {
        f.name: attrs.field(
            default=f.default,
            validator=f.validator,
            eq=f.eq,
            repr=f.repr,
            hash=f.hash,
            init=f.init,
            kw_only=True,
        )
        for f in attrs.fields(cls)
    }
    return attrs.make_class(cls.__name__, fields, frozen=True, kw_only=True)


def _instances() -> dict[type, list[Any]]:
    from recipekit.review.discover import discover_stages

    by_class: dict[type, list[Any]] = {}

    def walk(value: Any) -> None:
        if is_section(value):
            by_class.setdefault(type(value), []).append(value)
            for f in attrs.fields(type(value)):
                walk(getattr(value, f.name))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    for ref in discover_stages(Path(__file__).resolve().parents[3]):
        walk(ref.stage.config)
    return by_class


INSTANCES = _instances()


# --- values generated from each section's own field types -------------------------------------
# The stages hold values for only some classes (none for SFT, DPO, RM, PPO, distillation or eval
# master configs, nor the *Examples sections); these are made for every class from its fields'
# types, each value one the class accepts, a default replaced where another value is taken.

_INTS = (2, 1, 4, 0, 8, 64)
_FLOATS = (0.5, 1.0, 0.0, 1e-5)
_STRS = ("a", "/abs/path", "a.b.c_config", "01:00:00", "lora", "fp32", "bf16", "alltoall")


def _strings_of(validator: Any) -> list[str]:
    """The strings a validator closes over (``one_of``'s allowed values), to try as values."""
    found: list[str] = []
    inner = getattr(validator, "_validators", None) or getattr(validator, "validators", None)
    for v in inner or ([validator] if validator is not None else []):
        if hasattr(v, "allowed"):  # validators.allowed_at: the values the pin accepts
            found += v.allowed.values
        for cell in getattr(v, "__closure__", None) or ():
            value = cell.cell_contents
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, (tuple, list, set, frozenset)):
                found += sorted(x for x in value if isinstance(x, str))
    return found


def _is_literal(tp: Any) -> bool:
    from typing import Literal, get_origin

    origin: Any = get_origin(tp)
    return origin is Literal


def _candidates(tp: Any, validator: Any = None, depth: int = 0) -> list[Any]:
    """Values of type ``tp``, the likeliest to pass the field's validators first."""
    import types
    import typing
    from typing import Literal, get_args, get_origin

    origin: Any = get_origin(tp)
    if tp is Any or tp is object:
        return ["a", 1]
    if origin in (typing.Union, types.UnionType):
        # Plain types first, then the markers and null, whose values are one each.
        members = sorted(get_args(tp), key=lambda t: t is type(None) or _is_literal(t))
        return [v for m in members for v in _candidates(m, validator, depth)]
    if origin is Literal:
        return list(get_args(tp))
    if tp is type(None):
        return [None]
    if tp is bool:
        return [True, False]
    if tp is int:
        return list(_INTS)
    if tp is float:
        return list(_FLOATS)
    if tp is str:
        return [*_strings_of(validator), *_STRS]
    if origin is tuple:
        items = _candidates(get_args(tp)[0], None, depth + 1) if get_args(tp) else [1]
        return [tuple(items[:1]), ()]
    if origin is dict or tp is dict:
        return [{}, {"k": "a"}]
    if isinstance(tp, type) and is_section(tp):
        made = _generated(tp, depth + 1) if depth < 6 else None
        return [] if made is None else [tp(**made)]
    return []


def _refused_at(cls: type, kwargs: dict[str, Any], name: str) -> bool:
    """Whether building ``cls`` with ``kwargs`` refuses the key ``name`` (other keys, still
    missing, may be refused)."""
    from recipekit.sections import SectionError, field_of

    try:
        cls(**kwargs)
    except SectionError as exc:
        return any(field_of(cls, i.path.split(".")[0]) == name for i in exc.relative)
    except (TypeError, ValueError):
        return True
    return False


_GENERATED: dict[type, dict[str, Any] | None] = {}


def _generated(cls: type, depth: int = 0) -> dict[str, Any] | None:
    """Keyword values ``cls`` accepts: every required key, and every other key set to a value
    other than its default where the class takes one; None where none are found."""
    if cls in _GENERATED:
        return _GENERATED[cls]
    _GENERATED[cls] = None  # a section nested in itself gets no value
    fields = [f for f in attrs.fields(cls) if f.init]
    # What a stage holds, last: a value only a registry knows (an evaluation task's name).
    held = {f.name: [getattr(o, f.name) for o in INSTANCES.get(cls, [])[:1]] for f in fields}
    kwargs: dict[str, Any] = {}
    for f in fields:
        if f.default is not attrs.NOTHING:
            continue
        for value in [*_candidates(f.type, f.validator, depth), *held[f.name]]:
            if not _refused_at(cls, {**kwargs, f.name: value}, f.name):
                kwargs[f.name] = value
                break
        else:
            return None
    # attrs' validators run only once every required key is there: choose again with all.
    for f in fields:
        if f.default is attrs.NOTHING and _refused_at(cls, kwargs, f.name):
            for value in [*_candidates(f.type, f.validator, depth), *held[f.name]]:
                if not _refused_at(cls, {**kwargs, f.name: value}, f.name):
                    kwargs[f.name] = value
                    break
    for f in fields:
        if f.default is attrs.NOTHING:
            continue
        default = f.default.factory() if isinstance(f.default, attrs.Factory) else f.default  # type: ignore[arg-type]
        for value in [*_candidates(f.type, f.validator, depth), *held[f.name]]:
            if value == default and type(value) is type(default):
                continue
            if not _refused_at(cls, {**kwargs, f.name: value}, f.name):
                kwargs[f.name] = value
                break
    try:
        cls(**kwargs)
    except (RecipeError, TypeError, ValueError):
        return None
    _GENERATED[cls] = kwargs
    return kwargs


def _hash(value: Any) -> int | str:
    try:
        return hash(value)
    except TypeError:  # a dict-valued field, in attrs' classes as in ours
        return "unhashable"


def test_every_subclass_of_a_section_is_declared_a_section() -> None:
    assert len(SECTIONS) > 100
    undeclared = [
        f"{c.__module__}.{c.__qualname__}" for c in SECTIONS if SECTION_PATH not in c.__dict__
    ]
    assert not undeclared


def test_every_section_gets_generated_values() -> None:
    assert not [c.__qualname__ for c in SECTIONS if _generated(c) is None]


def _outcome(make: Any) -> tuple[Any, ...]:
    """What building gives: the object's repr and values, or the issues it is refused with."""
    try:
        made = make()
    except RecipeError as exc:
        return ("refused", sorted(i.render() for i in exc.issues))
    return ("made", repr(made), [getattr(made, f.name) for f in attrs.fields(type(made))])


def _changed_fields(cls: type) -> list[attrs.Attribute[Any]]:
    """The fields whose change the test makes both ways: every field the section states itself;
    of those added from its upstream class, one per kind (type, validator, eq/repr/hash, name
    or alias), since one generator makes them all from their type's text and evolve treats a
    field by its kind, never its name. A section with cross-key checks
    (``__attrs_post_init__``) has every field changed: those may read any key by name."""
    fields = [f for f in attrs.fields(cls) if f.init]
    if "__attrs_post_init__" in {n for c in cls.__mro__ for n in c.__dict__}:
        return fields
    seen: set[tuple[str, ...]] = set()
    out = []
    for f in fields:
        added = upstream_key(f)
        if added is not None:
            kind = (
                repr(f.type),
                repr(f.validator),
                str((f.eq, f.repr, f.hash)),
                str(added == f.name),
            )
            if kind in seen:
                continue
            seen.add(kind)
        out.append(f)
    return out


def test_changed_fields_keep_each_kind_and_every_stated_field() -> None:
    from recipekit.megatron_bridge.schema import Model

    fields = [f for f in attrs.fields(Model) if f.init]
    changed = _changed_fields(Model)
    assert len(changed) < len(fields) / 4  # hundreds of provider keys, a few dozen kinds
    assert {f.name for f in fields if upstream_key(f) is None} <= {f.name for f in changed}


@pytest.mark.parametrize("cls", SECTIONS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_section_builds_compares_and_shows_as_plain_attrs(cls: type) -> None:
    from recipekit.sections import evolve

    twin = _twin(cls)
    values = [
        {f.name: getattr(obj, f.name) for f in attrs.fields(cls) if f.init}
        for obj in INSTANCES.get(cls, [])
    ]
    generated = _generated(cls)
    assert generated is not None
    values.append(generated)
    if all(f.default is not attrs.NOTHING for f in attrs.fields(cls) if f.init):
        values.append({})  # every default
    for kwargs in values:
        ours, theirs = cls(**kwargs), twin(**kwargs)
        for f in attrs.fields(cls):
            assert getattr(ours, f.name) == getattr(theirs, f.name), f.name
        assert repr(ours) == repr(theirs)
        again = cls(**kwargs)
        assert ours == again and _hash(ours) == _hash(again)
        assert (_hash(ours) == "unhashable") is (_hash(theirs) == "unhashable")
        assert (twin(**kwargs) == theirs) is (again == ours)
        assert attrs.evolve(ours) == ours and evolve(ours) == ours
        for f in _changed_fields(cls):
            # sections.evolve checks only the changed key's type; attrs.evolve builds the
            # section anew, checking every key: both must give the same section, or refuse
            # with the same issues (a value of the wrong type among them).
            for value in [*_candidates(f.type, f.validator)[:3], object()]:
                change = {f.name: value}
                fast = _outcome(lambda o=ours, c=change: evolve(o, **c))
                full = _outcome(lambda o=ours, c=change: attrs.evolve(o, **c))
                assert fast == full, (f.name, value)
                if fast[0] == "made":
                    plain = attrs.evolve(theirs, **{f.name: value})
                    assert fast[1] == repr(plain), f.name
                    changed = evolve(ours, **{f.name: value})
                    assert (changed == ours) is (plain == theirs), f.name


def test_a_version_drops_the_keys_it_removes_and_moves_a_key_its_after_names() -> None:
    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Base:
        a: int = 1
        gone: bool = False
        b: int = 2
        c: int = 3

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Version(Base):
        removed_keys: ClassVar[tuple[str, ...]] = ("gone",)
        c: int | None = optional(after="a")  # type: ignore[assignment]  # re-typed and moved

    @section("demo")
    @frozen_section(kw_only=True, repr=False, eq=False)
    class Derived(Version):  # attrs collects every class's fields: removed stays removed
        b: int = 5

    assert [f.name for f in attrs.fields(Version)] == ["a", "c", "b"]
    assert [f.name for f in attrs.fields(Derived)] == ["a", "c", "b"]
    assert Derived().b == 5
    with pytest.raises(RecipeError, match="gone"):
        Version(gone=True)  # to mypy's attrs plugin it is still inherited
    with pytest.raises(TypeError, match="removed_keys names no key of Base: nope"):

        @frozen_section(kw_only=True, repr=False, eq=False)
        class Wrong(Base):
            removed_keys: ClassVar[tuple[str, ...]] = ("nope",)


# --- a key a section states by hand adds to what upstream declares ---------------------------


def _plain_fields(cls: type) -> list[tuple[str, str]]:
    """The fields ``cls`` itself states as ``name: type = required()`` or ``optional()``: no
    check, no place and no comment of their own, written out for their type and required-ness
    alone."""
    import ast
    import inspect
    import textwrap

    lines = textwrap.dedent(inspect.getsource(cls)).splitlines()
    tree = ast.parse("\n".join(lines))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    return [
        (node.target.id, node.value.func.id)
        for node in body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id in ("required", "optional")
        and not node.value.args
        and not node.value.keywords
        and not lines[node.lineno - 2].lstrip().startswith("#")
    ]


def test_a_key_a_section_states_adds_to_what_upstream_declares() -> None:
    """A section states a key its upstream class declares only to add something: a check, a
    place, a derivation, another type or required-ness than upstream's or than a section it
    derives from, or a comment saying why recipekit sets it. A key stated exactly as upstream
    declares it is the copy by hand that completion from upstream replaces (mypy reads the
    completed keys from ``generated/section_keys.py``): it is refused here."""
    from recipekit.sections import ALIASES, UPSTREAM, _predicate, _union_members
    from recipekit.upstream.declared import members

    copies = []
    for cls in SECTIONS:
        upstream = getattr(cls, UPSTREAM, None)
        if upstream is None:
            continue
        declared = {k: s for d in reversed(members(upstream)) for k, s in d.keys.items()}
        by_name = attrs.fields_dict(cls)
        for name, kind in _plain_fields(cls):
            spec = declared.get(getattr(cls, ALIASES, {}).get(name, name))
            field = by_name.get(name)
            if spec is None or field is None or spec.nested:
                continue
            stated = [t for t in _union_members(field.type) if t is not Unset]
            held = stated[0] if len(stated) == 1 else _union_of(stated)
            retypes = any(
                attrs.has(base)
                and name in attrs.fields_dict(base)
                and attrs.fields_dict(base)[name].type != field.type
                for base in cls.__mro__[1:]
            )
            if (
                not retypes
                and not _names_a_section_or_derivation(held)
                and (kind == "required") == spec.required
                and _predicate(held)[1] == _predicate(spec.type)[1]
            ):
                copies.append(f"{cls.__module__}.{cls.__name__}.{name}")
    assert copies == []


def _names_a_section_or_derivation(tp: Any) -> bool:
    """Whether ``tp`` holds a section class (``dict[str, MathEnvironment]``) or DERIVED: a
    stated type that says more than upstream's, whatever value it checks."""
    if isinstance(tp, type) and attrs.has(tp):
        return True
    return DERIVED in typing.get_args(tp) or any(
        _names_a_section_or_derivation(arg) for arg in typing.get_args(tp)
    )


def _union_of(types: list[Any]) -> Any:
    import functools
    import operator

    return functools.reduce(operator.or_, types)
