"""Running a pinned function's program (``tools/guard_reader.program``) on a config's values.

A guard of Megatron-Core's ``TransformerConfig.__post_init__`` often reads a value the method
made first (``ffn_hidden_size`` is ``4 * hidden_size`` where none is given). The replay runs the
method's assignments and branches on the values it knows, and reports each guard it reaches
that fails, with the values it read. What it cannot tell (a name with no value, a call it does
not evaluate, a branch it cannot decide) it forgets: a guard that reads a forgotten name is not
evaluated, and a branch it cannot decide forgets whatever either side changes. A branch that
may return leaves the rest of its function undecided: its later guards are not evaluated and
its later assignments forget.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from recipekit.upstream import conditions

# What a "forget" step names to forget every value (``tools/guard_reader.program``).
EVERYTHING = "*"


@functools.cache
def pinned_source(table: Path) -> dict[str, Any]:
    """The one pinned source's entry (its ``classes``, and whatever else its generator writes
    beside them) of a generated table of config-class programs (``tools/config_programs.py``),
    read once per process."""
    (source,) = json.loads(table.read_text(encoding="utf-8"))["sources"].values()
    found: dict[str, Any] = source
    return found


def programs(table: Path) -> dict[str, dict[str, Any]]:
    """Class name -> its entry (defaults, program, ...) in a generated table of one pinned
    source's config classes."""
    classes: dict[str, dict[str, Any]] = pinned_source(table)["classes"]
    return classes


@functools.cache
def constant_defaults(table: Path, name: str) -> dict[str, Any]:
    """The defaults of the class ``name`` in ``table`` that are constants, evaluated (shared
    between replays, which never change them)."""
    return conditions.bound(programs(table)[name]["defaults"], {})


@attrs.frozen
class Reached:
    """A guard that fails, or a warning that is issued, and the values when the replay got
    there: ``step`` is the program's located step (``described`` reads it)."""

    step: Sequence[Any]
    values: dict[str, Any]


class _Return(Exception):
    """The function returned: ``value`` where the replay could tell it, and the config key
    it is the value of (``origin``: ``return vllm_cfg.get("async_engine", False)``), if any."""

    def __init__(self, known: bool = False, value: Any = None, origin: str | None = None) -> None:
        super().__init__()
        self.known, self.value, self.origin = known, value, origin


@attrs.define
class _Frame:
    """One function's run: ``decided`` turns False once a branch that may have returned could
    not be decided, from when on the rest of the function may not run at all; ``quiet``: a
    call that may not run at all (a call in the second operand of an ``and``), whose guards
    say nothing and whose changes to what its caller holds are unknown."""

    decided: bool = True
    quiet: bool = False
    # The tests of the branches it is in (innermost last): a constant it returns there is
    # about the key the innermost one read (``if not use_gym: return False``).
    because: list[str] = attrs.Factory(list)


@attrs.frozen
class _Run:
    """What one replay shares between its functions: what it found, the functions a program
    may invoke (``tools/function_programs.py``), and the values it was given, which every
    function it invokes reads as well (a runner's master config)."""

    found: list[Reached]
    functions: Mapping[str, Any]
    given: Mapping[str, Any]
    depth: int = 0


# How deep invoked functions nest before the replay stops following them.
_DEPTH = 12


def replay(
    steps: Sequence[Any],
    values: dict[str, Any],
    functions: Mapping[str, Any] | None = None,
) -> list[Reached]:
    """Every failing guard and issued warning of ``steps`` on ``values``, in the order the
    function reaches them; ``functions``: qualified name -> the program of each function an
    ``invoke`` step names."""
    state = dict(values)
    found: list[Reached] = []
    _function(steps, state, _Run(found, functions or {}, values), _Frame())
    return found


def _function(steps: Sequence[Any], state: dict[str, Any], run: _Run, frame: _Frame) -> _Return:
    try:
        _run(steps, state, run, frame)
    except _Return as returned:
        return returned
    # The end of the function returns None, unless a return the replay could not decide on
    # may have come first.
    return _Return(frame.decided, None)


def _forget(state: dict[str, Any], names: Sequence[str]) -> None:
    if EVERYTHING in names:
        state.clear()
    for name in names:
        state.pop(name, None)


def _changed(text: str, state: dict[str, Any]) -> None:
    """The value ``text`` reads (a name, or a chain of attributes and constant subscripts)
    may have been changed by code the replay does not follow: unknown from now on, wherever
    the function holds it. ``x[...]``: one of the values ``x`` holds, which one unknown."""
    if text.endswith("[...]"):
        known, owner = conditions.evaluated(text[: -len("[...]")], state)
        if known and isinstance(owner, conditions.Tracked):
            owner.poison_values()
            return
        text = text[: -len("[...]")]
    known, value = conditions.evaluated(text, state)
    if known and isinstance(value, conditions.Tracked):
        value.poison()
        return
    if known and isinstance(value, conditions.Built):
        _released(value)
        return
    if known and isinstance(value, conditions.IMMUTABLE):
        return  # no code can change it
    # What changes is inside the nearest owner the replay holds: its key there is unknown.
    parent, key = conditions.split_chain(text)
    while parent is not None:
        known, owner = conditions.evaluated(parent, state)
        if known and isinstance(owner, conditions.Tracked):
            owner.forget(key)
            return
        if known and isinstance(owner, conditions.Built):
            _escaped(owner.pop(key, None))
            return
        if known:
            break
        parent, key = conditions.split_chain(parent)
    read = conditions.names(text)
    root = read[0] if read else None
    if root is not None:
        value = state.pop(root, None)
        if isinstance(value, conditions.Tracked):
            value.poison()
        elif isinstance(value, conditions.Built):
            _released(value)


def _store(
    step: Sequence[Any],
    state: dict[str, Any],
    exact: bool,
    run: _Run | None = None,
    frame: _Frame | None = None,
) -> None:
    """``["store", container, key, value, roots]``: the function sets ``container[key]`` (or
    the attribute); ``exact``: the replay knows it runs (``run`` and ``frame``: where it
    does), else its value is unknown."""
    _, container, key, value, roots = step[:5]
    if exact and run is not None and frame is not None:
        ok, stored = _evaluated(value, state, step, run, frame)
        known, owner = _evaluated(container, state, step, run, frame)
    else:
        ok, stored = (False, None) if value is None else conditions.evaluated(value, state)
        known, owner = (
            (False, None) if container is None else conditions.evaluated(container, state)
        )
    if known and isinstance(owner, conditions.Tracked):
        if ok and exact:
            owner.put(key, stored)
        else:
            owner.forget(key)
    elif known and isinstance(owner, conditions.Built):
        owner.origins.pop(key, None)
        if ok and exact:
            owner[key] = stored
            origin = _origin(value, stored, state)
            if origin:
                owner.origins[key] = origin
        else:
            # It may hold either there now, which the replay cannot tell: both are out of its
            # sight from now on.
            _escaped(owner.pop(key, None))
            _escaped(stored)
    else:
        for changed in [container] if container is not None else roots:
            _changed(changed, state)
        # A config mapping kept in an object the replay does not hold (self.config = config)
        # may be changed through it later, by code the replay does not follow.
        _escaped(stored)


def _released(built: conditions.Built) -> None:
    """An object a replayed ``__init__`` built leaves what the replay follows (handed on, or
    returned to a caller that does not hold it): every config mapping it holds may change
    from now on, and none of its attributes is known."""
    _escaped(dict(built))
    built.clear()
    built.origins.clear()


def _escaped(value: Any) -> None:
    """Every config mapping ``value`` is or holds may change from now on."""
    if isinstance(value, conditions.Tracked):
        value.poison()
    elif isinstance(value, list | tuple | set | dict):
        for each in dict.values(value) if isinstance(value, dict) else value:
            _escaped(each)


def _unsure(steps: Sequence[Any], state: dict[str, Any], run: _Run | None = None) -> None:
    """What steps that may or may not run change in what the function holds: every value they
    store or hand on is unknown (their own names, the caller's ``forget``). A function they
    invoke that ``run`` holds runs quietly on the values (its checks say nothing, and what it
    stores is unknown): what it hands on is unknown only where it may change it."""
    for step in steps:
        kind = step[0]
        if kind == "store":
            _store(step, state, exact=False)
        elif kind == "mutate":
            for text in step[1]:
                _changed(text, state)
        elif kind == "invoke":
            if run is not None and step[1] in run.functions and run.depth < _DEPTH:
                _invoke([*step[:4], True, *step[5:]], state, run, _Frame(quiet=True))
            else:
                for _, argument in step[2]:
                    if argument is not None:
                        _changed(argument, state)
            if step[3] is not None:
                state.pop(step[3], None)
        elif kind == "if":
            _forget(state, step[4])
            _unsure(step[2], state, run)
            _unsure(step[3], state, run)
        elif kind == "set":
            state.pop(step[1], None)
        elif kind == "forget":
            _forget(state, step[1])


# Where a function's step ends with where it is (tools/function_programs.py): a key it reads may
# be missing there. The length of each such step.
_LOCATED = {"set": 4, "if": 7, "store": 6, "invoke": 6, "return": 3}


def _evaluated(
    text: str | None, state: dict[str, Any], step: Sequence[Any], run: _Run, frame: _Frame
) -> tuple[bool, Any]:
    """``conditions.evaluated``, and where evaluating it fails in a function (a located
    ``step``, which surely runs) as it would there (``conditions.Failure``: a key the config
    lacks, None ordered), a failure found there: ``["fails", error, what, where]``."""
    if text is None:
        return False, None
    known, value, failure = conditions.attempt(text, state)
    if failure and frame.decided and not frame.quiet and len(step) == _LOCATED.get(step[0]):
        run.found.append(Reached(["fails", *failure, step[-1]], _snapshot(state)))
    return known, value


def _run(steps: Sequence[Any], state: dict[str, Any], run: _Run, frame: _Frame) -> None:
    for step in steps:
        kind = step[0]
        if kind == "set":
            known, value = _evaluated(step[2], state, step, run, frame)
            if known and frame.decided:
                state[step[1]] = value
                _originate(state, step[1], step[2], value)
            else:
                state.pop(step[1], None)
        elif kind == "forget":
            _forget(state, step[1])
        elif kind == "if":
            _, test, then, orelse, changed, exits = step[:6]
            taken = None
            if frame.decided:
                known, value = _evaluated(test, state, step, run, frame)
                taken = bool(value) if known else None
            if taken is None:
                _forget(state, changed)
                _unsure(then, state, run)
                _unsure(orelse, state, run)
                if exits:
                    frame.decided = False
            else:
                frame.because.append(test)
                try:
                    _run(then if taken else orelse, state, run, frame)
                finally:
                    frame.because.pop()
        elif kind == "guard":
            if frame.decided and not frame.quiet and step[1] is not None:
                known, failing, failure = conditions.attempt(step[1], state)
                if known and failing:
                    run.found.append(Reached(step, _snapshot(state)))
                elif failure:
                    run.found.append(Reached(["fails", *failure, step[3]], _snapshot(state)))
        elif kind == "warn":
            if frame.decided and not frame.quiet:
                run.found.append(Reached(step, _snapshot(state)))
        elif kind == "call":
            if frame.decided:
                _function(step[1], state, run, frame)
            else:
                _forget(state, [EVERYTHING])
        elif kind == "invoke":
            _invoke(step, state, run, frame)
        elif kind == "store":
            _store(step, state, exact=frame.decided and not frame.quiet, run=run, frame=frame)
        elif kind == "mutate":
            for text in step[1]:
                _changed(text, state)
        elif kind == "return":
            if frame.decided:
                # ["return"] in a config class's program; ["return", value | None] in a
                # function's, None where the replay cannot evaluate the value.
                value = step[1] if len(step) > 1 else "None"
                known, returned = _evaluated(value, state, step, run, frame)
                if not known and value is not None and value.startswith("("):
                    # A tuple some of whose items it can tell: those, the others UNTOLD.
                    known, returned = _items(value, state)
                origin = _origin(value, returned, state) if known else None
                if known and origin is None and frame.because and value in _CONSTANTS:
                    origin = _decided_by(frame.because[-1], state)
                raise _Return(known, returned, origin)


def _items(text: str, state: dict[str, Any]) -> tuple[bool, Any]:
    """A tuple expression's items, each where the replay can tell it, else ``UNTOLD``
    (unpacked by ``name = result[i]``); unknown where it can tell none."""
    items = conditions.tuple_items(text)
    if items is None:
        return False, None
    found = []
    for item in items:  # a failure among them was found where the whole was evaluated
        known, value = conditions.evaluated(item, state)
        found.append(value if known else conditions.UNTOLD)
    told = any(value is not conditions.UNTOLD for value in found)
    return told, tuple(found) if told else None


def _snapshot(state: dict[str, Any]) -> dict[str, Any]:
    """The values when a check is reached, as they are then: a function's mappings may change
    after (``conditions.Tracked``)."""
    if not any(isinstance(v, conditions.Tracked) for v in state.values()):
        return dict(state)
    return copy.deepcopy(state)


def _originate(
    state: dict[str, Any], name: str, text: str, value: Any, read: dict[str, Any] | None = None
) -> None:
    """Where a function sets a name (or binds a parameter) from a chain of a config mapping's
    keys, evaluated in ``read`` (default: ``state``), the key it read
    (``conditions.ORIGINS``): a refusal that reads the name is about that key."""
    origins = state.get(conditions.ORIGINS)
    if origins is not None:
        origins.pop(name, None)
    key = _origin(text, value, state if read is None else read)
    if key:
        state.setdefault(conditions.ORIGINS, {})[name] = key


# What a function returns that says which way a test went.
_CONSTANTS = frozenset({"True", "False", "None"})


def _decided_by(test: str, state: dict[str, Any]) -> str | None:
    """The config key the test of a branch read first, if it read one."""
    for chain in conditions.read(test, True):
        key = _origin(chain, None, state)
        if key:
            return key
    return None


def _origin(text: str, value: Any, read: dict[str, Any]) -> str | None:
    """The config key whose value ``value`` (``text`` evaluated in ``read``) is, if it is
    one's: a chain of a config mapping's keys, or a name set from one."""
    if isinstance(value, conditions.Tracked):
        return None
    text = conditions.converted(text)
    if not conditions.reads_a_key(text):
        return conditions.member_key(text, read)
    return conditions.keyed(text, read)


def _invoke(step: Sequence[Any], state: dict[str, Any], run: _Run, frame: _Frame) -> None:
    """``["invoke", function, bindings, target, quiet]``: the function runs with each parameter
    bound to its argument's value (``bindings``: [parameter, the argument's text or None]); its
    return value is ``target``'s."""
    _, name, bindings, target, quiet = step[:5]
    program = run.functions.get(name)
    if not frame.decided or program is None or run.depth >= _DEPTH:
        _unsure([step], state, run)
        return
    own = dict(run.given)
    # A call that may not run (quiet) may not read its arguments either: no failure there.
    reading = _Frame(quiet=True) if quiet else frame
    for parameter, argument in bindings:
        known, value = _evaluated(argument, state, step, run, reading)
        if known:
            own[parameter] = value
            _originate(own, parameter, argument, value, state)
    built = None
    of_class = own.pop(conditions.CLASS, None)
    if name.endswith(".__init__") and "self" not in own:
        # The object it builds: held while it runs, released to its caller after. (A base's
        # __init__ called through super() builds the object its caller holds.)
        built = own["self"] = conditions.Built()
        built.cls = of_class
    inner = _Run(run.found, run.functions, run.given, run.depth + 1)
    returned = _function(program, own, inner, _Frame(quiet=frame.quiet or quiet))
    if built is not None:
        _released(built)
    if target is not None:
        if returned.known:
            state[target] = returned.value
        else:
            state.pop(target, None)
        # A result that is a config key's value names that key (``not _r0``: the key the
        # function returned).
        origins = state.get(conditions.ORIGINS)
        if origins is not None:
            origins.pop(target, None)
        if returned.known and returned.origin:
            state.setdefault(conditions.ORIGINS, {})[target] = returned.origin


def located(steps: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """Every guard and warning step of ``steps``, in the program's order."""
    for step in steps:
        if step[0] in ("guard", "warn"):
            yield step
        elif step[0] == "if":
            yield from located(step[2])
            yield from located(step[3])
        elif step[0] == "call":
            yield from located(step[1])


def described(step: Sequence[Any]) -> tuple[str, str, bool]:
    """(file:line, the condition on the way, whether a hand-written rule mirrors it) of a
    located guard (``["guard", failing, raised, where, shown, anchor, mirrored, live]``) or
    warning (``["warn", where, shown, anchor, mirrored, live]``): ``tools/config_programs.py``."""
    if step[0] == "guard":
        return step[3], step[4], step[6]
    if step[0] == "fails":  # ["fails", error, what, where]: the replay's own
        return step[3], step[2], False
    return step[1], step[2], step[4]
