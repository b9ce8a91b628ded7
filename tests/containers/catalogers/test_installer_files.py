"""The image cataloger fingerprints RECORD bytes through the same installer-file list as the
host collector: one wheel installed by real pip and real uv gives one fingerprint."""

from __future__ import annotations

import pytest

from containers.catalogers import python_dist
from provenance.collectors import python_env
from tests import installer_tools as tools

pytestmark = pytest.mark.timeout(600)


@pytest.mark.slow
def test_record_facts_agree_across_installers_and_with_the_collector(tmp_path):
    whl = tools.wheel("idna==3.10")
    facts, collected = {}, {}
    for how, install in (("pip", tools.pip_install), ("uv", tools.uv_install)):
        python = tools.new_venv(tmp_path / how)
        install(python, str(whl))
        site = next((tmp_path / how).glob("lib/python3*/site-packages"))
        record = (site / "idna-3.10.dist-info" / "RECORD").read_bytes()
        facts[how] = python_dist.record_facts(record)
        collected[how] = python_env.collect([str(site)])["section"]["packages"]["idna"]
    assert facts["pip"]["record_sha256"] != facts["uv"]["record_sha256"]  # RECORDs differ
    assert facts["pip"]["fingerprint"] == facts["uv"]["fingerprint"]
    assert collected["uv"]["fingerprint"] == facts["pip"]["fingerprint"]


def test_every_listed_installer_file_is_documented_and_excluded():
    for name, source in python_dist.INSTALLER_FILES.items():
        assert source.strip(), name
        assert python_dist.is_installer_file(f"pkg-1.0.dist-info/{name}")
        assert not python_dist.is_installer_file(f"pkg/{name}")  # a package's own file
        assert not python_dist.is_installer_file(f"pkg-1.0.dist-info/licenses/{name}")
