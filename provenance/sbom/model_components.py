"""The models a run read as CycloneDX 1.6 `machine-learning-model` components.

One component per model directory (`provenance.sbom.models_read`): bom-ref `model:<key>`, the
name and (hub) group and commit as the run recorded them, and one nested component of type
`file` per file the run read, named by its path in the directory, with its SHA-256 (the
artifact's own bytes: CycloneDX `hashes`) and size; a model that is one file carries the
hash itself too. The engines' recorded facts of the load are properties named by their
manifest keys. The `modelCard` (model_card.py) is JSON only and goes in at `render`.

cyclonedx is imported by the caller (`provenance.sbom.build`), never at CLI start.
"""

from __future__ import annotations

from typing import Any

from provenance.model import join_key
from provenance.sbom.models_read import ModelRead


def _prop(name: str, value: Any):
    from cyclonedx.model import Property

    return Property(name=name, value=str(value))


def _sha256(hexd: str):
    from cyclonedx.model import HashAlgorithm, HashType

    return HashType(alg=HashAlgorithm.SHA_256, content=hexd)


def model_component(model: ModelRead):
    from cyclonedx.model.component import Component, ComponentType

    files = [
        Component(type=ComponentType.FILE, name=f.path, bom_ref=model.file_ref(f),
                  hashes=[_sha256(f.sha256)],
                  properties=[_prop("prov:manifest-key", join_key(["model", "files", f.key])),
                              *([_prop("prov:size", f.size)] if f.size is not None else [])])
        for f in model.files
    ]
    props = [_prop("prov:model:role", model.role), _prop("prov:model:name-from", model.name_from),
             _prop("prov:model:files", len(model.files))]
    for load in model.loads:
        props.append(_prop("prov:model:loaded-by", load.key))
        props += [_prop(f"prov:{load.key}.{k}", v) for k, v in load.facts.items()
                  if v not in ("none", "")]
    return Component(
        type=ComponentType.MACHINE_LEARNING_MODEL,
        name=model.name,
        group=model.group,
        version=model.version,
        purl=_purl(model),
        bom_ref=model.ref,
        hashes=[_sha256(model.files[0].sha256)] if len(model.files) == 1 else [],
        components=files,
        properties=props,
    )


def _purl(model: ModelRead):
    """`pkg:huggingface/<owner>/<name>@<commit>` for a hub model whose load recorded its
    commit; none for a local directory (its name is not an address)."""
    if model.group is None or model.version is None:
        return None
    from packageurl import PackageURL

    return PackageURL(type="huggingface", namespace=model.group, name=model.name,
                      version=model.version)
