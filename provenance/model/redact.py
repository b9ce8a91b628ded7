"""Secret redaction: the one pass every stored or printed surface goes through.

Three kinds of rule, applied together:
- key names: a value under a secret-like name (`HF_TOKEN`, `api.key`, `X-Api-Key`) is hidden;
  a short list of known non-secret names keeps behaviour variables visible;
- value shapes: credentials recognisable by their form anywhere in a text (provider token
  prefixes, URL userinfo, signed-URL query parameters, connection strings, headers, JWTs,
  long mixed-case random runs);
- argv grammar: `--flag=value`, `--flag value`, `-pVALUE`, `-u user:pass`, `KEY=VALUE`,
  header strings and JSON arguments.

A hidden value becomes `<redacted>`, or, given a per-store key (`store_key`), a keyed digest
`<redacted:hmac:HEX>`: the value stays secret but two runs whose secret differs still differ
in identity, so the gate can say "differs" without revealing it.

Standard library only: the Python collector imports this inside whatever interpreter it
inspects (`prov snapshot --python PATH`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from provenance.model.classes import REDACTED

KEY_FILE = "redact.key"  # in the store directory, mode 0600, created on first use
_DIGEST_HEX = 16  # 64 bits: enough to tell values apart, keyed so it reveals nothing

# Names that are never secrets although a word in them looks like one. The value is still
# scanned for credential shapes; only the name rule is waived.
KNOWN_NOT_SECRET: dict[str, str] = {
    "TOKENIZERS_PARALLELISM": "HF tokenizers thread pool on/off: changes speed and, with "
                              "fork, deadlocks; a boolean",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "whether huggingface_hub sends the cached token: a boolean",
    "HF_TOKEN_PATH": "where the token file lives: a path, not the token",
    "PWD": "the shell's working directory",
    "OLDPWD": "the shell's previous working directory",
    "SSH_AUTH_SOCK": "path of the ssh-agent socket, not a key",
    "GPG_AGENT_INFO": "path of the gpg-agent socket",
    "KEYTIMEOUT": "zsh key-sequence timeout",
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "a boolean (matched nothing; listed as an example)",
}
_NOT_SECRET_UPPER = frozenset(KNOWN_NOT_SECRET)

# Whole words of a name (split at _ - . space and camelCase) that mark a secret.
_SECRET_WORDS = frozenset({
    "KEY", "KEYS", "PASS", "PWD", "TOK", "AUTH", "AUTHORIZATION", "COOKIE", "COOKIES", "SIG",
    "SIGNATURE", "SESSION", "SESSIONID", "DSN", "CRED", "CREDS", "PAT", "SAS", "JWT", "BEARER",
    "OTP", "WEBHOOK",
})  # not CERT, PEM or NETRC: PIP_CERT, SSL_CERT_FILE and NETRC name files, not secrets
# Inside a word (PGPASSWORD, HFTOKEN, APIKEY): these mark a secret wherever they appear.
# TOKEN is waived before IZ/IS/S (TOKENIZER, TOKENIS..., MAX_TOKENS) and before words that
# count or list tokens (token_ids, token_count) rather than hold one.
_SECRET_INFIX = re.compile(
    r"PASSW|PASSPHRASE|SECRET|APIKEY|ACCESSKEY|PRIVATEKEY|SECRETKEY|CREDENTIAL|LICENSEKEY"
    r"|TOKEN(?!IZ|IS|S(?:$|_))(?!_?(?:IDS?|COUNT|LEN|LENGTH|BUDGET|LIMIT|TYPE|TYPES)(?:$|_))"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Whole words that hold a secret infix but name software: a run's imported modules and
# mapped libraries are keyed by such names (code.modules.tiktoken, runtime.libs._tiktoken...)
_SOFTWARE_WORDS = {
    "TIKTOKEN": "OpenAI's BPE tokenizer library (vLLM imports it): a module name",
}


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub("_", name)) if w]


def is_secret_name(name: str) -> bool:
    """A name whose value is a secret (`HF_TOKEN`, `api.key`, `X-Api-Key`, `hf_tok`)."""
    name = name.strip().strip("\"'")
    if name.upper() in _NOT_SECRET_UPPER:
        return False
    words = [w.upper() for w in _words(name) if w.upper() not in _SOFTWARE_WORDS]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return bool(_SECRET_INFIX.search("_".join(words)))


# ---- value shapes -------------------------------------------------------------------------
# Each detector matches a credential; the group named `s` (or the whole match) is hidden.
_SHAPES = [
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe
    r"whsec_[A-Za-z0-9]{20,}",  # Stripe webhook secret
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",  # GitHub
    r"glpat-[A-Za-z0-9_\-]{16,}|gl(?:dt|rt|ptt|cbt|oas)-[A-Za-z0-9_\-]{16,}",  # GitLab
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}",  # AWS key ids
    r"xox[abprse]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",  # Slack hooks
    r"https://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]+",
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API key
    r"ya29\.[0-9A-Za-z_\-\.]{16,}",  # Google OAuth access token
    r"npm_[A-Za-z0-9]{30,}",  # npm
    r"pypi-[A-Za-z0-9_\-]{40,}",  # PyPI upload token
    r"dapi[0-9a-f]{32}(?:-\d)?",  # Databricks
    r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",  # Shopify
    r"do[opr]_v1_[a-f0-9]{64}",  # DigitalOcean
    r"AGE-SECRET-KEY-1[0-9A-Z]{58}",  # age
    r"key-[0-9a-f]{32}",  # Mailgun
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
    r"glc_[A-Za-z0-9+/=]{32,}",  # Grafana cloud
    r"(?:r8|wandb)_[A-Za-z0-9]{30,}",  # Replicate, W&B v2 keys
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*-----|$)",
    r"\b(?:Bearer|Basic|Digest|Negotiate)\s+(?P<s>[A-Za-z0-9_\-\.=+/~]{8,})",
    r"\b[Tt]oken\s+(?P<s>[A-Za-z0-9_\-\.=+/~]{16,})",
    # W&B API keys are 40 hex (a git commit's shape), so only near a WANDB name.
    r"(?i:wandb)[A-Za-z0-9_.\-]*[\"']?\s*(?:[=:]|\s)\s*[\"']?(?P<s>[0-9a-f]{40})\b",
    # .netrc: `machine HOST login USER password SECRET`
    r"(?i:\b(?:password|passwd|passphrase)(?:\s+is)?\s+)(?P<s>[^\s\"']+)",
    # ODBC / ADO / JDBC connection strings: `...;Pwd=SECRET;` or `Password={SECRET}`
    r"(?i:(?:^|;)\s*(?:pwd|password|accountkey|sharedaccesskey)\s*=\s*)(?P<s>\{[^}]*\}|[^;\s]+)",
    # HTTP auth headers take their scheme and credential together
    r"(?i:\b(?:proxy-)?authorization\s*[:=]\s*)(?P<s>[^\r\n\"']+)",
]
_SHAPE_LIST = [re.compile(s) for s in _SHAPES]

# scheme://user:password@ (the password may hold `/` or `:`) or scheme://TOKEN@
_URL_USERINFO = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)"
    r"(?P<userinfo>[^\s@/:]*:[^\s@]*?|[^\s@/:]{8,})@(?=[A-Za-z0-9\[])"
)
# NAME=VALUE, NAME: VALUE, "NAME": "VALUE" and query parameters, inside any text; the name
# decides (is_secret_name), so `?private_token=`, `&X-Amz-Signature=`, `api.key=`,
# `PRIVATE-TOKEN: ...`, `{"api_key": ...}` and `DB_PASSWORD=` are all one rule.
_ASSIGNMENT = re.compile(
    r"(?P<name>[\"']?[A-Za-z_][A-Za-z0-9_.\-]*[\"']?)(?P<sep>\s*(?:=|:(?!//))\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s&;,\"'}\])]+)"
)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}\b")
# A long unbroken run of letters and digits mixing all three classes: random keys, not words.
# Letters and digits only: with `/`, `-` or `_` allowed, model paths such as
# /models/Qwen/Qwen3-8B-Instruct-2507 would look random too.
_HIGH_ENTROPY_RUN = re.compile(r"[A-Za-z0-9]{32,}")
_BASE64_WORD = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])")


def _high_entropy(run: str) -> bool:
    return (any(c.islower() for c in run) and any(c.isupper() for c in run)
            and sum(c.isdigit() for c in run) >= 2)


def _is_basic_credentials(word: str) -> bool:
    """base64 of `user:password` (the Basic-auth form), standing alone in a value."""
    if len(word) % 4:
        return False
    try:
        raw = base64.b64decode(word, validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    user, sep, password = raw.partition(":")
    return bool(sep and user and password and raw.isprintable() and " " not in raw)


def looks_like_secret(value: str) -> bool:
    """Whether `value` contains a credential recognisable by its shape alone."""
    return redact_text(value) != value


# ---- marking ------------------------------------------------------------------------------

def keyed_mac(value: str, key: bytes) -> str:
    """`hmac:HEX` of a value under the store's key: equal values of one store compare
    equal, and the digest reveals nothing of the value (not even a short one)."""
    mac = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"hmac:{mac[:_DIGEST_HEX]}"


def keyed_digest(secret: str, key: bytes) -> str:
    return f"<redacted:{keyed_mac(secret, key)}>"


def _marker(key: bytes | None) -> Callable[[str], str]:
    def mark(secret: str) -> str:
        if is_redacted(secret):  # redacting twice is redacting once
            return secret
        return keyed_digest(secret, key) if key else REDACTED
    return mark


def is_redacted(value: object) -> bool:
    return isinstance(value, str) and value.startswith("<redacted")


def store_key(store_dir: str | Path) -> bytes:
    """The store's redaction key (32 random bytes), created mode 0600 on first use."""
    path = Path(store_dir) / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    key = os.urandom(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key.hex() + "\n")
    return key


# ---- text ---------------------------------------------------------------------------------

def _sub_group(pattern: re.Pattern[str], text: str, mark: Callable[[str], str]) -> str:
    def one(m: re.Match[str]) -> str:
        if "s" in pattern.groupindex and m.group("s") is not None:
            start, end = (i - m.start() for i in m.span("s"))
            whole = m.group(0)
            return whole[:start] + mark(m.group("s")) + whole[end:]
        return mark(m.group(0))
    return pattern.sub(one, text)


def _sub_assignment(m: re.Match[str], mark: Callable[[str], str]) -> str:
    name, value = m.group("name"), m.group("value")
    bare = value[1:-1] if value[:1] in "\"'" and value[-1:] == value[:1] else value
    if not bare or is_redacted(bare) or not is_secret_name(name):
        return m.group(0)
    quote = value[0] if bare != value else ""
    return f"{name}{m.group('sep')}{quote}{mark(bare)}{quote}"


def redact_text(text: str, key: bytes | None = None) -> str:
    """`text` with every credential the shapes and name rules recognise hidden."""
    mark = _marker(key)
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{mark(m.group('userinfo'))}@", text)
    for pattern in _SHAPE_LIST:
        text = _sub_group(pattern, text, mark)
    text = _ASSIGNMENT.sub(lambda m: _sub_assignment(m, mark), text)
    text = _HIGH_ENTROPY_RUN.sub(lambda m: mark(m.group(0)) if _high_entropy(m.group(0))
                                 else m.group(0), text)
    return _BASE64_WORD.sub(lambda m: mark(m.group(0)) if _is_basic_credentials(m.group(0))
                            else m.group(0), text)


def strip_url_credentials(text: str, key: bytes | None = None) -> str:
    """URLs (and any text) with credentials hidden: userinfo, signed query parameters, ..."""
    return redact_text(text, key)


def redact_value(name: str, value: str, key: bytes | None = None) -> str:
    """The value to record for `name`: itself, with credentials hidden, or wholly hidden."""
    value = str(value)
    if not value:
        return value
    if is_secret_name(name) or _name_implies_shape(name, value):
        return _marker(key)(value)
    return redact_text(value, key)


def _name_implies_shape(name: str, value: str) -> bool:
    """Values whose shape is a secret only under a telling name (a 40-hex W&B key, a UUID
    API key): alone, both look like a commit id or a request id."""
    upper = name.upper()
    if "WANDB" in upper and re.fullmatch(r"[0-9a-fA-F]{40}", value.strip()):
        return True
    return bool(_UUID.fullmatch(value.strip())) and ("KEY" in upper or "LICENSE" in upper)


# ---- argv ---------------------------------------------------------------------------------
_FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9_.\-]*")
_FLAG_WITH_VALUE = re.compile(r"^(?P<flag>--?[A-Za-z0-9_.\-]+)=(?P<value>.*)$", re.DOTALL)
_ENV_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)=(?P<value>.*)$", re.DOTALL)
# Options whose next argument is `user:password` (curl -u, wget --proxy-user, ...).
_USER_PASS_FLAGS = frozenset({"-u", "--user", "--proxy-user", "-U", "--http-user"})
# A short option with its value attached: `-pPASS` (mysql; `-p8080`, a port, is not one) and
# `-uuser:pass` (curl).
_ATTACHED = re.compile(r"-(p)(?!\d+$)[^\s=-]\S*|-(u)[^\s:=-][^\s:]*:\S+")
_JSON_LIMIT = 1 << 16  # JSON arguments larger than this are scanned as text only


def _redact_arg(arg: str, key: bytes | None) -> str:
    """One argument standing alone: `--flag=value`, `KEY=VALUE`, JSON, `-pPASS` or text."""
    mark = _marker(key)
    m = _FLAG_WITH_VALUE.match(arg)
    if m:
        flag, value = m.group("flag"), m.group("value")
        if flag in _USER_PASS_FLAGS or flag in ("--proxy-user", "--http-password"):
            return f"{flag}={_redact_user_pass(value, mark)}"
        return f"{flag}={_redact_arg(value, key) if not is_secret_name(flag) else mark(value)}"
    m = _ENV_ASSIGNMENT.match(arg)
    if m and m.group("value"):  # (`NAME=` alone may be base64 padding: scanned as text)
        return f"{m.group('name')}={redact_value(m.group('name'), m.group('value'), key)}"
    if arg[:1] in "{[" and len(arg) <= _JSON_LIMIT:
        redacted_json = _redact_json_text(arg, key)
        if redacted_json is not None:
            return redacted_json
    m = _ATTACHED.fullmatch(arg)
    if m and m.group(1) == "p":  # mysql -pPASS
        return "-p" + mark(arg[2:])
    if m and ":" in arg:  # curl -uuser:pass
        return "-u" + _redact_user_pass(arg[2:], mark)
    return redact_text(arg, key)


def _redact_user_pass(value: str, mark: Callable[[str], str]) -> str:
    user, sep, password = value.partition(":")
    return f"{user}:{mark(password)}" if sep and password else value


def _redact_json_text(text: str, key: bytes | None) -> str | None:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict | list):
        return None
    return json.dumps(redact_tree(doc, key), separators=(",", ":"), ensure_ascii=False)


def redact_argv(argv: list[str], key: bytes | None = None) -> list[str]:
    """Each argument redacted by the argv grammar; a secret-named flag hides the next one."""
    out: list[str] = []
    mark = _marker(key)
    pending: str | None = None  # the flag whose value comes next
    for arg in (str(a) for a in argv):
        if pending is not None:
            if pending not in _USER_PASS_FLAGS:
                out.append(mark(arg))
            elif arg.startswith("-") or "://" in arg:  # not a user:password after all
                out.append(_redact_arg(arg, key))
            else:
                out.append(_redact_user_pass(_redact_arg(arg, key), mark))
            pending = None
            continue
        if arg in _USER_PASS_FLAGS or (_FLAG.fullmatch(arg) and not _ATTACHED.fullmatch(arg)
                                       and is_secret_name(arg.lstrip("-"))):
            out.append(arg)
            pending = arg
            continue
        out.append(_redact_arg(arg, key))
    return out


def redact_command_text(text: str, key: bytes | None = None) -> str:
    """A shell command line as one string, word by word, its spacing kept."""
    parts = re.split(r"(\s+)", redact_text(text, key))  # shapes that span words first
    parts[::2] = redact_argv(parts[::2], key)
    return "".join(parts)


# ---- documents ----------------------------------------------------------------------------

def redact_tree(doc: Any, key: bytes | None = None, name: str = "") -> Any:
    """Any JSON-like tree: a secret-named key hides its whole subtree; strings are scanned."""
    if isinstance(doc, dict):
        return {k: (_hide_all(v, key) if is_secret_name(str(k)) else redact_tree(v, key, str(k)))
                for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [redact_tree(v, key, name) for v in doc]
    if isinstance(doc, str):
        return redact_value(name, doc, key) if name else redact_text(doc, key)
    return doc


def _hide_all(doc: Any, key: bytes | None) -> Any:
    if isinstance(doc, dict):
        return {k: _hide_all(v, key) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_hide_all(v, key) for v in doc]
    if doc is None or isinstance(doc, bool) or doc == "":
        return doc
    return _marker(key)(str(doc))


# Sections of a stored document whose names come from the user or the workload (parameters,
# tags, environments, run facts): a secret-like name hides its value there. Everywhere else
# the names are prov's own structure (`key` of a change, `digest`, `diff_secrets_redacted`),
# so only value shapes are looked for.
USER_NAMED_SECTIONS = frozenset({"params", "tags", "env", "env_extra", "facts", "runtime",
                                 "name", "labels"})


def _shapes_only(doc: Any, key: bytes | None) -> Any:
    if isinstance(doc, dict):
        return {k: (redact_tree(v, key, str(k)) if k in USER_NAMED_SECTIONS
                    else _shapes_only(v, key)) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_shapes_only(v, key) for v in doc]
    return redact_text(doc, key) if isinstance(doc, str) else doc


def redact_record(doc: dict[str, Any], key: bytes | None = None) -> dict[str, Any]:
    """A run record (or any stored document) with every surface redacted: `command` by the
    argv grammar, user-named sections by name and shape, prov's own fields by shape.
    Idempotent: redacting twice is once."""
    out = {}
    for k, v in doc.items():
        if k in ("command", "argv") and isinstance(v, list | tuple):
            out[k] = redact_argv([str(a) for a in v], key)
        elif k in USER_NAMED_SECTIONS:
            out[k] = redact_tree(v, key, str(k))
        else:
            out[k] = _shapes_only(v, key)
    return out


def redact_diff(text: str, key: bytes | None = None) -> tuple[str, int]:
    """A `git diff` with secrets hidden line by line, and how many lines were changed.

    The stored diff keeps its shape (a reader can still see which lines changed); the
    record should say `secrets_redacted: N` when N > 0."""
    lines = text.splitlines(keepends=True)
    changed = 0
    for i, line in enumerate(lines):
        clean = redact_text(line, key)
        if clean != line:
            lines[i] = clean
            changed += 1
    return "".join(lines), changed
