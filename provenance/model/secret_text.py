"""Credentials found by their structure anywhere in a text (redact.py's text rules).

Each rule is one linear scan, applied in an order where a wider rule goes before the
narrower ones that would split what it hides:
1. values known to be secret (a run's KnownSecrets), wherever they appear;
2. multi-line key blocks (PEM, OpenSSH, PGP, PuTTY), hidden whole from BEGIN to END;
3. URL user-info, found as a URL parser finds it (`scheme://` to the `@` before the host),
   so a password may hold `/`, `:` or an unencoded `@`; and `user:pass@host` without a scheme
   (a proxy as curl takes it);
4. provider token shapes (hf_, sk-, ghp_, AKIA..., Slack, Discord, Vault, JWT, ...), signed
   headers and connection strings (`Pwd=`, Oracle `user/pw@db`, `.pgpass` lines);
5. base64 words that decode to a private key or to JSON holding a secret;
6. `NAME=VALUE`, `NAME: VALUE`, `"name": "value"`, query parameters: the name decides
   (secret_names.is_secret_pair), so `?private_token=`, `Client(api_key='...')` and
   `DB_PASSWORD=` are one rule;
7. long random runs (the high-entropy rule of _is_random_run) and base64 `user:password`;
8. percent-encoded parts (`%3Fapi_key%3D...`) decoded and scanned by 1-7.

Linear time: a quantifier that could run long starts only where its run starts (a negative
lookbehind), every other repetition is bounded, and a value is decoded or parsed once.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

from provenance.model.secret_names import NAME_STEMS, is_secret_name, is_secret_pair

Mark = Callable[..., str]  # mark(secret, named=False): its mark; `named`: found by a name


class Known(Protocol):  # redact.KnownSecrets
    def scrub(self, text: str, mark: Mark) -> str: ...


# ---- provider shapes ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Shape:
    """A credential's pattern; the group named `s` (or the whole match) is hidden. Speed:
    a pattern begins with a literal or a small set of characters wherever it can (the
    regex engine then skips to it); what must not precede the match (`before`) is checked
    on each match instead of by a leading lookbehind, which would cost a test at every
    position; `trigger` is a cheap test of the whole text without which the pattern is
    not run at all; `check` a test of the match."""

    pattern: re.Pattern[str]
    before: Callable[[str, int], bool] | None = None  # (text, match start) -> acceptable
    trigger: Callable[[str], bool] | None = None
    check: Callable[[str], bool] | None = None
    named: bool = False  # the secret is any word a name announces (`password X`), no shape
    needles: tuple[str, ...] = ()  # literals one of which the match holds (_NEEDLES)


def _shape(pattern: str, before: str | Callable[[str, int], bool] | None = None,
           trigger: Callable[[str], bool] | None = None,
           check: Callable[[str], bool] | None = None, named: bool = False,
           needles: tuple[str, ...] = ()) -> _Shape:
    if isinstance(before, str):
        before = _not_after(before)
    return _Shape(re.compile(pattern), before, trigger, check, named, needles)


def _not_after(chars: str) -> Callable[[str, int], bool]:
    """A match may start at `i` unless the character before it is one of `chars`."""
    compiled = re.compile(chars)
    return lambda text, i: i == 0 or compiled.match(text, i - 1) is None


def _after_semicolon(text: str, i: int) -> bool:
    """A connection-string key starts the text or follows `;` (spaces between allowed)."""
    j = i
    while j > 0 and i - j < 8 and text[j - 1] in " \t":
        j -= 1
    return j == 0 or text[j - 1] == ";"


def _has(*needles: str) -> Callable[[str], bool]:
    return lambda text: any(n in text for n in needles)


def _has_lower(*needles: str) -> Callable[[str], bool]:
    return lambda text: any(n in _lower(text) for n in needles)


@functools.lru_cache(maxsize=4)
def _lower(text: str) -> str:  # several triggers test one text (a str caches its hash)
    return text.lower()


def _finds(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda text: compiled.search(text) is not None


_WORD = r"[A-Za-z0-9_]"
_SHAPES = [
    _shape(r"hf_[A-Za-z0-9]{20,}", needles=("hf_",)),  # Hugging Face
    _shape(r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic
           needles=("sk-",)),
    _shape(r"[srp]k_(?:live|test)_[A-Za-z0-9]{10,}", needles=("k_live_", "k_test_")),  # Stripe
    _shape(r"whsec_[A-Za-z0-9]{20,}", needles=("whsec_",)),  # Stripe webhook secret
    _shape(r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",  # GitHub
           needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _shape(r"glpat-[A-Za-z0-9_\-]{16,}|gl(?:dt|rt|ptt|cbt|oas)-[A-Za-z0-9_\-]{16,}",  # GitLab
           needles=("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-")),
    _shape(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}",  # AWS key ids
           needles=("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA")),
    _shape(r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9+/]{40,}={0,2}",  # AWS STS session tokens
           needles=("FwoGZXIvYXdz", "IQoJb3JpZ2lu")),
    _shape(r"xox[abprse]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}",  # Slack tokens
           needles=("xox", "xapp-")),
    _shape(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
           needles=("hooks.slack.com",)),
    _shape(r"https://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]+",
           needles=("discord",)),
    # Discord bot tokens: base64 user id, 6-character timestamp, HMAC
    _shape(r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"
           r"(?![A-Za-z0-9_\-])", before=r"[A-Za-z0-9_\-.]",
           trigger=_finds(r"\.[A-Za-z0-9_\-]{6}\.")),
    _shape(r"AIza[0-9A-Za-z_\-]{30,}", needles=("AIza",)),  # Google API key
    _shape(r"ya29\.[0-9A-Za-z_\-\.]{16,}", needles=("ya29.",)),  # Google OAuth access token
    _shape(r"npm_[A-Za-z0-9]{30,}", needles=("npm_",)),  # npm
    _shape(r"pypi-[A-Za-z0-9_\-]{40,}", needles=("pypi-",)),  # PyPI upload token
    _shape(r"dapi[0-9a-f]{32}(?:-\d)?", needles=("dapi",)),  # Databricks
    _shape(r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",  # Shopify
           needles=("shpat_", "shpss_", "shpca_", "shppa_")),
    _shape(r"do[opr]_v1_[a-f0-9]{64}", needles=("_v1_",)),  # DigitalOcean
    _shape(r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}", needles=("PMAK-",)),  # Postman
    _shape(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}", before=r"[A-Za-z0-9]",
           trigger=_has(".atlasv1.")),  # Terraform Cloud
    _shape(r"AGE-SECRET-KEY-1[0-9A-Z]{58}", needles=("AGE-SECRET-KEY-1",)),  # age
    _shape(r"key-[0-9a-f]{32}", needles=("key-",)),  # Mailgun (old)
    _shape(r"[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}(?![0-9a-f\-])", before=r"[0-9a-f\-]",
           trigger=_finds(r"-[0-9a-f]{8}-[0-9a-f]{8}")),  # Mailgun
    _shape(r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", needles=("SG.",)),  # SendGrid
    _shape(r"glc_[A-Za-z0-9+/=]{32,}", needles=("glc_",)),  # Grafana cloud
    _shape(r"(?:r8|wandb)_[A-Za-z0-9]{30,}", needles=("r8_", "wandb_")),  # Replicate, W&B v2 keys
    _shape(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
           needles=("eyJ",)),
    _shape(r"(?:Bearer|Basic|Digest|Negotiate)\s{1,16}(?P<s>[A-Za-z0-9_\-\.=+/~]{8,})",
           before=_WORD, needles=("Bearer", "Basic", "Digest", "Negotiate")),
    _shape(r"[Tt]oken\s{1,16}(?P<s>[A-Za-z0-9_\-\.=+/~]{16,})", before=_WORD,
           needles=("Token", "token")),
    # W&B API keys are 40 hex (a git commit's shape), so only near a WANDB name.
    _shape(r"[Ww](?i:andb)[A-Za-z0-9_.\-]{0,64}[\"']?\s{0,8}(?:[=:]|\s)\s{0,8}[\"']?"
           r"(?P<s>[0-9a-f]{40})\b", trigger=_has_lower("wandb")),
    # .netrc: `machine HOST login USER password SECRET`; prose: `the password is SECRET`
    _shape(r"[Pp](?i:ass(?:word|wd|phrase)(?:\s{1,8}is)?\s{1,8})(?P<s>[^\s\"']{1,4096})",
           before=_WORD, trigger=_has_lower("pass"), named=True),
    # ODBC / ADO / JDBC / Azure connection strings: `...;Pwd=SECRET;`, `AccountKey=...`
    _shape(r"(?:[Pp](?i:wd|assword)|[Aa](?i:ccountkey)|[Ss](?i:haredaccess(?:key|signature)))"
           r"\s{0,8}=\s{0,8}(?P<s>\{[^}]{0,1024}\}|[^;\s]{1,4096})",
           before=_after_semicolon, trigger=_has_lower("pwd", "pass", "accesskey", "accesssig"),
           named=True),
    # HTTP auth and cookie headers take their whole value
    _shape(r"(?:[Pp](?i:roxy-authorization)|[Aa](?i:uthorization))\s{0,8}[:=]\s{0,8}"
           r"(?P<s>[^\r\n\"']{1,4096})", before=_WORD, trigger=_has_lower("authorization")),
    _shape(r"(?:[Ss](?i:et-cookie)|[Cc](?i:ookie))\s{0,8}:\s{0,8}(?P<s>[^\r\n\"']{1,4096})",
           before=_WORD, trigger=_has_lower("cookie")),
    # .pgpass `host:port:database:user:PASSWORD`, one per line
    _shape(r"(?m:^[^:\s]{1,255}:(?:\d{1,5}|\*):[^:\s]{1,255}:[^:\s]{1,255}:)(?P<s>\S{1,1024})$",
           trigger=_finds(r":(?:\d{1,5}|\*):")),
    # Telegram bot tokens `123456789:AA...`
    _shape(r"[0-9]{6,12}:(?P<s>AA[A-Za-z0-9_\-]{30,})", before=r"[0-9]", trigger=_has(":AA")),
    # minisign / signify secret keys: the base64 line after its `untrusted comment`
    _shape(r"[Uu](?i:ntrusted comment:[^\r\n]{0,256}secret key[^\r\n]{0,256}\r?\n)"
           r"(?P<s>[A-Za-z0-9+/]{40,}={0,2})", trigger=_has_lower("untrusted comment")),
    # Vault tokens: `hvs.`/`hvb.`/`hvr.` (new) and `s.` + 24 characters (old), the old form
    # only when random (`s.getAttributeByNameX12` in a traceback is code)
    _shape(r"(?:hv[sbr]\.[A-Za-z0-9_\-]{24,}|[sbr]\.[A-Za-z0-9]{24})(?![A-Za-z0-9_\-.])",
           before=r"[A-Za-z0-9_.\-]", trigger=_finds(r"[sbr]\."),
           check=lambda t: t.startswith("hv") or (any(c.isdigit() for c in t)
                                                  and _class_changes(t[2:]) >= 0.4 * (len(t) - 2))),
    # base64 words that decode to a private key, or to JSON naming or holding a secret
    _shape(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{8,}={0,2}", before=r"[A-Za-z0-9+/=]",
           needles=("LS0tLS1CRUdJTi",),
           check=lambda t: _is_b64_private_key(t)),
    _shape(r"eyJ[A-Za-z0-9+/_\-]{12,}={0,2}(?![A-Za-z0-9+/=_\-.])", before=r"[A-Za-z0-9+/=_\-.]",
           needles=("eyJ",),
           check=lambda t: _is_b64_secret_json(t)),
]

_SHAPES_WITHOUT_NEEDLES = [shape for shape in _SHAPES if not shape.needles]
_GATE_MAX = 4096  # the needle scan tests every position: worth it on short texts only
# Every needle at every position (a lookahead: occurrences may overlap), in one scan.
_NEEDLES = re.compile("(?=(" + "|".join(re.escape(n) for n in sorted(
    {n for shape in _SHAPES for n in shape.needles}, key=len, reverse=True)) + "))")


@dataclass(frozen=True)
class _UserPassword:
    """`user<sep>password@host` found at its separator, the user checked behind it: Oracle /
    EZConnect `user/PASSWORD@db` (`vllm/vllm-openai@sha256:...` is an image), and
    `user:password@host` without a scheme (HTTPS_PROXY=me:pw@proxy:3128, as curl takes it)."""

    pattern: re.Pattern[str]  # from the separator to the `@`; the password is group `s`
    user_chars: re.Pattern[str]  # a user's characters (matched backwards, at most 66)
    user_first: str  # characters a user may start with
    not_before: str  # characters that may not precede the user
    needles: tuple[str, ...]


_ORACLE = _UserPassword(
    re.compile(r"/(?P<s>[^\s/@\"']{1,256})@(?!sha\d+:)(?=[A-Za-z0-9\[(/])"),
    re.compile(r"[\w$#]{0,30}"), string.ascii_letters, "/.:@$#-", ("/", "@"))
_NO_SCHEME = _UserPassword(
    re.compile(r":(?P<s>[^\s@/:\"'<>]{1,256})@(?=(?:[A-Za-z0-9\-]{1,63}\.){1,16}[A-Za-z]{2,63}\b"
               r"|localhost\b|\d{1,3}(?:\.\d{1,3}){3}\b)"),
    re.compile(r"[A-Za-z0-9._~%+\-]{0,65}"), string.ascii_letters + string.digits + "._~%+-",
    ".+-%:/@~", (":", "@"))

# ---- key blocks ---------------------------------------------------------------------------
# Hidden whole from the first line to the last (each line of a diff may start with `+`, `-`
# or a space: the block is still one block).
_BLOCK_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
                          r"|PuTTY-User-Key-File-\d{1,3}:")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}-----")
_PUTTY_END = re.compile(r"Private-(?:MAC|Hash):[ \t]{0,8}[0-9A-Fa-f]{0,128}")

# ---- URLs ---------------------------------------------------------------------------------
_SCHEME_BACK = re.compile(r"[A-Za-z0-9+.\-]{0,33}")  # matched on the reversed text
_AUTHORITY = re.compile(r"(?:[^\s\"'<>`:]|:(?!//)){0,4096}")
_AUTHORITY_ANY = re.compile(r"[^\s\"'<>`]{0,4096}")
_URL_USER_END = re.compile(r"[/?#]")
_AT_HOST = re.compile(r"@(?:[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,16}|localhost"
                      r"|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?(?=[/?#,]|$)")

# ---- NAME=VALUE ---------------------------------------------------------------------------
# Found at the stems every secret name holds (secret_names.NAME_STEMS): the name around a
# stem, then a separator, then the value. Text without a stem costs one scan.
def _factored(words: tuple[str, ...]) -> str:
    """`k(?:ey)|p(?:as|w)|...`: alternatives grouped by their first letter, which the regex
    engine tests once per position instead of once per word (3x faster than `key|pas|...`)."""
    first: dict[str, list[str]] = {}
    for w in words:
        first.setdefault(w[0], []).append(re.escape(w[1:]))
    return "|".join(f"{c}(?:{'|'.join(rest)})" for c, rest in first.items())


_STEM = re.compile(_factored(NAME_STEMS))  # in _ascii_lower(text): IGNORECASE is 10x slower
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-]{0,130}")
_NAME = re.compile(r"(?:--?)?[A-Za-z_][A-Za-z0-9_.\-]{0,127}")
_SEPARATOR = re.compile(r"[\"']?(?P<sep>\s{0,8}(?:=|:(?!//))\s{0,8})")
_ASSIGN_VALUE = re.compile(r"\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|\([^()\n]{0,4096}\)"
                           r"|\[[^\[\]\n]{0,4096}\]|[^\s&;,\"'}\])]{1,4096}")  # (a tuple)

# ---- random runs and base64 words ---------------------------------------------------------
# One scan for maximal runs of the base64 alphabet; each run is judged whole (a base64 blob,
# an AWS secret key, base64 `user:password`) and by its letter-and-digit parts (tokens).
_B64_ALPHABET_RUN = re.compile(r"[A-Za-z0-9+/=]{12,}")
_ALNUM_PART = re.compile(r"[A-Za-z0-9]{16,}")
_B64_JSON_LIMIT = 1 << 16  # larger base64 JSON is left to the random-run rule
_WORDLIKE = re.compile(r"[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")
_HEX = frozenset("0123456789abcdefABCDEF")
_BASE32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_SHA256_BASE32_LEN = 52  # 256 bits in base32, unpadded: a digest, not a seed

# ---- percent-encoding ---------------------------------------------------------------------
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
_PCT_RUN = re.compile(r"[^\s\"'<>]+")
_PCT_PART = re.compile(r"[?&;#]")


def _class_changes(run: str) -> int:
    """How often the character class (lower, upper, digit) changes along `run`: random
    tokens change class at about 60% of positions, words and CamelCase names rarely."""
    def cls(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2
    return sum(cls(a) != cls(b) for a, b in zip(run, run[1:], strict=False))


def is_random_run(run: str) -> bool:
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
    """A base64 blob: `+` or `=` padding in it (paths have neither) and random letters; or,
    with `/` only (an AWS secret key), 30+ characters whose `/`-separated parts are mostly
    not words and one of them 12+ characters long (a path is words or short parts:
    `models/Qwen/Qwen3/snapshots/c1899de2...` is kept)."""
    if len(token) < 24:
        return False
    letters = re.sub(r"[^A-Za-z0-9]", "", token[:256])
    if "+" in token or token.endswith("="):
        return len(letters) >= 20 and is_random_run(letters[:64] if len(letters) >= 32
                                                    else letters)
    if "/" not in token or len(token) < 30:
        return False
    parts = [p for p in token[:256].split("/") if len(p) >= 3]
    wordlike = sum(bool(_WORDLIKE.fullmatch(p)) for p in parts)
    if wordlike * 2 >= len(parts) or max(map(len, parts), default=0) < 12:
        return False  # words, or short parts only: a path
    sample = letters[:64]
    return (any(c.islower() for c in sample) and any(c.isupper() for c in sample)
            and _class_changes(sample) >= 0.4 * len(sample))


def _is_basic_credentials(word: str) -> bool:
    """base64 of `user:password` (the Basic-auth form), standing alone in a value."""
    if len(word) % 4 or len(word) > 1024:
        return False
    try:
        raw = base64.b64decode(word, validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    user, sep, password = raw.partition(":")
    return bool(sep and user and password and raw.isprintable() and " " not in raw)


def _b64_decode(word: str) -> bytes | None:
    word = word.rstrip("=")
    try:
        return base64.b64decode(word.replace("-", "+").replace("_", "/")
                                + "=" * (-len(word) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_b64_private_key(word: str) -> bool:
    head = _b64_decode(word[:80 - 80 % 4]) or b""
    return b"PRIVATE" in head or b"ENCRYPTED" in head


def _is_b64_secret_json(word: str) -> bool:
    """base64 of a JSON object that names or holds a secret (a wrapped credentials file:
    `{"client_id": ..., "client_secret": ...}`, a docker `auths` document)."""
    if len(word) > _B64_JSON_LIMIT:
        return False
    raw = _b64_decode(word)
    try:
        doc = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    try:
        return isinstance(doc, dict) and _holds_secret(doc)
    except RecursionError:
        return True


def _holds_secret(doc: Any, name: str = "") -> bool:
    if isinstance(doc, dict):
        return any(_holds_secret(v, str(k)) for k, v in doc.items())
    if isinstance(doc, list):
        return any(_holds_secret(v, name) for v in doc)
    if isinstance(doc, str) and doc:
        return is_secret_pair(name, doc) or scan(doc, lambda s, named=False: "\0") != doc
    return False


# ---- the passes ---------------------------------------------------------------------------

def _apply(shape: _Shape, text: str, mark: Mark) -> str:
    if shape.trigger is not None and not shape.trigger(text):
        return text

    def one(m: re.Match[str]) -> str:
        whole = m.group(0)
        if shape.before is not None and not shape.before(text, m.start()):
            return whole
        if shape.check is not None and not shape.check(whole):
            return whole
        if "s" in shape.pattern.groupindex and m.group("s") is not None:
            start, end = (i - m.start() for i in m.span("s"))
            return whole[:start] + mark(m.group("s"), shape.named) + whole[end:]
        return mark(whole, shape.named)
    return shape.pattern.sub(one, text)


def key_blocks(text: str, mark: Mark) -> str:
    """PEM, OpenSSH, PGP and PuTTY private keys hidden as whole blocks, BEGIN to END (to
    the end of the text when the END is missing). Linear: each block's END is searched
    once, and the next BEGIN only after it."""
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
    `/`, `?`, `#`, `,` (a host list) or the end), else at the last `@` before the first `/`,
    `?` or `#` that follows an `@`; -1 when there is none."""
    first_at = authority.find("@")
    if first_at < 0:
        return -1
    for m in _AT_HOST.finditer(authority, first_at):
        return m.start()
    cut = _URL_USER_END.search(authority, first_at)
    return authority.rfind("@", 0, cut.start() if cut else len(authority))


def _schemes(text: str) -> list[int]:
    """Where each `scheme://` of `text` ends: found at its `://`, the scheme (a letter, then
    up to 31 of `A-Za-z0-9+.-`, not inside a longer such run) checked behind it."""
    ends, reverse = [], None
    i = text.find("://")
    while i >= 0:
        if reverse is None:
            reverse = text[::-1]
        behind = len(text) - i
        run = _SCHEME_BACK.match(reverse, behind).end() - behind
        if 0 < run <= 32 and text[i - run].isalpha() and text[i - run].isascii():
            ends.append(i + 3)
        i = text.find("://", i + 3)
    return ends


def _urls(text: str, mark: Mark) -> str:
    """URL user-info (`scheme://USER:PASSWORD@host`, `scheme://TOKEN@host`) hidden, also
    when the password holds `/`, `:` or an unencoded `@` (see _user_info_end)."""
    if "://" not in text or "@" not in text:
        return text
    out, pos = [], 0
    for begin in _schemes(text):
        if begin < pos:
            continue
        authority = _AUTHORITY.match(text, begin).group(0)
        if "@" not in authority and text.startswith("//", begin + len(authority) + 1):
            # `user://@host`: a password beginning `//` reads like a new `scheme://`
            authority = _AUTHORITY_ANY.match(text, begin).group(0)
        at = _user_info_end(authority)
        userinfo = authority[:max(at, 0)]
        user = userinfo.partition(":")[0]
        if (not userinfo or any(c in user for c in "/?#")
                or (":" not in userinfo and len(userinfo) < 8)
                or at + 1 >= len(authority)
                or not (authority[at + 1].isalnum() or authority[at + 1] == "[")):
            continue
        out += [text[pos:begin], mark(userinfo), "@"]
        pos = begin + at + 1
    out.append(text[pos:])
    return "".join(out)


def _user_password(rule: _UserPassword, text: str, mark: Mark) -> str:
    """The passwords of `rule` hidden where a user name stands right behind the separator
    (found by matching the reversed text, so each candidate costs its own length)."""
    if not all(n in text for n in rule.needles):
        return text
    reverse = text[::-1]

    def one(m: re.Match[str]) -> str:
        behind = len(text) - m.start()
        start = m.start() - (rule.user_chars.match(reverse, behind).end() - behind)
        user = text[start:m.start()]
        if (not user or len(user) > 64 or user[0] not in rule.user_first or user == "mailto"
                or (start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"
                                   or text[start - 1] in rule.not_before))):
            return m.group(0)
        return m.group(0)[:1] + mark(m.group("s"), True) + "@"
    return rule.pattern.sub(one, text)


def _ascii_lower(text: str) -> str:
    """`text` with ASCII letters lowered, every index kept (str.lower may change lengths:
    non-ASCII text goes through latin-1 with one `?` per other character, as fast)."""
    if text.isascii():
        return text.lower()
    return text.encode("latin-1", "replace").lower().decode("latin-1")


def _assignments(text: str, mark: Mark) -> str:
    """`NAME=VALUE`, `NAME: VALUE`, `"NAME": "VALUE"`: a value hidden when its name says
    secret. Found at the stems of secret names (key, pass, tok, ...): the name is the run
    of name characters around the stem; only a secret's value is consumed, so
    `c=Client(api_key='...')` finds `api_key` after `c=`."""
    out, pos, done = [], 0, 0
    reverse = None
    for stem in _STEM.finditer(_ascii_lower(text)):
        if stem.start() < done:  # a stem of a name already judged
            continue
        if reverse is None:
            reverse = text[::-1]
        behind = len(text) - stem.start()
        start = stem.start() - (_NAME_CHARS.match(reverse, behind).end() - behind)
        end = _NAME_CHARS.match(text, stem.start()).end()
        done = end
        name = _NAME.fullmatch(text, start, end)
        if name is None or start < pos:
            continue
        if start > 0 and text[start - 1] in "\"'":  # `"api_key": ...`
            start -= 1
        sep = _SEPARATOR.match(text, end)
        value = _ASSIGN_VALUE.match(text, sep.end()) if sep else None
        if value is None:
            continue
        raw = value.group(0)
        bare = raw[1:-1] if raw[:1] in "\"'" and raw[-1:] == raw[:1] and len(raw) > 1 else raw
        if not bare or bare.startswith("<redacted") or not is_secret_pair(name.group(0), bare):
            continue
        quote = raw[0] if bare != raw else ""
        out += [text[pos:value.start()], quote, mark(bare, True), quote]
        pos = done = value.end()
    out.append(text[pos:])
    return "".join(out)


def _random_tokens(text: str, mark: Mark) -> str:
    """Random runs (is_random_run), base64 blobs and base64 `user:password` hidden."""
    def run(m: re.Match[str]) -> str:
        token = m.group(0)
        if _is_random_b64(token) or _is_basic_credentials(token):
            return mark(token)
        if len(token) < 16:
            return token
        return _ALNUM_PART.sub(lambda p: mark(p.group(0)) if is_random_run(p.group(0))
                               else p.group(0), token)
    return _B64_ALPHABET_RUN.sub(run, text)


def _percent_encoded(text: str, mark: Mark) -> str:
    """A percent-encoded part (`next=%2Fapi%3Fapi_key%3DSECRET`) decoded and scanned; the
    part (its value after `=`) hidden when the decoded text holds a secret."""
    if _PCT.search(text) is None:
        return text

    def part(piece: str) -> str:
        name, eq, value = piece.partition("=")
        encoded = value if eq else piece
        decoded = unquote(encoded)
        if decoded == encoded or _structural(decoded, mark) == decoded:
            return piece
        return f"{name}={mark(encoded)}" if eq else mark(encoded)

    def run(m: re.Match[str]) -> str:
        if _PCT.search(m.group(0)) is None:
            return m.group(0)
        pieces = _PCT_PART.split(m.group(0))
        seps = _PCT_PART.findall(m.group(0))
        done = [part(p) if "%" in p else p for p in pieces]
        return "".join(p + s for p, s in zip(done, [*seps, ""], strict=True))

    return _PCT_RUN.sub(run, text)


def _structural(text: str, mark: Mark) -> str:
    text = key_blocks(text, mark)
    text = _urls(text, mark)
    if len(text) > _GATE_MAX:  # each literal-prefixed pass skips to its literal: fast
        shapes, present = _SHAPES, None
    else:  # a short text: one scan for all of them instead of one call each
        present = set(_NEEDLES.findall(text))
        shapes = _SHAPES if present else _SHAPES_WITHOUT_NEEDLES
    for shape in shapes:
        if present is None or not shape.needles or not present.isdisjoint(shape.needles):
            text = _apply(shape, text, mark)
    text = _user_password(_ORACLE, text, mark)
    text = _user_password(_NO_SCHEME, text, mark)
    text = _assignments(text, mark)
    return _random_tokens(text, mark)


def scan(text: str, mark: Mark, known: Known | None = None) -> str:
    """`text` with every credential the rules above recognise replaced by `mark(secret)`."""
    if known is not None:
        text = known.scrub(text, mark)
    return _percent_encoded(_structural(text, mark), mark)


# ---- JSON-like trees ----------------------------------------------------------------------

def tree(doc: Any, mark: Mark, known: Known | None, name: str = "") -> Any:
    """A JSON-like tree: a secret-named key hides its whole subtree; strings are scanned."""
    if isinstance(doc, dict):
        return {k: (hide_all(v, mark) if is_secret_name(str(k))
                    else tree(v, mark, known, str(k))) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [tree(v, mark, known, name) for v in doc]
    if isinstance(doc, str):
        if name and doc and is_secret_pair(name, doc):
            return mark(doc, True)
        return scan(doc, mark, known)
    return doc


def hide_all(doc: Any, mark: Mark) -> Any:
    if isinstance(doc, dict):
        return {k: hide_all(v, mark) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [hide_all(v, mark) for v in doc]
    if doc is None or isinstance(doc, bool) or doc == "":
        return doc
    return mark(str(doc), True)
