"""Shippable artifacts of a stage, built without a container engine.

The way rules_oci, ko and ``crane append`` build images: a base pinned by digest (``lock``),
plus two deterministic layers (``layer``, ``artifacts``): the launcher Pex's dependencies, and
its sources with the rendered plan. They are written as an OCI image layout (``oci``) whose index
holds a ``linux/amd64`` and a ``linux/arm64`` manifest (``stage_image``). ``registry`` talks to
registries through skopeo; ``ship`` publishes and exports an enroot-style ``.sqsh``;
``arch_check`` is the architecture lint.
"""
