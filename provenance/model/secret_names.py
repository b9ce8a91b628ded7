"""Which names hold secrets: `HF_TOKEN`, `api.key`, `X-Api-Key`, `--db-password`.

One rule for every place a name meets a value (environment variables, `--flag value`,
`KEY=VALUE`, `key: value`, JSON keys, query parameters, run facts): the words of the name
(split at `_ - . space` and camelCase) are looked up, and a short list of known non-secret
names keeps behaviour variables visible. Standard library only (see redact.py).
"""

from __future__ import annotations

import functools
import re

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

# Whole words of a name that mark a secret.
_SECRET_WORDS = frozenset({
    "KEY", "KEYS", "PASS", "PWD", "TOK", "AUTH", "AUTHORIZATION", "COOKIE", "COOKIES", "SIG",
    "SIGNATURE", "SESSION", "SESSIONID", "DSN", "CRED", "CREDS", "PAT", "SAS", "JWT", "BEARER",
    "OTP", "WEBHOOK", "PW", "PASSWD", "PASSWORD", "SECRET", "TOKEN", "PRIVATE", "TOTP", "HOTP",
    "MFA", "PASSCODE", "MNEMONIC", "PASSPHRASE", "PSK",
})  # not CERT, PEM or NETRC: PIP_CERT, SSL_CERT_FILE and NETRC name files, not secrets
# Inside a word (PGPASSWORD, HFTOKEN, APIKEY): these mark a secret wherever they appear.
# TOKEN is waived before IZ/IS/S (TOKENIZER, TOKENIS..., MAX_TOKENS) and before words that
# count, list or score tokens (token_ids, token_count, the OpenAI API's token_logprobs and
# text_offset's neighbours) rather than hold one.
SECRET_INFIXES = ("PASSW", "PASSPHRASE", "SECRET", "APIKEY", "ACCESSKEY", "PRIVATEKEY",
                  "SECRETKEY", "CREDENTIAL", "LICENSEKEY", "AUTHTOKEN", "SESSIONTOKEN",
                  "MNEMONIC", "TOKEN")
_TOKEN_COUNTS = ("IDS?|COUNT|LEN|LENGTH|BUDGET|LIMIT|TYPES?|LOGPROBS?|PROBS?|STRS?|TEXTS?|BYTES"
                 "|OFFSETS?|INDEX|INDICES|POS|POSITIONS?")
_SECRET_INFIX = re.compile(
    "|".join(SECRET_INFIXES[:-1])
    + r"|TOKEN(?!IZ|IS|S(?:$|_))(?!_?(?:" + _TOKEN_COUNTS + r")(?:$|_))"
)
_COUNTED_TOKENS = re.compile(r"(?:^|_)TOKENS?_(?:" + _TOKEN_COUNTS + r")(?=_|$)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Whole words that hold a secret infix but name software: a run's imported modules and
# mapped libraries are keyed by such names (code.modules.tiktoken, runtime.libs._tiktoken...)
_SOFTWARE_WORDS = {
    "TIKTOKEN": "OpenAI's BPE tokenizer library (vLLM imports it): a module name",
}
# A last word that says the value tells where the secret is or how it behaves, not what
# it is: `--password-stdin`, `PASSWORD_FILE=/run/secrets/db`, `--api-key-env NAME`,
# `TOKEN_TTL=3600` (a path, a variable's name, a number).
_WHERE_NOT_WHAT = frozenset({"STDIN", "FILE", "FILES", "PATH", "DIR", "FD", "ENV", "VAR", "CMD",
                             "COMMAND", "HELPER", "PROMPT", "LENGTH", "LEN", "TTL", "TIMEOUT",
                             "EXPIRY", "EXPIRES", "LIFETIME", "ROTATION", "ENABLED"})
# Words that name a secret only when the value is not a plain number: `seed=42` is the
# sampler's seed (identity), `totp_seed=JBSW...` or `wallet_seed=...` is a secret.
_WEAK_SECRET_WORDS = frozenset({"SEED", "SEEDS"})
_NUMBER = re.compile(r"\s*-?\d{1,40}\s*")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}")
_HEX40 = re.compile(r"[0-9a-fA-F]{40}")


def words(name: str) -> list[str]:
    """The words of a name: `X-Api-Key` -> [X, Api, Key], `apiKey` -> [api, Key]."""
    return [w for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub("_", name)) if w]


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """A name whose value is a secret (`HF_TOKEN`, `api.key`, `X-Api-Key`, `hf_tok`)."""
    name = name.strip().strip("\"'")
    if name.upper() in _NOT_SECRET_UPPER:
        return False
    upper = [w.upper() for w in words(name) if w.upper() not in _SOFTWARE_WORDS]
    if len(upper) > 1 and upper[-1] in _WHERE_NOT_WHAT:
        return False
    joined = _COUNTED_TOKENS.sub("", "_".join(upper))  # token_ids, num_tokens: not secrets
    if any(w in _SECRET_WORDS for w in joined.split("_")):
        return True
    return bool(_SECRET_INFIX.search(joined))


def is_secret_pair(name: str, value: str) -> bool:
    """Whether `value` under `name` is a secret by its name: is_secret_name, a weak word
    (seed) holding something other than a number, or a name that makes a shape a secret
    (name_implies_shape)."""
    if is_secret_name(name) or name_implies_shape(name, value):
        return True
    if _NUMBER.fullmatch(value):
        return False
    return any(w.upper() in _WEAK_SECRET_WORDS for w in words(name.strip().strip("\"'")))


def name_implies_shape(name: str, value: str) -> bool:
    """Values whose shape is a secret only under a telling name (a 40-hex W&B key, a UUID
    API key): alone, both look like a commit id or a request id."""
    upper = name.upper()
    value = value.strip()
    if "WANDB" in upper and _HEX40.fullmatch(value):
        return True
    return bool(_UUID.fullmatch(value)) and ("KEY" in upper or "LICENSE" in upper)


# Every secret name holds one of these (case-insensitive): the text rules look for names
# only around them (secret_text._assignments). tests/hostile/model/test_redact.py checks
# that each secret word and infix contains one.
NAME_STEMS = ("key", "pas", "pw", "tok", "secret", "auth", "cookie", "sig", "session", "dsn",
              "cred", "pat", "sas", "jwt", "bearer", "otp", "webhook", "private", "mfa",
              "mnemonic", "psk", "seed", "license", "wandb")
