"""Planted secrets, generated in code: every shape issue #19 names, in every grammar.

Each case is (surface, planted, secret): `planted` is what the user typed or set (an env
value, an argv list, a tag), `secret` the substring that must never appear anywhere. The
random parts come from a seeded generator, so a leak is found by a plain bytes grep and a
run is reproducible.
"""

from __future__ import annotations

import base64
import random
import string
import uuid
from dataclasses import dataclass

_R = random.Random(19)
_ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = _ALNUM) -> str:
    """Random characters; mixed-case alphanumerics always include two digits and both cases."""
    while True:
        s = "".join(_R.choice(alphabet) for _ in range(n))
        if alphabet != _ALNUM or n < 8 or (sum(c.isdigit() for c in s) >= 2
                                          and any(c.islower() for c in s)
                                          and any(c.isupper() for c in s)):
            return s


def hexs(n: int) -> str:
    return rand(n, "0123456789abcdef")


def word(n: int = 10) -> str:
    """A low-entropy secret (lowercase letters and digits): found by name or grammar only."""
    return rand(n, string.ascii_lowercase) + str(_R.randint(10, 99))


@dataclass(frozen=True)
class Shape:
    label: str
    value: str  # the planted value
    secret: str  # what must never appear


def value_shapes() -> list[Shape]:
    """Credentials recognisable by their shape, whatever name holds them."""
    user, pw = word(6), word(9)
    basic = base64.b64encode(f"{user}:{pw}".encode()).decode()
    slash_pw = f"{word(5)}/{word(5)}"
    out = [
        ("hugging face", (s := "hf_" + rand(34)), s),
        ("openai", (s := "sk-proj-" + rand(40)), s),
        ("anthropic", (s := "sk-ant-api03-" + rand(40)), s),
        ("stripe live", (s := "sk_live_" + rand(24)), s),
        ("stripe restricted", (s := "rk_live_" + rand(24)), s),
        ("github classic", (s := "ghp_" + rand(36)), s),
        ("github fine-grained", (s := "github_pat_" + rand(22) + "_" + rand(59)), s),
        ("gitlab", (s := "glpat-" + rand(20)), s),
        ("aws key id", (s := "AKIA" + rand(16, string.ascii_uppercase + "234567")), s),
        ("slack bot", (s := f"xoxb-{_R.randint(10**11, 10**12)}-{rand(24)}"), s),
        ("slack webhook", (s := f"https://hooks.slack.com/services/T{rand(8).upper()}/"
                                f"B{rand(8).upper()}/{rand(24)}"), s[30:]),
        ("google api", (s := "AIza" + rand(35)), s),
        ("google oauth", (s := "ya29." + rand(40)), s),
        ("npm", (s := "npm_" + rand(36)), s),
        ("pypi", (s := "pypi-AgEIcHlwaS5vcmc" + rand(50)), s),
        ("databricks", (s := "dapi" + hexs(32)), s),
        ("shopify", (s := "shpat_" + hexs(32)), s),
        ("digitalocean", (s := "dop_v1_" + hexs(64)), s),
        ("age", (s := "AGE-SECRET-KEY-1" + rand(58, string.ascii_uppercase + string.digits)), s),
        ("mailgun key-hex", (s := "key-" + hexs(32)), s),
        ("sendgrid", (s := f"SG.{rand(22)}.{rand(43)}"), s),
        ("jwt", (s := f"eyJhbGciOiJIUzI1NiJ9.eyJ{rand(20)}.{rand(30)}"), s[-30:]),
        ("pem", "-----BEGIN OPENSSH PRIVATE KEY-----" + (s := rand(40)), s),
        ("high-entropy run", (s := rand(40)), s),
        ("url password", f"https://{user}:{(s := word(12))}@mirror.internal/simple", s),
        ("url password with /", f"https://{user}:{slash_pw}@mirror.internal/simple", slash_pw),
        ("url token userinfo", f"https://{(s := 'x' + word(15))}@git.internal/r.git", s),
        ("gitlab private_token query", f"https://gl.internal/api?private_token={(s := word(14))}",
         s),
        ("s3 presigned", f"https://b.s3.amazonaws.com/o?X-Amz-Credential=AK%2F1&X-Amz-Signature="
                         f"{(s := hexs(64))}", s),
        ("sas sig query", f"https://a.blob.core.windows.net/c?sv=1&sig={(s := word(20))}", s),
        ("netrc line", f"machine hf.co login {user} password {(s := word(11))}", s),
        ("odbc Pwd=", f"Driver={{ODBC 18}};Server=db;Uid={user};Pwd={(s := word(10))};", s),
        ("basic auth base64", f"Authorization: Basic {basic}", basic),
        ("base64 user:pass alone", basic, basic),
        ("bearer", f"Bearer {(s := word(20))}", s),
    ]
    return [Shape(label, value, secret) for label, value, secret in out]


# Env variables prov records (relevant prefixes) holding a secret only their NAME reveals,
# or only the name and shape together do.
def name_shapes() -> list[Shape]:
    return [
        Shape("secret name", f"VLLM_API_KEY={(s := word())}", s),
        Shape("password name", f"TORCH_DB_PASSWORD={(s := word())}", s),
        Shape("hf token name", f"HF_TOKEN={(s := word())}", s),
        Shape("wandb 40-hex", f"VLLM_WANDB_KEY_ALT={(s := hexs(40))}", s),
        Shape("wandb 40-hex under WANDB only", f"RAY_WANDB={(s := hexs(40))}", s),
        Shape("uuid api key", f"NVIDIA_LICENSE_KEY={(s := str(uuid.UUID(int=_R.getrandbits(128))))}",
              s),
        Shape("credential name", f"NCCL_CRED={(s := word())}", s),
        Shape("session cookie", f"HF_COOKIE={(s := word())}", s),
    ]


# argv grammars: (label, argv, secret)
def argv_shapes() -> list[tuple[str, list[str], str]]:
    return [
        ("--flag=value", ["--api-key=" + (s := word())], s),
        ("--flag value", ["--hf-tok", (s := word())], s),
        ("--password value", ["--password", (s := word())], s),
        ("-pVALUE", ["mysql", "-p" + (s := word())], s),
        ("-u user:pass", ["curl", "-u", f"me:{(s := word())}"], s),
        ("-uuser:pass", ["curl", f"-ume:{(s := word())}"], s),
        ("KEY=VALUE", ["env", f"DB_PASSWORD={(s := word())}", "true"], s),
        ("Authorization: Token", ["curl", "-H", f"Authorization: Token {(s := word(20))}"], s),
        ("X-Api-Key header", ["curl", "-H", f"X-Api-Key: {(s := word())}"], s),
        ("--header=PRIVATE-TOKEN", ["curl", f"--header=PRIVATE-TOKEN: {(s := word())}"], s),
        ("--set api.key=", ["helm", "--set", f"api.key={(s := word())}"], s),
        ("-e WANDB_API_KEY=", ["docker", "run", "-e", f"WANDB_API_KEY={(s := word())}"], s),
        ("JSON argument", ["tool", f'{{"api_key": "{(s := word())}", "n": 1}}'], s),
        ("JSON nested", ["tool", f'{{"auth": {{"user": "u", "password": "{(s := word())}"}}}}'],
         s),
        ("--tag note=password", ["x", f"note=the password is {(s := word())}"], s),
        ("url in argv", ["git", "clone", f"https://me:{(s := word())}@gh.internal/r.git"], s),
        ("query in argv", ["curl", f"https://api.internal/v1?access_token={(s := word())}"], s),
        ("--token=shape", ["x", "--token=" + (s := "ghp_" + rand(36))], s),
        ("positional token", ["x", (s := "hf_" + rand(34))], s),
        ("--user user:pass", ["wget", "--user", f"me:{(s := word())}"], s),
    ]


# prov's own options: --param/--tag values (name, value, secret)
def param_shapes() -> list[tuple[str, str, str]]:
    return [
        ("hf_tok", (s := word()), s),
        ("openai.api_key", (s := word()), s),
        ("note", f"db password {(s := word())}", s),
        ("endpoint", f"https://u:{(s := word())}@e.internal", s),
        ("auth_header", f"Bearer {(s := word(20))}", s),
    ]


# Behaviour variables that must stay visible (name, value).
KNOWN_NOT_SECRET = [
    ("TOKENIZERS_PARALLELISM", "false"),
    ("VLLM_MAX_NUM_BATCHED_TOKENS", "8192"),
    ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1"),
    ("TRANSFORMERS_VERBOSITY", "error"),
    ("NCCL_ALGO", "Ring"),
    ("OMP_NUM_THREADS", "4"),
    ("HF_ENDPOINT", "https://hf-mirror.internal"),
    ("PIP_INDEX_URL", "https://pypi.internal/simple"),
    ("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt"),
    ("CUDA_CACHE_PATH", "/root/.nv/ComputeCache"),
    ("TORCH_CUDA_ARCH_LIST", "8.0;9.0"),
    ("VLLM_ATTENTION_BACKEND", "FLASH_ATTN"),
    # Triton names a cache folder by the base32 sha256 of the kernel: a digest, kept
    ("TRITON_CACHE_DIR",
     "/root/.triton/cache/FVYRMQVXE2YEIALCPSU7XLBS6XEFGD5RSA6MJWYCEWDRPEQ2JCAQ"),
]
