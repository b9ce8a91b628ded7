"""`prov verify --lock` on files that are not usable image locks: one line, exit 2, and no
image is read (each check comes before the scan)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_one_line_error, run_prov

CASES = {
    "garbage": ("kind = [\n", "malformed TOML"),
    "unknown": ('name = "x"\n', "not a lock prov knows"),
    "old-format": ('kind = "prov-image-lock"\nformat = 0\n', "unsupported image lock format"),
    "no-source": ('kind = "prov-image-lock"\nformat = 1\n[image]\n'
                  'config_digest = "sha256:' + "0" * 64 + '"\n', "no SOURCE given"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unusable_image_lock_is_one_line_exit_2(case, tmp_path):
    text, expected = CASES[case]
    lock = tmp_path / "image.lock.toml"
    lock.write_text(text)
    err = assert_one_line_error(run_prov("verify", "--lock", str(lock)))
    assert expected in err and str(lock) in err, err


def test_an_unreadable_lock_is_one_line_exit_2(tmp_path):
    lock = tmp_path / "image.lock.toml"
    lock.mkdir()  # exists, cannot be read as text
    err = assert_one_line_error(run_prov("verify", "--lock", str(lock)))
    assert str(lock) in err
