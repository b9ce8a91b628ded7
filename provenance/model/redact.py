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
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
    "OTP", "WEBHOOK", "PW", "PASSWD", "PASSWORD", "SECRET", "TOKEN", "PRIVATE", "TOTP", "HOTP",
    "MFA", "PASSCODE",
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


# Words that name a secret only when the value is not a plain number: `seed=42` is the
# sampler's seed (identity), `totp_seed=JBSW...` or `wallet_seed=...` is a secret.
_WEAK_SECRET_WORDS = frozenset({"SEED", "SEEDS"})


def is_secret_pair(name: str, value: str) -> bool:
    """Whether `value` under `name` is a secret by its name: is_secret_name, or a weak
    word (seed) holding something other than a number."""
    if is_secret_name(name):
        return True
    if re.fullmatch(r"\s*-?\d{1,40}\s*", value):
        return False
    return any(w.upper() in _WEAK_SECRET_WORDS for w in _words(name.strip().strip("\"'")))


# ---- value shapes -------------------------------------------------------------------------
# Every pattern below is linear: a quantifier that could run long starts only where its run
# starts (a negative lookbehind), and every other repetition is bounded, so no position of
# the text is scanned more than a bounded number of times by one pattern.
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
    r"\b(?:Bearer|Basic|Digest|Negotiate)\s{1,16}(?P<s>[A-Za-z0-9_\-\.=+/~]{8,})",
    r"\b[Tt]oken\s{1,16}(?P<s>[A-Za-z0-9_\-\.=+/~]{16,})",
    # W&B API keys are 40 hex (a git commit's shape), so only near a WANDB name.
    r"(?i:wandb)[A-Za-z0-9_.\-]{0,64}[\"']?\s{0,8}(?:[=:]|\s)\s{0,8}[\"']?(?P<s>[0-9a-f]{40})\b",
    # .netrc: `machine HOST login USER password SECRET`
    r"(?i:\b(?:password|passwd|passphrase)(?:\s{1,8}is)?\s{1,8})(?P<s>[^\s\"']{1,4096})",
    # ODBC / ADO / JDBC connection strings: `...;Pwd=SECRET;` or `Password={SECRET}`
    r"(?i:(?:^|;)\s{0,8}(?:pwd|password|accountkey|sharedaccesskey)\s{0,8}=\s{0,8})"
    r"(?P<s>\{[^}]{0,1024}\}|[^;\s]{1,4096})",
    # HTTP auth headers take their scheme and credential together
    r"(?i:\b(?:proxy-)?authorization\s{0,8}[:=]\s{0,8})(?P<s>[^\r\n\"']{1,4096})",
    # Oracle / EZConnect `user/PASSWORD@host` (`vllm/vllm-openai@sha256:...` is an image)
    r"(?<![\w/.:@$#\-])[A-Za-z][\w$#]{0,29}/(?P<s>[^\s/@\"']{1,256})@"
    r"(?!sha\d+:)(?=[A-Za-z0-9\[(/])",
    # .pgpass `host:port:database:user:PASSWORD`, one per line
    r"(?m:^[^:\s]{1,255}:(?:\d{1,5}|\*):[^:\s]{1,255}:[^:\s]{1,255}:)(?P<s>\S{1,1024})$",
    # Telegram bot tokens `123456789:AA...`
    r"(?<![0-9])[0-9]{6,12}:(?P<s>AA[A-Za-z0-9_\-]{30,})",
]
_SHAPE_LIST = [re.compile(s) for s in _SHAPES]

# Multi-line key blocks, hidden whole from the first line to the last (each line of a diff may
# start with `+`, `-` or a space: the block is still one block).
_BLOCK_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
                          r"|PuTTY-User-Key-File-\d{1,3}:")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}-----")
_PUTTY_END = re.compile(r"Private-(?:MAC|Hash):[ \t]{0,8}[0-9A-Fa-f]{0,128}")

# URL user-info: `scheme://` begins it, the last `@` before the first `/`, `?` or `#` that
# follows an `@` ends it (a password may hold `/`, `:` and an unencoded `@`).
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}://")
_AUTHORITY = re.compile(r"(?:[^\s\"'<>`:]|:(?!//)){0,4096}")
_URL_USER_END = re.compile(r"[/?#]")
_AT_HOST = re.compile(r"@(?:[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,16}|localhost"
                      r"|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?(?=[/?#]|$)")

# NAME=VALUE, NAME: VALUE, "NAME": "VALUE" and query parameters, inside any text; the name
# decides (is_secret_name), so `?private_token=`, `&X-Amz-Signature=`, `api.key=`,
# `PRIVATE-TOKEN: ...`, `{"api_key": ...}`, `Client(api_key='...')` and `DB_PASSWORD=` are
# all one rule.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<name>[\"']?[A-Za-z_][A-Za-z0-9_.\-]{0,127}[\"']?)"
    r"(?P<sep>\s{0,8}(?:=|:(?!//))\s{0,8})"
    r"(?P<value>\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s&;,\"'}\])]{1,4096})"
)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}\b")
# Candidate random tokens: maximal runs (a run starts only where the previous character is
# not of its class). See _is_random_run for the rule.
_ALNUM_RUN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{16,}")
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])")
_BASE64_WORD = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = frozenset("0123456789abcdefABCDEF")
_BASE32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_SHA256_BASE32_LEN = 52  # 256 bits in base32, unpadded: a digest, not a seed


def _class_changes(run: str) -> int:
    """How often the character class (lower, upper, digit) changes along `run`: random
    tokens change class at about 60% of positions, words and CamelCase names rarely."""
    def cls(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2
    return sum(cls(a) != cls(b) for a, b in zip(run, run[1:], strict=False))


def _is_random_run(run: str) -> bool:
    """The documented high-entropy rule (docs/concepts/manifest-and-identity.md, Secrets). Secret:
    - `0x` + at least 64 hex digits (a private key; a bare 40/64-hex run is a digest: kept);
    - letters and digits mixing lower, upper and >= 2 digits: 32+ characters, or 16+ whose
      class changes at >= 40% of positions (random, not CamelCase words);
    - 16+ characters of the base32 alphabet (A-Z, 2-7) with >= 2 digits (TOTP seeds).
    Kept: pure hex (commit ids, sha256 digests), runs of one case (words, CPU flags), and a
    52-character base32 run (a sha256 digest in base32: Triton's cache keys)."""
    if run[:2] in ("0x", "0X") and len(run) >= 66 and set(run[2:]) <= _HEX:
        return True
    if set(run) <= _HEX:
        return False
    digits = sum(c.isdigit() for c in run)
    if any(c.islower() for c in run) and any(c.isupper() for c in run) and digits >= 2:
        return len(run) >= 32 or _class_changes(run) >= 0.4 * len(run)
    if len(run) == _SHA256_BASE32_LEN:
        return False
    return set(run) <= _BASE32 and digits >= 2 and len(run) - digits >= 8


def _is_random_b64(token: str) -> bool:
    """A base64 blob: `+` or `=` padding in it (paths have neither) and random letters."""
    if "+" not in token and not token.endswith("="):
        return False
    letters = re.sub(r"[^A-Za-z0-9]", "", token)
    return len(letters) >= 20 and _is_random_run(letters[:64] if len(letters) >= 32
                                                 else letters)


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


def _marker(key: bytes | None, known: KnownSecrets | None = None) -> Callable[[str], str]:
    def mark(secret: str) -> str:
        if is_redacted(secret):  # redacting twice is redacting once
            return secret
        if known is not None:
            known.add(secret)
        return keyed_digest(secret, key) if key else REDACTED
    return mark


def is_redacted(value: object) -> bool:
    return isinstance(value, str) and value.startswith("<redacted")


# ---- secrets known by value ---------------------------------------------------------------
MIN_KNOWN_LENGTH = 6  # shorter values ("1", "true", "admin") would wipe ordinary output
_NOT_WORTH = frozenset({"true", "false", "none", "null", "yes", "no", "redacted"})


class KnownSecrets:
    """The values one run's redaction hid (environment values, argv words, tags, params):
    every writer of the run gets this one object and removes them wherever they appear
    again (the stored logs, the git diff, facts.json, the record). A value is kept only if
    it has at least MIN_KNOWN_LENGTH characters and is not a plain number (under 8 digits)
    or a boolean-like word; a multi-line value is also kept line by line (a log is
    redacted in lines). The values live in memory only, never stored."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: str) -> None:
        for v in {value.strip(), *(line.strip() for line in value.splitlines())}:
            if (len(v) >= MIN_KNOWN_LENGTH and v.lower() not in _NOT_WORTH
                    and not is_redacted(v) and not (v.isdigit() and len(v) < 8)
                    and v not in self._values):
                self._values.add(v)
                self._pattern = None

    def scrub(self, text: str, mark: Callable[[str], str]) -> str:
        """`text` with every known value replaced by its mark (longest first)."""
        if not self._values:
            return text
        if self._pattern is None:
            self._pattern = re.compile("|".join(
                re.escape(v) for v in sorted(self._values, key=len, reverse=True)))
        return self._pattern.sub(lambda m: mark(m.group(0)), text)


def secrets_of_run(env: Mapping[str, str], argv: Sequence[str],
                   labels: Mapping[str, Any] | None = None) -> KnownSecrets:
    """What redaction hides in a run's environment, argv and labels (tags, params, name):
    the KnownSecrets its writers remove by value."""
    known = KnownSecrets()
    for name, value in env.items():
        redact_value(str(name), str(value), known=known)
    redact_argv([str(a) for a in argv], known=known)
    for name, value in (labels or {}).items():
        if isinstance(value, str):
            redact_value(str(name), value, known=known)
    return known


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
Mark = Callable[[str], str]


def _sub_group(pattern: re.Pattern[str], text: str, mark: Mark) -> str:
    def one(m: re.Match[str]) -> str:
        if "s" in pattern.groupindex and m.group("s") is not None:
            start, end = (i - m.start() for i in m.span("s"))
            whole = m.group(0)
            return whole[:start] + mark(m.group("s")) + whole[end:]
        return mark(m.group(0))
    return pattern.sub(one, text)


def _sub_assignment(m: re.Match[str], mark: Mark) -> str:
    name, value = m.group("name"), m.group("value")
    bare = value[1:-1] if value[:1] in "\"'" and value[-1:] == value[:1] else value
    if not bare or is_redacted(bare) or not is_secret_pair(name, bare):
        return m.group(0)
    quote = value[0] if bare != value else ""
    return f"{name}{m.group('sep')}{quote}{mark(bare)}{quote}"


def _blocks(text: str, mark: Mark) -> str:
    """PEM, OpenSSH and PuTTY private keys hidden as whole blocks, BEGIN to END (to the end
    of the text when the END is missing). Linear: each block's END is searched once, and
    the next BEGIN only after it."""
    if "-----BEGIN" not in text and "PuTTY-User-Key-File" not in text:
        return text
    out, pos = [], 0
    while (m := _BLOCK_BEGIN.search(text, pos)) is not None:
        end_rule = _PUTTY_END if m.group(0).startswith("PuTTY") else _PEM_END
        end = end_rule.search(text, m.end())
        stop = end.end() if end else len(text)
        out += [text[pos:m.start()], mark(text[m.start():stop])]
        pos = stop
        if end is None:
            break
    out.append(text[pos:])
    return "".join(out)


def _user_info_end(authority: str) -> int:
    """Where the user-info of `authority` (the text after `scheme://`) ends: at the first
    `@` followed by a real host (a dotted name, an IP, `localhost` or `[v6]`, then a port,
    `/`, `?`, `#` or the end), else at the last `@` before the first `/`, `?` or `#` that
    follows an `@`; -1 when there is none."""
    first_at = authority.find("@")
    if first_at < 0:
        return -1
    for m in _AT_HOST.finditer(authority, first_at):
        return m.start()
    cut = _URL_USER_END.search(authority, first_at)
    return authority.rfind("@", 0, cut.start() if cut else len(authority))


def _urls(text: str, mark: Mark) -> str:
    """URL user-info (`scheme://USER:PASSWORD@host`, `scheme://TOKEN@host`) hidden, also
    when the password holds `/`, `:` or an unencoded `@` (see _user_info_end)."""
    if "://" not in text or "@" not in text:
        return text
    out, pos = [], 0
    for m in _SCHEME.finditer(text):
        if m.start() < pos:
            continue
        authority = _AUTHORITY.match(text, m.end()).group(0)
        at = _user_info_end(authority)
        userinfo = authority[:max(at, 0)]
        user = userinfo.partition(":")[0]
        if (not userinfo or any(c in user for c in "/?#")
                or (":" not in userinfo and len(userinfo) < 8)
                or at + 1 >= len(authority)
                or not (authority[at + 1].isalnum() or authority[at + 1] == "[")):
            continue
        out += [text[pos:m.end()], mark(userinfo), "@"]
        pos = m.end() + at + 1
    out.append(text[pos:])
    return "".join(out)


def _random_tokens(text: str, mark: Mark) -> str:
    text = _B64_RUN.sub(lambda m: mark(m.group(0)) if _is_random_b64(m.group(0))
                        else m.group(0), text)
    return _ALNUM_RUN.sub(lambda m: mark(m.group(0)) if _is_random_run(m.group(0))
                          else m.group(0), text)


def _text(text: str, mark: Mark, known: KnownSecrets | None) -> str:
    """The structural rules, each one linear scan, in an order where a wider rule (a key
    block, a URL, a provider token) goes before the narrower ones that would split it."""
    if known is not None:
        text = known.scrub(text, mark)
    text = _blocks(text, mark)
    text = _urls(text, mark)
    for pattern in _SHAPE_LIST:
        text = _sub_group(pattern, text, mark)
    text = _ASSIGNMENT.sub(lambda m: _sub_assignment(m, mark), text)
    text = _random_tokens(text, mark)
    return _BASE64_WORD.sub(lambda m: mark(m.group(0)) if _is_basic_credentials(m.group(0))
                            else m.group(0), text)


def redact_text(text: str, key: bytes | None = None,
                known: KnownSecrets | None = None) -> str:
    """`text` with every credential the structural rules recognise hidden, and every value
    in `known` (a run's KnownSecrets) too; what is hidden is added to `known`."""
    return _text(text, _marker(key, known), known)


def strip_url_credentials(text: str, key: bytes | None = None) -> str:
    """URLs (and any text) with credentials hidden: userinfo, signed query parameters, ..."""
    return redact_text(text, key)


def redact_value(name: str, value: str, key: bytes | None = None,
                 known: KnownSecrets | None = None) -> str:
    """The value to record for `name`: itself, with credentials hidden, or wholly hidden."""
    value = str(value)
    if not value:
        return value
    mark = _marker(key, known)
    if is_secret_pair(name, value) or _name_implies_shape(name, value):
        return mark(value)
    return _text(value, mark, known)


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

# Short options are ambiguous (`-p` is a password to sshpass, a port to ssh, a path to
# mkdir), so they count only for the tool that defines them; a tool is known by its name
# anywhere in argv (`sudo docker login -p PW`, `prov exec -- sshpass -p PW ssh h`). Long
# options count for every tool when their name says secret (`--password`, `--pw`,
# `--api-key`, `--token`, `--secret`).
_REGISTRY_LOGIN = frozenset({"-p", "--password"})
_TOOL_SECRET_FLAGS: dict[str, frozenset[str]] = {
    **{t: frozenset({"-p"}) for t in ("mysql", "mysqldump", "mysqladmin", "mysqlimport",
                                      "mysqlshow", "mariadb", "mariadb-dump", "7z", "7za")},
    **{t: _REGISTRY_LOGIN for t in ("docker", "podman", "nerdctl", "buildah", "skopeo",
                                    "helm", "oras", "crane", "regctl", "az")},
    **{t: frozenset({"-p"}) for t in ("sshpass", "mongo", "mongosh", "mongodump",
                                      "mongorestore", "mongoexport", "mongoimport")},
    "redis-cli": frozenset({"-a", "--pass"}),
    **{t: frozenset({"-P"}) for t in ("sqlcmd", "bcp", "osql", "isql", "zip", "unzip")},
    **{t: frozenset({"-w"}) for t in ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete",
                                      "ldapwhoami", "ldappasswd")},
    "keytool": frozenset({"-storepass", "-keypass", "-srcstorepass", "-deststorepass"}),
    "openssl": frozenset({"-k", "-pass", "-passin", "-passout"}),
    "smbclient": frozenset({"--password"}),
    "curl": frozenset({"--oauth2-bearer"}),
    "wget": frozenset({"--password", "--http-password", "--ftp-password", "--proxy-password"}),
    "htpasswd": frozenset(),  # its password is positional: see _htpasswd
}
# Tools whose `-p` is attached-only (`mysql -p` alone prompts; the next word is a database).
_ATTACHED_ONLY = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow",
                            "mariadb", "mariadb-dump", "7z", "7za"})
# Whose `login` takes a registry, not a token, as its positional argument.
_LOGIN_TAKES_HOST = frozenset({"docker", "podman", "nerdctl", "buildah", "skopeo", "helm",
                               "oras", "crane", "regctl"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"})
_HOST = re.compile(r"[a-z0-9\-]+(?:\.[a-z0-9\-]+)+(?::\d+)?|localhost(?::\d+)?")
_SHELL_DEPTH = 4  # sh -c "bash -c '...'" nested deeper than this is scanned as text


def _tool_of(arg: str) -> str | None:
    base = arg.rsplit("/", 1)[-1]
    return base if base in _TOOL_SECRET_FLAGS or base in _SHELLS else None


def _redact_arg(arg: str, mark: Mark, known: KnownSecrets | None) -> str:
    """One argument standing alone: `--flag=value`, `KEY=VALUE`, JSON, `-pPASS` or text."""
    m = _FLAG_WITH_VALUE.match(arg)
    if m:
        flag, value = m.group("flag"), m.group("value")
        if flag in _USER_PASS_FLAGS or flag in ("--proxy-user", "--http-password"):
            return f"{flag}={_redact_user_pass(value, mark)}"
        if is_secret_name(flag) and value:
            return f"{flag}={mark(value)}"
        return f"{flag}={_redact_arg(value, mark, known)}"
    m = _ENV_ASSIGNMENT.match(arg)
    if m and m.group("value"):  # (`NAME=` alone may be base64 padding: scanned as text)
        name, value = m.group("name"), m.group("value")
        if is_secret_pair(name, value) or _name_implies_shape(name, value):
            return f"{name}={mark(value)}"
        return f"{name}={_text(value, mark, known)}"
    if arg[:1] in "{[" and len(arg) <= _JSON_LIMIT:
        redacted_json = _redact_json_text(arg, mark, known)
        if redacted_json is not None:
            return redacted_json
    m = _ATTACHED.fullmatch(arg)
    if m and m.group(1) == "p":  # mysql -pPASS
        return "-p" + mark(arg[2:])
    if m and ":" in arg:  # curl -uuser:pass
        return "-u" + _redact_user_pass(arg[2:], mark)
    return _text(arg, mark, known)


def _redact_user_pass(value: str, mark: Mark) -> str:
    user, sep, password = value.partition(":")
    return f"{user}:{mark(password)}" if sep and password else value


def _redact_json_text(text: str, mark: Mark, known: KnownSecrets | None) -> str | None:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict | list):
        return None
    return json.dumps(_tree(doc, mark, known), separators=(",", ":"), ensure_ascii=False)


def _shell_words(script: str) -> list[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the words as the shell would not see them
        return script.split()


def _quote(word: str) -> str:
    """A word as a shell reads it back; operators and redaction marks stay as they are."""
    if word and not re.search(r"[\s\"'\\$`]", word):
        return word
    return shlex.quote(word)


def _shell_script(script: str, mark: Mark, known: KnownSecrets | None, depth: int) -> str:
    """`sh -c SCRIPT`: the script's words redacted by the argv grammar, recursively; a
    script with nothing hidden keeps its spelling, else it is re-quoted word by word."""
    if depth >= _SHELL_DEPTH:
        return _text(script, mark, known)
    words = _shell_words(script)
    clean = _argv(words, mark, known, depth + 1)
    if clean == words:
        return _text(script, mark, known)
    return " ".join(_quote(w) for w in clean)


@dataclass
class _ArgvState:
    tool: str | None = None
    pending: str | None = None  # what the next word is: secret, user-pass, script, login, set
    positionals: int = 0  # of the current tool (htpasswd's password is positional)
    htpasswd_batch: int = 0  # the positional that is htpasswd -b's password


def _argv(argv: Sequence[str], mark: Mark, known: KnownSecrets | None,
          depth: int = 0) -> list[str]:
    out: list[str] = []
    st = _ArgvState()
    for arg in (str(a) for a in argv):
        out.append(_argv_word(arg, st, mark, known, depth))
    return out


def _argv_word(arg: str, st: _ArgvState, mark: Mark, known: KnownSecrets | None,
               depth: int) -> str:
    pending, st.pending = st.pending, None
    if pending is not None:
        done = _pending_word(arg, pending, st, mark, known, depth)
        if done is not None:
            return done
    tool = _tool_of(arg)
    if tool is not None:
        st.tool, st.positionals, st.htpasswd_batch = tool, 0, 0
        return arg
    flags = _TOOL_SECRET_FLAGS.get(st.tool or "", frozenset())
    if arg in flags and st.tool not in _ATTACHED_ONLY:
        st.pending = "secret"
        return arg
    for flag in flags:
        if len(flag) == 2 and arg.startswith(flag) and len(arg) > 2 and arg[2] != "=":
            return flag + mark(arg[2:])
    if st.tool in _SHELLS and re.fullmatch(r"-[a-z]*c[a-z]*", arg):
        st.pending = "script"
        return arg
    if st.tool == "htpasswd" and re.fullmatch(r"-[a-zA-Z]*b[a-zA-Z]*", arg):
        st.htpasswd_batch = 2 if "n" in arg else 3
        return arg
    if not arg.startswith("-"):
        st.positionals += 1
        if st.tool == "htpasswd" and st.positionals == st.htpasswd_batch:
            return mark(arg)
        if arg in ("login", "auth"):
            st.pending = None if st.tool in _LOGIN_TAKES_HOST else "login"
            return arg
        if arg == "set":
            st.pending = "set"
            return arg
    if arg in _USER_PASS_FLAGS or (_FLAG.fullmatch(arg) and not _ATTACHED.fullmatch(arg)
                                   and is_secret_name(arg.lstrip("-"))):
        st.pending = "user-pass" if arg in _USER_PASS_FLAGS else "secret"
        return arg
    return _redact_arg(arg, mark, known)


def _pending_word(arg: str, pending: str, st: _ArgvState, mark: Mark,
                  known: KnownSecrets | None, depth: int) -> str | None:
    """The word after a flag or subcommand that announced it; None: an ordinary word."""
    if pending == "secret":
        return mark(arg)
    if pending == "user-pass":
        if arg.startswith("-") or "://" in arg:  # not a user:password after all
            return None
        return _redact_user_pass(_redact_arg(arg, mark, known), mark)
    if pending == "script":
        return _shell_script(arg, mark, known, depth)
    if pending == "login":  # `vault login TOKEN`, `huggingface-cli login TOKEN`
        if arg.startswith("-"):
            st.pending = "login"  # flags before the token
            return None
        if len(arg) >= 8 and not _HOST.fullmatch(arg) and "/" not in arg:
            return mark(arg)
        return None
    if pending == "set" and is_secret_name(arg):  # `aws configure set aws_secret_access_key V`
        st.pending = "secret"
        return arg
    return None


def redact_argv(argv: list[str], key: bytes | None = None,
                known: KnownSecrets | None = None) -> list[str]:
    """Each argument redacted by the argv grammar: secret-named long flags and the secret
    flags of known tools hide the next (or attached) word, `login TOKEN`, `set NAME V`,
    `sh -c SCRIPT` (its words, recursively); every word is also scanned as text."""
    return _argv([str(a) for a in argv], _marker(key, known), known)


def redact_command_text(text: str, key: bytes | None = None,
                        known: KnownSecrets | None = None) -> str:
    """A shell command line as one string, word by word, its spacing kept."""
    mark = _marker(key, known)
    parts = re.split(r"(\s+)", _text(text, mark, known))  # shapes that span words first
    parts[::2] = _argv(parts[::2], mark, known)
    return "".join(parts)


# ---- documents ----------------------------------------------------------------------------

def _tree(doc: Any, mark: Mark, known: KnownSecrets | None, name: str = "") -> Any:
    if isinstance(doc, dict):
        return {k: (_hide_all(v, mark) if is_secret_name(str(k))
                    else _tree(v, mark, known, str(k))) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_tree(v, mark, known, name) for v in doc]
    if isinstance(doc, str):
        if name and doc and (is_secret_pair(name, doc) or _name_implies_shape(name, doc)):
            return mark(doc)
        return _text(doc, mark, known)
    return doc


def redact_tree(doc: Any, key: bytes | None = None, name: str = "",
                known: KnownSecrets | None = None) -> Any:
    """Any JSON-like tree: a secret-named key hides its whole subtree; strings are scanned."""
    return _tree(doc, _marker(key, known), known, name)


def _hide_all(doc: Any, mark: Mark) -> Any:
    if isinstance(doc, dict):
        return {k: _hide_all(v, mark) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_hide_all(v, mark) for v in doc]
    if doc is None or isinstance(doc, bool) or doc == "":
        return doc
    return mark(str(doc))


# Sections of a stored document whose names come from the user or the workload (parameters,
# tags, environments, run facts): a secret-like name hides its value there. Everywhere else
# the names are prov's own structure (`key` of a change, `digest`, `diff_secrets_redacted`),
# so only value shapes are looked for.
USER_NAMED_SECTIONS = frozenset({"params", "tags", "env", "env_extra", "facts", "runtime",
                                 "name", "labels"})


def _shapes_only(doc: Any, mark: Mark, known: KnownSecrets | None) -> Any:
    if isinstance(doc, dict):
        return {k: (_tree(v, mark, known, str(k)) if k in USER_NAMED_SECTIONS
                    else _shapes_only(v, mark, known)) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_shapes_only(v, mark, known) for v in doc]
    return _text(doc, mark, known) if isinstance(doc, str) else doc


def redact_record(doc: dict[str, Any], key: bytes | None = None,
                  known: KnownSecrets | None = None) -> dict[str, Any]:
    """A run record (or any stored document) with every surface redacted: `command` by the
    argv grammar, user-named sections by name and shape, prov's own fields by shape.
    Idempotent: redacting twice is once."""
    mark = _marker(key, known)
    out = {}
    for k, v in doc.items():
        if k in ("command", "argv") and isinstance(v, list | tuple):
            out[k] = _argv([str(a) for a in v], mark, known)
        elif k in USER_NAMED_SECTIONS:
            out[k] = _tree(v, mark, known, str(k))
        else:
            out[k] = _shapes_only(v, mark, known)
    return out


def redact_diff(text: str, key: bytes | None = None,
                known: KnownSecrets | None = None) -> tuple[str, int]:
    """A `git diff` with secrets hidden, and how many lines were changed.

    Key blocks (PEM, PuTTY) are hidden whole, whatever `+`/`-` starts their lines; the rest
    line by line, so the stored diff keeps its shape (a reader can still see which lines
    changed); the record should say `secrets_redacted: N` when N > 0."""
    mark = _marker(key, known)
    blocks = _blocks(text, mark)
    changed = text.count("\n") - blocks.count("\n") + (blocks != text)
    lines = blocks.splitlines(keepends=True)
    for i, line in enumerate(lines):
        clean = _text(line, mark, known)
        if clean != line:
            lines[i] = clean
            changed += 1
    return "".join(lines), changed
