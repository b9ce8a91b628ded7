"""Secret redaction: names and values that look like credentials never reach a record.

Standard library only: the Python collector imports this inside whatever interpreter it
inspects (`prov snapshot --python PATH`).
"""

from __future__ import annotations

import re

from provenance.model.classes import REDACTED

# Names that hold secrets. Over-redacting a harmless variable costs little; leaking a token
# into a published bundle costs a lot, so the net is wide (AUTHOR and MONKEY are caught too).
_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW|PASSPHRASE|CRED|AUTH|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
    r"|(^|_)KEY($|_)|COOKIE|SESSION_?ID|SIGNATURE|(^|_)PWD($|_)|(^|_)PASS($|_))",
    re.IGNORECASE,
)
# PWD and OLDPWD are working directories, not passwords.
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})

# Value shapes of well-known credentials, matched anywhere in a value.
_SECRET_VALUE = re.compile(
    r"("
    r"hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|sk-[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic style
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_\-]{16,}"  # GitLab
    r"|(AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_\-]{30,}"  # Google API key
    r"|npm_[A-Za-z0-9]{30,}"  # npm
    r"|pypi-[A-Za-z0-9_\-]{40,}"  # PyPI upload token
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # JWT
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\b(Bearer|Basic|token)\s+[A-Za-z0-9_\-\.=+/]{16,}"
    r")"
)
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s]+)@")
_QUERY_SECRET = re.compile(
    r"(?P<key>[?&;](access_token|token|api_key|apikey|key|password|secret|sig|signature)=)[^&#\s]+",
    re.IGNORECASE,
)


# A long unbroken run of letters and digits mixing all three classes: random keys, not words.
_HIGH_ENTROPY_RUN = re.compile(r"[A-Za-z0-9]{32,}")


def is_secret_name(name: str) -> bool:
    name = name.replace("-", "_")
    return name.upper() not in _NOT_SECRET_NAMES and bool(_SECRET_NAME.search(name))


def _high_entropy(run: str) -> bool:
    return (
        any(c.islower() for c in run)
        and any(c.isupper() for c in run)
        and any(c.isdigit() for c in run)
    )


def looks_like_secret(value: str) -> bool:
    if _SECRET_VALUE.search(value):
        return True
    return any(_high_entropy(m.group(0)) for m in _HIGH_ENTROPY_RUN.finditer(value))


def strip_url_credentials(text: str) -> str:
    """Replace `user:password@` in URLs and secret query parameters with <redacted>."""
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m.group('key')}{REDACTED}", text)


def redact_value(name: str, value: str) -> str:
    """The value to record for variable `name`: itself, URL-stripped, or <redacted>."""
    if is_secret_name(name):
        return REDACTED
    stripped = strip_url_credentials(value)
    if looks_like_secret(stripped):
        return REDACTED
    return stripped


_FLAG_WITH_VALUE = re.compile(r"^(?P<flag>--?[A-Za-z0-9_\-]+)=(?P<value>.*)$", re.DOTALL)


def redact_argv(argv: list[str]) -> list[str]:
    """Redact secret-looking arguments: `--token=X`, `--api-key X`, token-shaped values, URLs."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        m = _FLAG_WITH_VALUE.match(arg)
        if m:
            flag = m.group("flag")
            out.append(f"{flag}={redact_value(flag.lstrip('-'), m.group('value'))}")
            continue
        if arg.startswith("-") and is_secret_name(arg.lstrip("-")):
            out.append(arg)
            hide_next = True
            continue
        clean = strip_url_credentials(arg)
        out.append(REDACTED if looks_like_secret(clean) else clean)
    return out
