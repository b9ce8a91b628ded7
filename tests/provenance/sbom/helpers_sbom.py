"""Shared test inputs for sbom/audit/publish: a synthetic manifest shaped like the collectors'
output (image, dpkg, Python, GPU stack) and the prov CLI runner. Golden files: tests/golden.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from provenance.model import Manifest
from provenance.sbom.subjects import PublishedRun, Subject

PROV = [sys.executable, "-c", "from provenance.cli import main; main()"]


def sample_facts(requests_version: str = "2.30.0") -> dict:
    """An image-like manifest: the layout `containers.scan_image(...).facts()` and
    `prov snapshot` produce (image digests, dpkg with layers, Python with fingerprints, GPU)."""
    return {
        "image": {
            "reference": "registry.test:5000/llm/vllm-nightly:2026-11-01",
            "digest": "sha256:" + "ab" * 32,
            "config_digest": "sha256:" + "cd" * 32,
            "architecture": "amd64",
        },
        "os": {
            "release": {"id": "debian", "version_id": "12", "pretty_name": "Debian GNU/Linux 12"},
            "kernel": {"release": "6.1.0-26-amd64"},
            "dpkg": {
                "libc6:amd64": {"version": "2.36-9+deb12u7", "arch": "amd64", "source": "glibc",
                                "source_version": "2.36-9+deb12u7", "layer": "sha256:" + "01" * 32},
                "bash": {"version": "5.2.15-2+b7", "arch": "amd64", "source": "bash",
                         "source_version": "5.2.15-2", "layer": "sha256:" + "01" * 32},
                "libgcc-s1": {"version": "12.2.0-14", "arch": "amd64", "source": "gcc-12"},
                "xz-utils": {"version": "5.4.1-0.2", "arch": "amd64"},
                "perl-base": {"version": "5.36.0-7+deb12u1", "arch": "amd64", "source": "perl"},
                "ncurses-base": {"version": "6.4-4", "arch": "all", "source": "ncurses"},
                "tzdata": {"version": "2024a-0+deb12u1", "arch": "all"},
                "passwd": {"version": "1:4.13+dfsg1-1+b1", "arch": "amd64", "source": "shadow",
                           "source_version": "1:4.13+dfsg1-1"},
            },
        },
        "python": {
            "version": "3.12.3",
            "implementation": "cpython",
            "executable": "/usr/bin/python3",
            "prefix": "/usr",
            "packages": {
                "requests": {"version": requests_version, "fingerprint": "sha256:" + "11" * 32,
                             "record_sha256": "sha256:" + "12" * 32, "installer": "pip",
                             "layer": "sha256:" + "02" * 32},
                "jinja2": {"version": "3.1.3", "fingerprint": "sha256:" + "21" * 32},
                "urllib3": {"version": "2.2.1", "fingerprint": "sha256:" + "31" * 32},
                "torch": {"version": "2.13.0+cu128", "fingerprint": "sha256:" + "41" * 32,
                          "direct_url": {"url": "https://download.test/whl/torch.whl",
                                         "archive_sha256": "51" * 32}},
                "vllm": {"version": "0.11.1.dev12+g0123abcd", "fingerprint":
                         "unavailable: no RECORD (egg-info or foreign installer)"},
            },
        },
        "gpu": {
            "driver": "570.86.15",
            "cuda_driver": "12.8",
            "nvml": "12.570.86.15",
            "count": 1,
            "devices": {"0": {"name": "NVIDIA H200", "compute_capability": "9.0",
                              "vbios": "96.00.9F.00.04", "memory_total_mib": 143771,
                              "ecc_enabled": True, "mig_enabled": False,
                              "uuid": "GPU-00000000-1111-2222-3333-444444444444",
                              "temperature_c": 31}},
        },
        "torch": {"version": "2.13.0+cu128", "cuda_runtime": "12.8", "cudnn": "91002",
                  "nccl": "2.27.3", "hip": "none"},
        "cuda": {
            "toolkit": {"cuda-12.8": {"path": "/usr/local/cuda-12.8", "layer": 3,
                                      "cuda": "12.8.1", "cuda_cudart": "12.8.90"}},
            "libraries": {"cudnn": {"version": "9.10.2", "versions": ["9", "9.10.2"],
                                    "paths": ["/usr/lib/x86_64-linux-gnu/libcudnn.so.9.10.2"]}},
        },
        "env": {"CUDA_VISIBLE_DEVICES": "0"},
    }


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _file(byte: str, size: int) -> dict:
    return {"sha256": "sha256:" + byte * 32, "size": size, "source": "hf-blob-name"}


def sample_model_facts() -> dict:
    """What the probe records of a run that loaded a hub model with transformers (one model
    directory: the files keyed by their path in it)."""
    return {
        "model": {"files": {
            "config.json": _file("a1", 1421), "generation_config.json": _file("a2", 239),
            "model-00001-of-00002.safetensors": _file("a3", 4_902_257_696),
            "model-00002-of-00002.safetensors": _file("a4", 1_263_275_808),
            "model.safetensors.index.json": _file("a5", 32_837),
            "tokenizer.json": _file("a6", 11_422_654), "tokenizer_config.json": _file("a7", 9_732),
        }},
        "runtime": {"transformers": {
            "models": {"0": {"class": "Qwen3ForCausalLM", "attn_implementation": "sdpa",
                             "attn_implementation_requested": "sdpa", "dtype": "bfloat16",
                             "device_map": "none", "quantization": "none",
                             "name_or_path": "Qwen/Qwen3-8B", "revision": "main",
                             "commit": COMMIT}},
            "tokenizers": {"0": {"class": "Qwen2TokenizerFast", "name_or_path": "Qwen/Qwen3-8B",
                                 "revision": "main", "chat_template_sha256": "none"}},
        }},
    }


def sample_manifest(**kw) -> Manifest:
    return Manifest(facts=sample_facts(**kw))


def sample_model_subject() -> Subject:
    """The sample run, having read a model: its manifest and its record hold `model.files`."""
    m = Manifest(facts={**sample_facts(), **sample_model_facts()})
    return Subject(m, label="sample", kind="run", run=sample_run(m, facts=sample_model_facts()))


def sample_run(manifest: Manifest, facts: dict | None = None) -> PublishedRun:
    """A run shaped as the store records it (the record is what a bundle ships)."""
    from provenance.sbom.subjects import published_run
    from provenance.store.run_record import RunRecord

    return published_run(RunRecord.from_doc({
        **({"facts": facts} if facts else {}),
        "run_id": "r-20261101-0001",
        "state": "complete",
        "command": ["python", "bench.py", "--model", "m", "--api-key",
                    "sk-live-abcdefghijklmnop"],
        "started_at": "2026-11-01T10:00:00Z",
        "ended_at": "2026-11-01T10:05:00Z",
        "exit_status": 0,
        "manifest": "sha256:" + "5e" * 32,
        "manifest_digest": manifest.digest(),
        "outputs": {"out/kl.json": {"type": "file", "digest": "sha256:" + "61" * 32}},
    }))


def sample_subject(with_run: bool = True) -> Subject:
    m = sample_manifest()
    return Subject(m, label="sample", kind="run" if with_run else "image",
                   run=sample_run(m) if with_run else None)


def prov(*args: str, cwd: Path | None = None, timeout: int = 120,
         env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*PROV, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={**os.environ, **(env or {})})
