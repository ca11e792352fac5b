"""The architecture lint on examples of what it must catch and what it must let through."""

from __future__ import annotations

from recipekit.images.arch_check import check_text

X86_WHEEL = (
    "https://files.pythonhosted.org/packages/xx/flash_attn-2.7.4-cp312-cp312-linux_x86_64.whl"
)


def _kinds(text: str) -> list[tuple[str, str]]:
    return [(f.kind, f.arch) for f in check_text("recipes/x.py", text)]


def test_a_one_architecture_wheel_url_is_refused() -> None:
    assert _kinds(f'EXTRA = "{X86_WHEEL}"\n') == [("wheel", "x86_64")]


def test_the_wheel_is_accepted_when_its_aarch64_twin_is_named_too() -> None:
    twin = X86_WHEEL.replace("x86_64", "aarch64")
    assert _kinds(f'WHEELS = ["{X86_WHEEL}", "{twin}"]\n') == []


def test_amd64_only_debian_packages_platform_pins_and_apt_sources_are_refused() -> None:
    assert _kinds("apt-get install ./nsight-systems_2024.1_amd64.deb\n") == [
        ("debian package", "amd64")
    ]
    assert _kinds("skopeo copy --platform linux/arm64 docker://x\n") == [("platform pin", "arm64")]
    assert _kinds("deb [arch=amd64] http://example.org/debian bookworm main\n") == [
        ("apt architecture", "amd64")
    ]
    assert _kinds("URL = 'https://example.org/dl/tool-linux-amd64.tar.gz'\n") == [("url", "amd64")]


def test_words_that_merely_mention_an_architecture_and_allowed_lines_pass() -> None:
    text = (
        "cpu_arch=CpuArch.X86_64  # x86_64 nodes\n"
        '"platform": "linux/amd64"\n'
        "https://example.org/docs/arm64ec-notes\n"
        f'LOCAL = "{X86_WHEEL}"  # arch-lint: allow (the H100 eval box only)\n'
    )
    assert _kinds(text) == []
