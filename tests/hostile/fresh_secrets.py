"""The second pass's planted secrets (issue #30): shapes neither the issue nor
secrets_catalog.py names, generated in code as an attacker would plant them.

Each Planted is (label, where, planted, secret): `where` says how the run receives it
- "env": a value under a harmless name prov records (VLLM_FRESH_<i>): found by structure;
- "env-name": `NAME=VALUE` under a recorded prefix: found by the name;
- "argv": words of the command line: found by grammar;
- "tag": a `--tag/--param NAME=VALUE` pair;
and `secret` is the substring that must never appear on any surface prov writes. The random
parts come from a seeded generator: a leak is found by a plain bytes grep.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass

_R = random.Random(30)
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"


def rand(n: int, alphabet: str = _ALNUM) -> str:
    """Random characters; mixed-case alphanumerics always hold two digits and both cases."""
    while True:
        s = "".join(_R.choice(alphabet) for _ in range(n))
        if alphabet != _ALNUM or n < 8 or (sum(c.isdigit() for c in s) >= 2
                                          and any(c.islower() for c in s)
                                          and any(c.isupper() for c in s)):
            return s


def hexs(n: int) -> str:
    return rand(n, "0123456789abcdef")


def word(n: int = 10) -> str:
    """A low-entropy secret (lowercase letters, two digits): found by name or grammar only."""
    return rand(n, string.ascii_lowercase) + str(_R.randint(10, 99))


def b64(nbytes: int) -> str:
    return base64.b64encode(_R.randbytes(nbytes)).decode()


def pem_body(label: str, lines: int = 4) -> tuple[str, str]:
    """A PEM private key block (random body) and one of its body lines."""
    body = [b64(48) for _ in range(lines)]
    block = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----\n"
    return block, body[1]


@dataclass(frozen=True)
class Planted:
    label: str
    where: str  # env, env-name, argv, tag
    planted: object  # str (env value, tag value) or list[str] (argv words)
    secret: str
    name: str = ""  # the env or tag name, where it matters


def _env_shapes() -> list[Planted]:
    user = word(6)
    ssh_block, ssh_line = pem_body("OPENSSH PRIVATE KEY")
    gcp_block, gcp_line = pem_body("PRIVATE KEY")
    enc_block, enc_line = pem_body("ENCRYPTED PRIVATE KEY")
    kube_key = base64.b64encode(pem_body("RSA PRIVATE KEY")[0].encode()).decode()
    docker_auth = base64.b64encode(f"{user}:{word(12)}".encode()).decode()
    wrapped = base64.b64encode(json.dumps(
        {"client_id": user, "client_secret": word(12)}).encode()).decode()
    minisign = b64(104)
    pgp_block, pgp_line = pem_body("PGP PRIVATE KEY BLOCK", 5)
    cases = [
        ("azure storage connection string",
         f"DefaultEndpointsProtocol=https;AccountName={user};AccountKey={(s := b64(64))};"
         "EndpointSuffix=core.windows.net", s),
        ("azure service bus SharedAccessKey",
         f"Endpoint=sb://ns{word(4)}.servicebus.windows.net/;SharedAccessKeyName=Root;"
         f"SharedAccessKey={(s := b64(32))}", s),
        ("azure SAS token alone (no URL)",
         f"sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlac&se=2026-12-31T00:00:00Z&sig={(s := word(24))}",
         s),
        ("gcp service-account JSON private_key (escaped newlines)",
         json.dumps({"type": "service_account", "client_email": f"{user}@p.iam.gserviceaccount.com",
                     "private_key": gcp_block}), gcp_line),
        ("gcp service-account private_key_id", json.dumps(
            {"type": "service_account", "private_key_id": (s := hexs(40))}), s),
        ("discord bot token",
         (s := f"M{rand(25, _ALNUM + '_-')}.{rand(6, _ALNUM + '_-')}.{rand(38, _ALNUM + '_-')}"),
         s),
        ("slack refresh token xoxe", (s := f"xoxe.xoxp-1-{rand(140)}"), s[5:]),
        (".npmrc _authToken (uuid)",
         f"//registry.internal/:_authToken={(s := str(uuid.UUID(int=_R.getrandbits(128))))}", s),
        ("docker config auths", json.dumps({"auths": {"registry.internal": {"auth": docker_auth}}}),
         docker_auth),
        ("kubeconfig client-key-data",
         f"users:\n- name: admin\n  user:\n    client-key-data: {kube_key}\n", kube_key),
        ("base64 PEM private key alone", kube_key, kube_key[:60]),
        ("openssh private key, real newlines", ssh_block, ssh_line),
        ("encrypted PKCS#8 key in one line (\\n escaped)", enc_block.replace("\n", "\\n"),
         enc_line),
        ("pgp private key block", pgp_block, pgp_line),
        ("cookie header", f"Cookie: lang=en; sid={(s := word(14))}; theme=dark", s),
        ("proxy user:pass@host without scheme", f"{user}:{(s := word(12))}@proxy.corp.internal:3128",
         s),
        ("proxy URL with percent-encoded password",
         f"http://{user}:{(s := 'p%40ss%2F' + word(8))}@proxy.internal:3128", s),
        ("mailgun private key (hex-8-8)", (s := f"{hexs(32)}-{hexs(8)}-{hexs(8)}"), s),
        ("postman api key", (s := f"PMAK-{hexs(24)}-{hexs(34)}"), s),
        ("terraform cloud token", (s := f"{rand(14)}.atlasv1.{rand(67)}"), s),
        ("mongodb+srv password with : and @",
         f"mongodb+srv://{user}:{(s := word(6) + ':x@' + word(5))}@cluster0.ab1cd.mongodb.net/"
         "db?retryWrites=true", s),
        ("mongodb replica set (host list)",
         f"mongodb://{user}:{(s := word(12))}@h1.internal:27017,h2.internal:27017/?replicaSet=rs0",
         s),
        ("rediss password only", f"rediss://:{(s := word(13))}@cache.internal:6380/0", s),
        ("aws session token (bare)", (s := "FwoGZXIvYXdzE" + rand(200, _B64) + "=="), s),
        ("aws secret access key (bare, with /)",
         (s := rand(12) + "/" + rand(14) + "/" + rand(12)), s),
        ("minisign secret key",
         f"untrusted comment: minisign encrypted secret key\n{minisign}\n", minisign),
        ("wireguard PrivateKey",
         f"[Interface]\nPrivateKey = {(s := b64(32))}\nAddress = 10.0.0.2/32\n", s),
        ("base64-wrapped JSON credentials", wrapped, wrapped),
        ("oauth fragment access_token",
         f"https://app.internal/cb#access_token={(s := word(16))}&token_type=bearer", s),
        ("GCS signed URL X-Goog-Signature",
         f"https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature="
         f"{(s := hexs(128))}", s),
        ("yaml block with quoted password and spaces",
         f"database:\n  host: db.internal\n  password: \"{(s := word(6) + ' ' + word(6))}\"\n", s),
        ("percent-encoded api_key inside a redirect",
         f"https://sso.internal/login?next=%2Fapi%3Fapi_key%3D{(s := word(14))}", s),
        ("unicode password in a URL", f"https://{user}:{(s := 'пароль' + word(6))}@db.internal/x",
         s),
        ("vault hvs token", (s := "hvs." + rand(90)), s),
        ("AWS4 Authorization header",
         f"Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/s3/aws4_request,"
         f" SignedHeaders=host, Signature={(s := hexs(64))}", s),
        ("libpq conninfo password=", f"host=db user={user} password={(s := word(12))} dbname=x", s),
    ]
    return [Planted(label, "env", value, secret) for label, value, secret in cases]


def _name_shapes() -> list[Planted]:
    return [
        Planted("wallet mnemonic", "env-name", " ".join(word(5) for _ in range(12)),
                "", name="VLLM_WALLET_MNEMONIC"),
        Planted("twilio auth token (32 hex)", "env-name", (s := hexs(32)), s,
                name="HF_TWILIO_AUTH_TOKEN"),
        Planted("heroku api key (uuid)", "env-name", (s := str(uuid.UUID(int=_R.getrandbits(128)))),
                s, name="TORCH_HEROKU_API_KEY"),
    ]


def _argv_shapes() -> list[Planted]:
    cases = [
        ("sqlplus user/password (no @)", ["sqlplus", "-S", f"scott/{(s := word(10))}"], s),
        ("smbclient -U user%password", ["smbclient", "//srv/share", "-U", f"me%{(s := word())}"], s),
        ("java -D...keyStorePassword=", ["java", f"-Djavax.net.ssl.keyStorePassword={(s := word())}",
                                         "-jar", "app.jar"], s),
        ("kubectl --from-literal=password=", ["kubectl", "create", "secret", "generic", "db",
                                             f"--from-literal=password={(s := word())}"], s),
        ("echo PW | docker login --password-stdin (sh -c)",
         ["sh", "-c", f"echo {(s := word(12))} | docker login -u me --password-stdin reg.internal"],
         s),
        ("here-string to --password-stdin",
         ["bash", "-c", f"podman login -u me --password-stdin q.internal <<< {(s := word(12))}"], s),
        ("psql conninfo string", ["psql", f"host=db user=me password={(s := word())} dbname=x"], s),
        ("JSON --config with a nested list",
         ["./serve.sh", "--config", json.dumps({"providers": [{"name": "x", "secret": (s := word())}]})],
         s),
        ("unknown tool -p PASSWORD", ["./deploy.sh", "-p", (s := word(11))], s),
        ("unknown tool -a TOKEN", ["./sync", "-a", (s := word(12))], s),
        ("npm config set _authToken", ["npm", "config", "set", "//registry.internal/:_authToken",
                                       (s := word(12))], s),
        ("openssl -passin pass:", ["openssl", "rsa", "-in", "k.pem", "-passin", f"pass:{(s := word())}"],
         s),
        ("git -c http.extraHeader Basic", ["git", "-c", "http.extraHeader=Authorization: Basic "
                                           + (s := b64(24)), "fetch"], s),
        ("python -c requests auth=(user, pw)",
         ["python3", "-c", f"import requests; requests.get(u, auth=('me', '{(s := word())}'))"], s),
        ("vault login -method=userpass password=", ["vault", "login", "-method=userpass",
                                                    "username=me", f"password={(s := word())}"], s),
        ("sh -c export then use", ["sh", "-c", f"export DB_PASS={(s := word())} && ./migrate"], s),
    ]
    return [Planted(label, "argv", words, secret) for label, words, secret in cases]


def _tag_shapes() -> list[Planted]:
    return [
        Planted("tag wallet seed phrase", "tag", (s := " ".join(word(5) for _ in range(12))), s,
                name="seed_phrase"),
        Planted("tag slack webhook path only", "tag",
                f"/services/T{rand(8).upper()}/B{rand(8).upper()}/{(s := rand(24))}", s,
                name="notify"),
        Planted("tag cookie jwt", "tag", "session=" + (s := "eyJhbGciOiJIUzI1NiJ9.eyJ" + rand(20)
                                                       + "." + rand(43)), s, name="note"),
    ]


def fresh() -> list[Planted]:
    shapes = _env_shapes() + _name_shapes() + _argv_shapes() + _tag_shapes()
    # the mnemonic is only secret as a whole: its secret is the value itself
    return [Planted(p.label, p.where, p.planted, p.secret or str(p.planted), p.name)
            for p in shapes]
