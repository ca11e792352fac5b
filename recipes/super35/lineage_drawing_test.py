"""The drawing of the Super 3.5 lineage shows every stage and artifact of the recipe."""

import xml.etree.ElementTree as ET

from recipekit.lineage.drawing import draw_svg
from recipes.super35.lineage import SUPER35

SVG = "{http://www.w3.org/2000/svg}"


def _groups(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg.encode())
    return {g.attrib["id"]: g for g in root.iter(f"{SVG}g") if "id" in g.attrib}


def test_every_stage_and_artifact_is_drawn_with_its_name() -> None:
    svg = draw_svg(SUPER35)
    groups = _groups(svg)
    for step in SUPER35.steps():
        group = groups[f"stage:{step.stage}"]
        texts = [t.text for t in group.iter(f"{SVG}text")]
        assert step.stage in texts
    for name in SUPER35.artifacts():
        texts = [t.text for t in groups[f"artifact:{name}"].iter(f"{SVG}text")]
        assert name in texts


def test_blocked_stages_selected_steps_and_release_are_marked() -> None:
    groups = _groups(draw_svg(SUPER35))
    classes = {i: g.attrib.get("class", "").split() for i, g in groups.items()}
    blocked = {i[len("stage:") :] for i, c in classes.items() if "blocked" in c}
    assert blocked == {s.stage for s in SUPER35.stages if s.blocked}
    reason = groups["stage:teacher-agentic"].find(f"{SVG}title")
    assert reason is not None and "not public" in (reason.text or "")
    rlvr = " ".join(t.text or "" for t in groups["artifact:super35-rl-rlvr-model"].iter())
    assert "selected: step 120" in rlvr
    release = groups["artifact:super35-rl-mopd-phase2-model"]
    assert "release" in release.attrib["class"].split()
    edges = groups["edges"]
    selected = [p for p in edges if "selected" in p.attrib.get("class", "")]
    # RLVR step 120 feeds six teacher stages and two MOPD stages; the release feeds the export.
    assert len(selected) == 6 + 2 + 1


def test_the_drawing_is_deterministic() -> None:
    assert draw_svg(SUPER35) == draw_svg(SUPER35)
