"""Shippable artifacts of a stage, built without a container engine.

The way rules_oci, ko and ``crane append`` build images: a base pinned by digest (``lock``),
plus one deterministic launcher layer (``layer``), written as an OCI image layout (``oci``)
whose index holds a ``linux/amd64`` and a ``linux/arm64`` manifest (``stage_image``).
``registry`` moves layouts with skopeo; ``squashfs`` writes an enroot-style ``.sqsh``.
"""
