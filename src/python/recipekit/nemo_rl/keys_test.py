from __future__ import annotations

import pytest

from recipekit.markers import UNSET
from recipekit.nemo_rl.keys import UnknownKeyError, value_of
from recipekit.nemo_rl.schema_super_v3 import Tokenizer


def test_a_key_of_the_section_is_its_value() -> None:
    assert value_of(Tokenizer(name="org/model"), "name") == "org/model"
    assert value_of(Tokenizer(), "chat_template") is UNSET


def test_a_key_another_version_declares_is_the_absent_value() -> None:
    # policy.draft is super-v3.5-posttraining's; no key of super-v3's sections.
    assert value_of(Tokenizer(), "draft") is None
    assert value_of(Tokenizer(), "draft", UNSET) is UNSET
    assert value_of(None, "enabled") is None
    assert value_of(UNSET, "enabled", False) is False


@pytest.mark.parametrize("section", [Tokenizer(), None, UNSET, {}], ids=repr)
def test_a_key_no_pinned_version_declares_is_refused(section: object) -> None:
    with pytest.raises(UnknownKeyError, match="declares a key 'enabeld'.*did you mean 'enabled'"):
        value_of(section, "enabeld")
