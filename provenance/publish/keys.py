"""ed25519 signing keys for published bundles (`prov keygen`), via `cryptography`.

Private keys are PKCS#8 PEM (unencrypted, mode 0600); public keys SubjectPublicKeyInfo PEM.
A key id is the sha256 of the public key's DER encoding, so a verifier can tell which key
a signature claims without trusting anything else in the bundle.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from provenance.model.atomic import write_atomic
from provenance.model.errors import ProvError


def _serialization():
    from cryptography.hazmat.primitives import serialization

    return serialization


def key_id(public_key) -> str:
    ser = _serialization()
    der = public_key.public_bytes(ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def generate(prefix: Path, force: bool = False) -> tuple[Path, Path, str]:
    """Write PREFIX.key and PREFIX.pub; refuse to overwrite unless `force`."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    ser = _serialization()
    if str(prefix).endswith("/") or Path(prefix).is_dir():
        raise ProvError(f"-o {prefix}: is a directory; give a path prefix such as "
                        f"{Path(prefix) / 'prov-signing'}")
    priv_path, pub_path = Path(f"{prefix}.key"), Path(f"{prefix}.pub")
    for path in (priv_path, pub_path):
        if path.exists() and not force:
            raise ProvError(f"{path} exists; use --force to overwrite it")
    if not priv_path.parent.is_dir():
        raise ProvError(f"{priv_path.parent}: no such directory")
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
    pub = key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    write_atomic(priv_path, priv, 0o600)  # the temp file is 0600 from its creation
    write_atomic(pub_path, pub, 0o644)
    return priv_path, pub_path, key_id(key.public_key())


def load_private(path: Path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from provenance.model.inputs import read_input

    data = read_input(path, "key")
    try:
        key = _serialization().load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ProvError(f"{path}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ProvError(f"{path}: not an ed25519 key (prov keygen makes one)")
    return key


def load_public(path: Path):
    """A PEM ed25519 public key. A private key is refused: whoever verifies must not hold
    (or be handed) the signer's secret, and accepting one hides that mistake."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from provenance.model.inputs import read_input

    data = read_input(path, "key")
    if b"PRIVATE KEY" in data:
        raise ProvError(f"--key {path}: is a PRIVATE key; verify with the public key "
                        "(PREFIX.pub from prov keygen)")
    try:
        key = _serialization().load_pem_public_key(data)
    except ValueError as exc:
        raise ProvError(f"{path}: not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ProvError(f"{path}: not an ed25519 public key")
    return key
