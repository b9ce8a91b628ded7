"""Manifest sections -> CycloneDX components. One function per kind of package or device.

cyclonedx is imported by the caller (`provenance.sbom.build`), never at CLI start.
"""

from __future__ import annotations

from typing import Any

from provenance.model import join_key
from provenance.model.facts import known
from provenance.sbom.metadata import DistInfo


def _sha256_hex(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith("sha256:") and len(value) == 71:
        return value[7:]
    return None


def _prop(name: str, value: Any):
    from cyclonedx.model import Property

    return Property(name=name, value=str(value))


def licenses_for(info: DistInfo | None) -> list:
    """Licences as the metadata states them: an SPDX expression, else the License field or
    the licence classifiers by name."""
    if info is None:
        return []
    try:
        from cyclonedx.contrib.license.factories import LicenseFactory
    except ImportError:  # cyclonedx-python-lib before 11.x
        from cyclonedx.factory.license import LicenseFactory

    factory = LicenseFactory()
    if info.license_expression:
        try:
            return [factory.make_from_string(info.license_expression)]
        except Exception:  # noqa: BLE001 - a malformed expression falls through to the rest
            pass
    if info.license_text and info.license_text.upper() != "UNKNOWN":
        return [factory.make_from_string(info.license_text)]
    return [factory.make_from_string(c) for c in sorted(set(info.license_classifiers))]


def python_components(packages: dict[str, Any], info: dict[str, DistInfo]) -> list:
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL
    from packaging.utils import canonicalize_name

    out = []
    for key in sorted(packages):
        entry = packages[key]
        if not isinstance(entry, dict) or not known(entry.get("version")):
            continue
        name = canonicalize_name(str(entry.get("name", key)))
        version = str(entry["version"])
        purl = PackageURL(type="pypi", name=name, version=version)
        hashes, props = [], [_prop("prov:manifest-key", join_key(["python", "packages", key]))]
        fp = _sha256_hex(entry.get("fingerprint"))
        if fp:
            # prov's content fingerprint (sha256 over the wheel's sorted RECORD rows) is not
            # the hash of any artifact, so it is a property; CycloneDX `hashes` are for
            # artifact bytes only, and an installed tree has no wheel file to hash.
            props.append(_prop("prov:fingerprint", entry["fingerprint"]))
        record = entry.get("record_sha256")
        if _sha256_hex(record):
            props.append(_prop("prov:record-sha256", record))
        for field in ("installer", "layer"):
            if known(entry.get(field)):
                props.append(_prop(f"prov:{field}", entry[field]))
        direct = entry.get("direct_url")
        if isinstance(direct, dict):
            for k in sorted(direct):
                props.append(_prop(f"prov:direct-url:{k}", direct[k]))
        out.append(
            Component(
                type=ComponentType.LIBRARY,
                name=name,
                version=version,
                purl=purl,
                bom_ref=purl.to_string(),
                hashes=hashes,
                licenses=licenses_for(info.get(key)),
                properties=props,
            )
        )
    return out


def deb_purl(key: str, entry: dict[str, Any], release: dict[str, Any]):
    """`pkg:deb/<distro>/<name>@<version>?arch=..&distro=<id>-<version_id>` as syft writes."""
    from packageurl import PackageURL

    distro = str(release.get("id") or "debian")
    name = str(entry.get("package") or entry.get("name") or key.split(":", 1)[0])
    qualifiers = {}
    if known(entry.get("arch")):
        qualifiers["arch"] = str(entry["arch"])
    if release.get("version_id"):
        qualifiers["distro"] = f"{distro}-{release['version_id']}"
    source = entry.get("source")
    if known(source) and source != name:
        src_version = entry.get("source_version")
        qualifiers["upstream"] = f"{source}@{src_version}" if known(src_version) else str(source)
    return PackageURL(
        type="deb", namespace=distro, name=name, version=str(entry["version"]),
        qualifiers=qualifiers,
    )


def deb_components(dpkg: dict[str, Any], release: dict[str, Any]) -> list:
    """`pkg:deb/<distro>/<name>@<version>?arch=..&distro=<id>-<version_id>` as syft writes."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component, ComponentType

    out = []
    for key in sorted(dpkg):
        entry = dpkg[key]
        if not isinstance(entry, dict) or not known(entry.get("version")):
            continue
        name = str(entry.get("package") or entry.get("name") or key.split(":", 1)[0])
        version = str(entry["version"])
        purl = deb_purl(key, entry, release)
        props = [_prop("prov:manifest-key", join_key(["os", "dpkg", key]))]
        for field in ("source", "source_version", "layer"):
            if known(entry.get(field)):
                props.append(_prop(f"prov:{field.replace('_', '-')}", entry[field]))
        hashes = []
        md5 = entry.get("md5sums")
        if isinstance(md5, str) and _sha256_hex(md5):
            props.append(_prop("prov:md5sums-sha256", md5))
        if _sha256_hex(entry.get("sha256")):
            hashes.append(HashType(alg=HashAlgorithm.SHA_256, content=entry["sha256"][7:]))
        out.append(
            Component(
                type=ComponentType.LIBRARY,
                name=name,
                version=version,
                purl=purl,
                bom_ref=purl.to_string(),
                hashes=hashes,
                properties=props,
            )
        )
    return out


def apk_purl(key: str, entry: dict[str, Any], release: dict[str, Any]):
    """`pkg:apk/<distro>/<name>@<version>?arch=..&distro=<id>-<version_id>&upstream=<origin>`
    as syft writes it (its `upstream` when the origin is another package)."""
    from packageurl import PackageURL

    distro = str(release.get("id") or "alpine").lower()
    qualifiers = {}
    if known(entry.get("arch")):
        qualifiers["arch"] = str(entry["arch"])
    if release.get("version_id"):
        qualifiers["distro"] = f"{distro}-{release['version_id']}"
    if known(entry.get("origin")) and entry["origin"] != key:
        qualifiers["upstream"] = str(entry["origin"])
    return PackageURL(type="apk", namespace=distro, name=key, version=str(entry["version"]),
                      qualifiers=qualifiers)


def apk_components(apk: dict[str, Any], release: dict[str, Any]) -> list:
    """Alpine's (and Wolfi's) packages, with `apk_purl` and the layer that introduced each."""
    from cyclonedx.model.component import Component, ComponentType

    out = []
    for key in sorted(apk):
        entry = apk[key]
        if not isinstance(entry, dict) or not known(entry.get("version")):
            continue
        purl = apk_purl(key, entry, release)
        props = [_prop("prov:manifest-key", join_key(["os", "apk", key]))]
        for field in ("origin", "layer"):
            if known(entry.get(field)):
                props.append(_prop(f"prov:{field}", entry[field]))
        out.append(Component(type=ComponentType.LIBRARY, name=key, version=str(entry["version"]),
                             purl=purl, bom_ref=purl.to_string(), properties=props))
    return out


def image_component(image: dict[str, Any]):
    """The image itself: `pkg:oci/<name>@sha256:...?repository_url=...&tag=...`."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    ref = next(
        (str(image[k]) for k in ("reference", "ref", "name", "source") if known(image.get(k))),
        "image",
    )
    digest = next(
        (str(image[k]) for k in ("digest", "manifest_digest", "index_digest", "config_digest")
         if _sha256_hex(image.get(k))),
        None,
    )
    repo, tag = _split_reference(ref)
    name = repo.rsplit("/", 1)[-1].lower() or "image"
    qualifiers = {"repository_url": repo} if "/" in repo or "." in repo else {}
    if tag:
        qualifiers["tag"] = tag
    for k in ("architecture", "arch", "platform"):
        if known(image.get(k)):
            # "linux/amd64" or "linux/arm64/v8": the purl arch is the part after the OS.
            parts = str(image[k]).split("/")
            qualifiers["arch"] = parts[1] if k == "platform" and len(parts) > 1 else parts[0]
            break
    purl = PackageURL(type="oci", name=name, version=digest, qualifiers=qualifiers)
    props = [_prop(f"prov:image:{k}", v) for k, v in sorted(_flat(image).items())]
    return Component(
        type=ComponentType.CONTAINER,
        name=repo or name,
        version=digest or tag or "unknown",
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=digest[7:])] if digest else [],
        properties=props,
    )


def _split_reference(ref: str) -> tuple[str, str | None]:
    ref = ref.split("@", 1)[0]
    for prefix in ("docker://", "registry:", "oci:", "docker-archive:"):
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1:]
    return ref, None


def _flat(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flat(v, prefix + (k,)))
        else:
            out[join_key(prefix + (k,))] = v if not isinstance(v, list) else ",".join(map(str, v))
    return out


def os_component(os_facts: dict[str, Any]):
    from cyclonedx.model.component import Component, ComponentType

    release = os_facts.get("release") if isinstance(os_facts.get("release"), dict) else {}
    if not release.get("id"):
        return None
    props = []
    for k in ("kernel", "libc", "machine", "system"):
        value = os_facts.get(k)
        if isinstance(value, dict):
            props += [_prop(f"prov:os:{k}:{sub}", v) for sub, v in sorted(_flat(value).items())]
        elif known(value):
            props.append(_prop(f"prov:os:{k}", value))
    return Component(
        type=ComponentType.OPERATING_SYSTEM,
        name=str(release["id"]),
        version=str(release.get("version_id") or release.get("version_codename") or "unknown"),
        description=str(release.get("pretty_name") or release.get("name") or "") or None,
        bom_ref=f"os:{release['id']}",
        properties=props,
    )


def gpu_stack_components(facts: dict[str, Any]) -> list:
    """GPUs as devices, VBIOS as firmware, the driver, CUDA (driver API and runtime as loaded by
    torch), cuDNN and NCCL as platform/library components. Context leaves (UUID, serial,
    temperatures, clocks) stay out: they identify hardware, not the software stack."""
    from cyclonedx.model.component import Component, ComponentType

    gpu = facts.get("gpu") if isinstance(facts.get("gpu"), dict) else {}
    torch = facts.get("torch") if isinstance(facts.get("torch"), dict) else {}
    out = []
    if known(gpu.get("driver")):
        out.append(Component(type=ComponentType.DEVICE_DRIVER, name="nvidia-driver",
                             version=str(gpu["driver"]), bom_ref="gpu:driver"))
    if known(gpu.get("cuda_driver")):
        out.append(Component(type=ComponentType.PLATFORM, name="cuda-driver-api",
                             version=str(gpu["cuda_driver"]), bom_ref="gpu:cuda-driver-api"))
    if known(gpu.get("nvml")):
        out.append(Component(type=ComponentType.LIBRARY, name="nvml",
                             version=str(gpu["nvml"]), bom_ref="gpu:nvml"))
    devices = gpu.get("devices") if isinstance(gpu.get("devices"), dict) else {}
    for idx in sorted(devices, key=lambda s: (len(s), s)):
        dev = devices[idx]
        if not isinstance(dev, dict) or not known(dev.get("name")):
            continue
        props = [
            _prop(f"prov:gpu:{k}", dev[k])
            for k in ("compute_capability", "memory_total_mib", "ecc_enabled", "mig_enabled",
                      "compute_mode", "persistence_mode", "power_limit_w")
            if known(dev.get(k))
        ]
        out.append(Component(type=ComponentType.DEVICE, name=str(dev["name"]),
                             bom_ref=f"gpu:{idx}", properties=props))
        if known(dev.get("vbios")):
            out.append(Component(type=ComponentType.FIRMWARE, name=f"vbios-gpu{idx}",
                                 version=str(dev["vbios"]), bom_ref=f"gpu:{idx}:vbios"))
    out += _image_cuda(facts)
    for key, name, ctype in (
        ("cuda_runtime", "cuda-runtime", ComponentType.PLATFORM),
        ("cudnn", "cudnn", ComponentType.LIBRARY),
        ("nccl", "nccl", ComponentType.LIBRARY),
        ("hip", "hip-runtime", ComponentType.PLATFORM),
    ):
        if known(torch.get(key)):
            out.append(Component(type=ctype, name=name, version=str(torch[key]),
                                 bom_ref=f"torch:{name}",
                                 properties=[_prop("prov:loaded-by", "torch")]))
    return out



def _image_cuda(facts: dict[str, Any]) -> list:
    """An image's CUDA stack as the container catalog found it: toolkits (version.json) as
    platforms, cuDNN/NCCL/cuBLAS/cudart libraries as libraries (`_cuda_libraries`)."""
    from cyclonedx.model.component import Component, ComponentType

    cuda = facts.get("cuda")
    if not isinstance(cuda, dict):
        return []
    out = []
    toolkits = cuda.get("toolkit") if isinstance(cuda.get("toolkit"), dict) else {}
    for home in sorted(toolkits):
        entry = toolkits[home]
        if isinstance(entry, dict) and known(entry.get("cuda")):
            props = [_prop(f"prov:cuda:{k}", v) for k, v in sorted(entry.items())
                     if k != "cuda" and not isinstance(v, (dict, list))]
            out.append(Component(type=ComponentType.PLATFORM, name="cuda-toolkit",
                                 version=str(entry["cuda"]), bom_ref=f"cuda:toolkit:{home}",
                                 properties=props))
    libs = cuda.get("libraries") if isinstance(cuda.get("libraries"), dict) else {}
    for lib in sorted(libs):
        if isinstance(libs[lib], dict):
            out += _cuda_libraries(lib, libs[lib], facts)
    return out


def owner_purl(package: str, version: str, facts: dict[str, Any], path: str = ""):
    """The purl of the package (`dpkg:NAME`, `apk:NAME`, `python:NAME[@LOCATION]`) that ships
    a file: pypi for wheels, conda for conda records, deb and apk (as `deb_components` and
    `apk_components` write them); with
    `path`, the file as the purl's subpath (relative to the package's root: site-packages,
    the conda prefix, /), so a library's purl never collides with its package's."""
    from packageurl import PackageURL
    from packaging.utils import canonicalize_name

    kind, _, name = package.partition(":")
    if kind in ("dpkg", "apk"):
        os_facts = facts.get("os") if isinstance(facts.get("os"), dict) else {}
        entry = (os_facts.get(kind) or {}).get(name)
        release = os_facts.get("release") if isinstance(os_facts.get("release"), dict) else {}
        if not isinstance(entry, dict):
            return None
        purl = (deb_purl if kind == "dpkg" else apk_purl)(name, entry, release)
        return _with_subpath(purl, path, "/")
    if kind == "python":
        name, _, location = name.partition("@")
        py = facts.get("python") if isinstance(facts.get("python"), dict) else {}
        entry = (py.get("packages") or {}).get(name) or {}
        conda = entry.get("installer") == "conda"
        root = location or str(entry.get("location") or "")
        if conda and not location:
            root = _conda_prefix(path)
        purl = PackageURL(type="conda" if conda else "pypi", name=canonicalize_name(name),
                          version=version)
        return _with_subpath(purl, path, root)
    return None


def _conda_prefix(path: str) -> str:
    """The conda prefix a library path lies in (`/opt/conda` of `/opt/conda/lib/x.so`)."""
    for marker in ("/lib/", "/lib64/", "/bin/", "/targets/"):
        if marker in path:
            return path.rsplit(marker, 1)[0]
    return "/"


def _with_subpath(purl, path: str, root: str):
    """`purl` with `#subpath`: `path` relative to `root` (the whole path where outside it)."""
    if not path:
        return purl
    from packageurl import PackageURL

    root = root.rstrip("/") + "/"
    sub = path[len(root):] if path.startswith(root) else path.lstrip("/")
    parts = purl.to_dict()
    parts["subpath"] = sub
    return PackageURL(**parts)


def _cuda_libraries(lib: str, entry: dict[str, Any], facts: dict[str, Any]) -> list:
    """One component per package shipping the library (its version, and its purl with the
    library's file as subpath, the soname version as a property); files nobody lists keep
    the soname guess, `prov:owner = none`."""
    from cyclonedx.model.component import Component, ComponentType

    paths = entry.get("paths") if isinstance(entry.get("paths"), list) else []
    owners = entry.get("owners") if isinstance(entry.get("owners"), dict) else {}
    by_owner: dict[tuple[str, str], list[str]] = {}
    for path in sorted(str(p) for p in paths):
        owner = owners.get(path) if isinstance(owners.get(path), dict) else {}
        key = (str(owner.get("package", "")), str(owner.get("version", "")))
        by_owner.setdefault(key, []).append(path)
    out = []
    for (package, version), where in sorted(by_owner.items()):
        # the most specific file (libcudnn.so.9.1.0 over libcudnn.so.9) names the library
        main = max(where, key=lambda p: (p.count("."), p))
        purl = owner_purl(package, version, facts, main) if package else None
        props = [_prop("prov:owner", package or "none")]
        props.append(_prop("prov:soname-version", entry.get("version", "")))
        props += [_prop("prov:path", p) for p in where]
        name = main.rsplit("/", 1)[-1].split(".so", 1)[0]  # libcublasLt, nvshmem_bootstrap_uid
        if package and purl is not None:
            out.append(Component(type=ComponentType.LIBRARY, name=name, version=version,
                                 purl=purl, bom_ref=f"cuda:lib:{lib}:{package}",
                                 properties=props))
        elif known(entry.get("version")):
            out.append(Component(type=ComponentType.LIBRARY, name=name,
                                 version=str(entry["version"]), bom_ref=f"cuda:lib:{lib}",
                                 properties=props))
    return out
