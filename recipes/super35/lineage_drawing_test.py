"""The Super 3.5 lineage as Graphviz lays it out: every stage and artifact once, the recipe's
phases as bands in order, blocked stages and selected steps marked, few edge crossings."""

import xml.etree.ElementTree as ET

from recipekit.lineage.crossings import edge_crossings
from recipekit.lineage.drawing import draw_svg, folded_artifacts, layout_json
from recipes.super35.lineage import SUPER35

SVG = "{http://www.w3.org/2000/svg}"
# Set from the first layout that kept the recipe's phases as bands (dot 2.43, Debian bookworm):
# 39. Most of them are the teachers' ten outputs fanning into the three MOPD stages.
MAX_CROSSINGS = 39


def _groups(svg: str) -> dict[str, list[ET.Element]]:
    root = ET.fromstring(svg.encode())
    found: dict[str, list[ET.Element]] = {}
    for g in root.iter(f"{SVG}g"):
        if "id" in g.attrib:
            found.setdefault(g.attrib["id"], []).append(g)
    return found


def _texts(group: ET.Element) -> list[str]:
    return [t.text or "" for t in group.iter(f"{SVG}text")]


def test_every_stage_and_artifact_appears_once() -> None:
    svg = draw_svg(SUPER35)
    groups = _groups(svg)
    every_text = [t.text or "" for t in ET.fromstring(svg.encode()).iter(f"{SVG}text")]
    for step in SUPER35.steps():
        (group,) = groups[f"stage:{step.stage}"]
        assert step.stage in _texts(group)
    folded = folded_artifacts(SUPER35)
    assert folded, "the imported data one stage reads is folded into that stage"
    for name in SUPER35.artifacts():
        as_node = groups.get(f"artifact:{name}", [])
        # A folded artifact is one line of its reader's box ("data: NAME (imported)").
        as_line = [t for t in every_text if t.endswith(f": {name} (imported)")]
        assert len(as_node) + len(as_line) == 1, name
        if name in folded:
            (reader,) = groups[f"stage:{folded[name]}"]
            assert f"data: {name} (imported)" in _texts(reader)
        else:
            assert name in _texts(as_node[0])


def test_the_phases_are_bands_in_the_seeds_order() -> None:
    layout = layout_json(SUPER35)
    clusters = {o["name"]: o for o in layout["objects"] if o["name"].startswith("cluster_")}
    tops = []
    for number, phase in enumerate(SUPER35.phases):
        _, bottom, _, top = (float(v) for v in clusters[f"cluster_{number}"]["bb"].split(","))
        tops.append((phase.name, top, bottom))
    # Graphviz's y grows upwards: each band lies wholly below the one before it.
    for (_, _, above_bottom), (name, top, _) in zip(tops, tops[1:], strict=False):
        assert top <= above_bottom, f"{name} rises into the phase before it"


def test_blocked_stages_selected_steps_and_release_are_marked() -> None:
    groups = _groups(draw_svg(SUPER35))
    classes = {i: g[0].attrib.get("class", "").split() for i, g in groups.items()}
    blocked = {i[len("stage:") :] for i, c in classes.items() if "blocked" in c}
    assert blocked == {s.stage for s in SUPER35.steps() if s.blocked}
    (agentic,) = groups["stage:teacher-agentic"]
    assert "BLOCKED" in _texts(agentic)
    reason = [a for a in agentic.iter(f"{SVG}a") if "not public" in str(a.attrib)]
    assert reason, "the blocked reason is the box's tooltip"
    (rlvr,) = groups["artifact:super35-rl-rl" + "vr-model"]
    assert "selected: step 120" in _texts(rlvr)
    assert "release" in classes["artifact:super35-rl-mopd-phase2-model"]
    selected = [g for i, g in groups.items() if "selected" in classes[i] and "edge" in classes[i]]
    # RLVR step 120 feeds six teacher stages and two MOPD stages; the release feeds the export.
    assert len(selected) == 6 + 2 + 1
    assert all("step " in " ".join(_texts(g[0])) for g in selected)


def test_the_layout_has_few_edge_crossings() -> None:
    crossings = edge_crossings(layout_json(SUPER35))
    assert crossings <= MAX_CROSSINGS


def test_the_drawing_is_deterministic() -> None:
    assert draw_svg(SUPER35) == draw_svg(SUPER35)
