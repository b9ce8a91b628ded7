"""Secrets in a command line, found by its grammar (redact.py's argv rules).

A word is hidden when the words before it say it is a secret:
- a long option whose name says secret (`--password`, `--pw`, `--api-key`, `--token`,
  `--secret`, `--db-password=...`), for every program;
- a short option a known client defines for its secret (`sshpass -p`, `mysql -pPW`,
  `redis-cli -a`, `sqlcmd -P`, `ldapsearch -w`, `docker login -p`, `smbclient -U user%PW`,
  `sqlplus user/PW`, `curl -u user:PW`, `htpasswd -b FILE USER PW`);
- the generic short options `-p`, `-P` and `-a` of a program prov does not know (a user's
  script, an in-house tool): the next word is hidden unless it is a number, a port or
  address (`8080`, `8080:80`, `0.0.0.0:8000`), a path, an option or a `NAME=VALUE` (judged
  by its name). Programs known to use these letters for something else (`ssh -p PORT`,
  `mkdir -p`, `pytest -p PLUGIN`, `git add -p`, `docker run -p 8080:80`, `ls -a`, `gcc
  -pthread`) keep them. Why: a false positive hides one word of a command line, which is
  context (`code.command`), never a fact of identity; a false negative publishes a password;
- `login TOKEN` (`vault login`, `huggingface-cli login`), `set NAME VALUE` when NAME says
  secret (`aws configure set aws_secret_access_key V`, `npm config set //r/:_authToken V`);
- `sh -c SCRIPT`: the script split as the shell splits it (shlex) and its words redacted by
  these same rules, recursively; `echo PW | docker login --password-stdin` hides PW;
- interpreter code (`python -c`, `node --eval`, `perl -e`) is scanned as text, where
  `Client(api_key='...')` is a secret-named assignment.
Every word is also scanned as text (secret_text.scan): URLs, token shapes, JSON arguments.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from provenance.model.secret_names import is_secret_name, is_secret_pair
from provenance.model.secret_text import Known, scan, tree

Mark = Callable[[str], str]

_FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9_.\-]*")
_FLAG_WITH_VALUE = re.compile(r"^(?P<flag>--?[A-Za-z0-9_.\-]+)=(?P<value>.*)$", re.DOTALL)
_ENV_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)=(?P<value>.*)$", re.DOTALL)
# Options whose next argument is `user:password` (curl -u, wget --proxy-user, ...).
_USER_PASS_FLAGS = frozenset({"-u", "--user", "--proxy-user", "-U", "--http-user"})
_JSON_LIMIT = 1 << 16  # JSON arguments larger than this are scanned as text only

# Short options that take a secret, per client.
_TOOL_SECRET_FLAGS: dict[str, frozenset[str]] = {
    **{t: frozenset({"-p"}) for t in ("mysql", "mysqldump", "mysqladmin", "mysqlimport",
                                      "mysqlshow", "mysqlcheck", "mariadb", "mariadb-dump",
                                      "7z", "7za")},
    **{t: frozenset({"-p"}) for t in ("sshpass", "mongo", "mongosh", "mongodump",
                                      "mongorestore", "mongoexport", "mongoimport")},
    "redis-cli": frozenset({"-a", "--pass"}),
    **{t: frozenset({"-P"}) for t in ("sqlcmd", "bcp", "osql", "isql", "zip", "unzip")},
    **{t: frozenset({"-w"}) for t in ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete",
                                      "ldapwhoami", "ldappasswd")},
    "keytool": frozenset({"-storepass", "-keypass", "-srcstorepass", "-deststorepass"}),
    "openssl": frozenset({"-k", "-pass", "-passin", "-passout"}),
    "curl": frozenset({"--oauth2-bearer"}),
    "wget": frozenset({"--password", "--http-password", "--ftp-password", "--proxy-password"}),
    "htpasswd": frozenset(),  # its password is positional: see _ArgvState.htpasswd_batch
}
# Tools whose `-p` is attached-only (`mysql -p` alone prompts; the next word is a database).
_ATTACHED_ONLY = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow",
                            "mysqlcheck", "mariadb", "mariadb-dump", "7z", "7za"})
# Clients whose `-p` is a password only after `login` (`docker run -p 8080:80` is a port).
_LOGIN_SECRET_FLAGS: dict[str, frozenset[str]] = {
    **{t: frozenset({"-p", "--password"}) for t in (
        "docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane",
        "regctl", "az", "cf", "oc", "argocd")},
}
# Clients whose first positional is `user/password[@db]` (Oracle).
_ORACLE = frozenset({"sqlplus", "sqlldr", "expdp", "impdp", "exp", "imp", "rman", "dgmgrl"})
# Samba clients: `-U user%password`, `--user=user%password`.
_SAMBA = frozenset({"smbclient", "rpcclient", "smbcacls", "smbget", "smbmap", "net",
                    "smbpasswd", "mount.cifs"})
# Programs whose -p/-P/-a take a port, pid, plugin, path, profile or nothing: not secrets.
_SAFE_SHORT = frozenset({
    "ssh", "scp", "sftp", "rsync", "mosh", "autossh", "nc", "ncat", "netcat", "socat",
    "telnet", "nmap", "ping", "curl", "wget", "git", "mkdir", "cp", "mv", "ls", "ln", "tar",
    "uname", "grep", "rg", "diff", "sort", "du", "df", "ps", "kill", "pkill", "pgrep",
    "lsof", "ss", "netstat", "top", "htop", "gdb", "perf", "strace", "ltrace", "taskset",
    "renice", "ionice", "chrt", "pytest", "py.test", "pip", "pip3", "uv", "poetry", "make",
    "cmake", "ninja", "gcc", "g++", "cc", "c++", "clang", "clang++", "nvcc", "ld", "mvn",
    "gradle", "xargs", "parallel", "hyperfine", "gunicorn", "uvicorn", "jupyter", "kubectl",
    "nvidia-smi", "numactl", "torchrun", "accelerate", "deepspeed", "vllm", "sglang",
    "llama-server", "llama-cli", "ollama", "tensorboard", "mlflow", "find", "chmod", "chown",
    "install", "patch", "sed", "awk", "date", "touch", "cat", "head", "tail", "less", "wc",
    "tee", "env", "sudo", "time", "nice", "nohup", "timeout", "stdbuf", "watch", "flock",
    "apt", "apt-get", "dpkg", "yum", "dnf", "conda", "mamba", "pixi", "srun", "sbatch",
    "mpirun", "mpiexec", "http.server", "venv", "virtualenv", "lsblk", "mount", "who", "id",
    "docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "regctl",
    "az", "cf", "oc", "argocd", "aws", "gcloud", "gsutil", "vault", "huggingface-cli", "hf",
    "npm", "npx", "yarn", "pnpm", "cargo", "go", "java", "javac", "dotnet", "psql", "pg_dump",
    "pg_restore", "createdb", "sqlite3", "duckdb", "valgrind", "ab", "wrk", "locust",
})
_INTERPRETERS = re.compile(r"(?:python|pypy)[\d.]*|node|nodejs|deno|bun|ruby|perl|php"
                           r"|Rscript|julia|lua|luajit|tclsh|osascript")
# Interpreter options whose next word is code to run (`python -c CODE`, `node -e CODE`).
_CODE_FLAGS = frozenset({"-c", "-e", "-E", "--eval", "--print", "-r"})
# Wrappers: the next positional word is the command they run.
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "nohup", "timeout", "stdbuf", "exec",
                       "command", "xargs", "ionice", "chrt", "taskset", "numactl", "strace",
                       "ltrace", "valgrind", "watch", "flock", "setsid", "unbuffer", "prov",
                       "srun", "mpirun", "mpiexec", "doas", "runuser", "su"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"})
_KNOWN = (frozenset(_TOOL_SECRET_FLAGS) | frozenset(_LOGIN_SECRET_FLAGS) | _ORACLE | _SAMBA
          | _SAFE_SHORT | _WRAPPERS | _SHELLS)
_GENERIC_SHORT = frozenset({"-p", "-P", "-a"})
# What a generic short option's value may be without being a secret: a number, port, range
# or address; a path; an option.
_BENIGN_VALUE = re.compile(r"[\d.:,\-\[\]]+|[./~].*|.*/.*|-.*", re.DOTALL)
_PASSWORD_STDIN = re.compile(r"--pass(?:word)?-stdin(?:=.*)?")
_HOST = re.compile(r"[a-z0-9\-]+(?:\.[a-z0-9\-]+)+(?::\d+)?|localhost(?::\d+)?")
_SHELL_DEPTH = 4  # sh -c "bash -c '...'" nested deeper than this is scanned as text
_MARKS = re.compile(r"<redacted[^<>\s]*>")
_OPERATORS = frozenset({"|", "||", "&&", ";", "&", "(", ")", ";;", "|&"})


def tool_name(word: str) -> str | None:
    """The program `word` names, if prov knows its grammar; "" for an interpreter."""
    base = word.rsplit("/", 1)[-1]
    if base in _KNOWN:
        return base
    if _INTERPRETERS.fullmatch(base):
        return "python" if base.startswith(("python", "pypy")) else base
    return None


@dataclass
class ArgvState:
    tool: str | None = None  # the program whose options these are; "" an unknown one
    expect: str | None = "command"  # command, script: what the next positional word is
    pending: str | None = None  # what the next word is: secret, generic, user-pass, ...
    login: bool = False  # after `login` (docker login -p)
    positionals: int = 0  # of the current tool (htpasswd's password is positional)
    htpasswd_batch: int = 0  # the positional that is htpasswd -b's password

    def enter(self, tool: str | None) -> None:
        self.tool, self.positionals, self.htpasswd_batch, self.login = tool, 0, 0, False
        interpreter = bool(tool) and (tool not in _KNOWN or tool in _SHELLS)
        self.expect = ("script" if interpreter
                       else "command" if tool in _WRAPPERS else None)


def argv(words: Sequence[str], mark: Mark, known: Known | None, depth: int = 0) -> list[str]:
    st = ArgvState()
    return [_word(str(w), st, mark, known, depth) for w in words]


def _word(arg: str, st: ArgvState, mark: Mark, known: Known | None, depth: int) -> str:
    pending, st.pending = st.pending, None
    if pending is not None:
        done = _pending_word(arg, pending, st, mark, known, depth)
        if done is not None:
            return done
    name = tool_name(arg)
    if name is not None and not arg.startswith("-"):
        st.enter(name)
        return arg
    if (st.expect is not None and not arg.startswith("-") and "=" not in arg
            and (st.expect == "script" or not re.fullmatch(r"[\d.:smhd]+", arg))):
        st.enter("")  # a script or a program prov does not know (`timeout 10 CMD`: not 10)
        return _arg(arg, mark, known)
    if st.expect == "script" and arg.startswith("-"):
        return _interpreter_option(arg, st, mark, known)
    flag = _secret_flag(arg, st, mark)
    if flag is not None:
        return flag
    if st.tool in _SAMBA and arg.startswith(("--user=", "-U")) and "%" in arg:
        user, _, password = arg.partition("%")
        return f"{user}%{mark(password, True)}" if password else arg
    if st.tool == "htpasswd" and re.fullmatch(r"-[a-zA-Z]*b[a-zA-Z]*", arg):
        st.htpasswd_batch = 2 if "n" in arg else 3
        return arg
    if not arg.startswith("-"):
        return _positional(arg, st, mark, known)
    if st.tool in _SAMBA and arg in ("-U", "--user"):
        st.pending = "samba-user"
        return arg
    if arg in _USER_PASS_FLAGS or (_FLAG.fullmatch(arg) and is_secret_name(arg.lstrip("-"))):
        st.pending = "user-pass" if arg in _USER_PASS_FLAGS else "secret"
        return arg
    return _arg(arg, mark, known)


def _interpreter_option(arg: str, st: ArgvState, mark: Mark, known: Known | None) -> str:
    """An option of an interpreter or shell, before its script: `-c CODE`, `-m MODULE`."""
    if st.tool in _SHELLS and re.fullmatch(r"-[a-z]*c[a-z]*", arg):
        st.pending = "script"
    elif arg in _CODE_FLAGS and st.tool not in _SHELLS:
        st.pending = "code"
    elif arg == "-m" and st.tool == "python":
        st.pending = "module"
    return _arg(arg, mark, known)


def _secret_flag(arg: str, st: ArgvState, mark: Mark) -> str | None:
    """`-p` (the next word pending) or `-pVALUE` of the current tool's secret options."""
    tool = st.tool or ""
    if tool in _LOGIN_SECRET_FLAGS:
        flags = _LOGIN_SECRET_FLAGS[tool] if st.login else frozenset()
    elif tool in _TOOL_SECRET_FLAGS:
        flags = _TOOL_SECRET_FLAGS[tool]
    elif tool in _KNOWN:
        return None
    else:
        flags = _GENERIC_SHORT
    if arg in flags and tool not in _ATTACHED_ONLY:
        st.pending = "secret" if tool in _KNOWN else "generic"
        return arg
    for flag in flags:
        if len(flag) == 2 and arg.startswith(flag) and len(arg) > 2 and arg[2] != "=":
            value = arg[2:]
            if tool not in _KNOWN and (len(value) < 6 or _BENIGN_VALUE.fullmatch(value)):
                return None  # `-pv`, `-p8080`: flags or a port of an unknown program
            return flag + mark(value, True)
    return None


def _positional(arg: str, st: ArgvState, mark: Mark, known: Known | None) -> str:
    st.positionals += 1
    if st.tool == "htpasswd" and st.positionals == st.htpasswd_batch:
        return mark(arg, True)
    if st.tool in _ORACLE and st.positionals == 1 and "/" in arg:
        user, _, rest = arg.partition("/")
        password, at, db = rest.partition("@")
        return f"{user}/{mark(password, True)}{at}{db}" if password else arg
    if arg in ("login", "auth"):
        if st.tool in _LOGIN_SECRET_FLAGS:
            st.login = True
        else:
            st.pending = "login"
        return arg
    if arg == "set":
        st.pending = "set"
        return arg
    return _arg(arg, mark, known)


def _pending_word(arg: str, pending: str, st: ArgvState, mark: Mark,
                  known: Known | None, depth: int) -> str | None:
    """The word after a flag or subcommand that announced it; None: an ordinary word."""
    if pending == "secret":
        return mark(arg, True)
    if pending == "generic":
        if _BENIGN_VALUE.fullmatch(arg):
            return None
        if _ENV_ASSIGNMENT.match(arg):
            return _arg(arg, mark, known)
        return mark(arg, True)
    if pending == "user-pass":
        if arg.startswith("-") or "://" in arg:  # not a user:password after all
            return None
        return _user_pass(_arg(arg, mark, known), mark)
    if pending == "samba-user":
        user, pct, password = arg.partition("%")
        return f"{user}%{mark(password, True)}" if pct and password else _user_pass(arg, mark)
    if pending == "script":
        st.enter("")  # what follows the script are its $0, $1, ...
        return shell_script(arg, mark, known, depth)
    if pending == "code":
        st.enter("")  # what follows the code are its own arguments
        return scan(arg, mark, known)
    if pending == "module":
        st.enter(tool_name(arg) or "")
        return arg
    if pending == "login":  # `vault login TOKEN`, `huggingface-cli login TOKEN`
        if arg.startswith("-"):
            st.pending = "login"  # flags before the token
            return None
        if "=" in arg:  # `vault login -method=userpass username=me password=...`
            return None
        if len(arg) >= 8 and not _HOST.fullmatch(arg) and "/" not in arg:
            return mark(arg, True)
        return None
    if pending == "set" and is_secret_name(arg):  # `aws configure set aws_secret_access_key V`
        st.pending = "secret"
        return arg
    return None


def _arg(arg: str, mark: Mark, known: Known | None) -> str:
    """One argument standing alone: `--flag=value`, `KEY=VALUE`, JSON, `-u u:p` or text."""
    m = _FLAG_WITH_VALUE.match(arg)
    if m:
        flag, value = m.group("flag"), m.group("value")
        if flag in _USER_PASS_FLAGS or flag == "--http-password":
            return f"{flag}={_user_pass(value, mark)}"
        if is_secret_name(flag) and value:
            return f"{flag}={mark(value, True)}"
        return f"{flag}={_arg(value, mark, known)}"
    m = _ENV_ASSIGNMENT.match(arg)
    if m and m.group("value"):  # (`NAME=` alone may be base64 padding: scanned as text)
        name, value = m.group("name"), m.group("value")
        if is_secret_pair(name, value):
            return f"{name}={mark(value, True)}"
        return f"{name}={scan(value, mark, known)}"
    if arg[:1] in "{[" and len(arg) <= _JSON_LIMIT:
        redacted_json = _json_text(arg, mark, known)
        if redacted_json is not None:
            return redacted_json
    if re.fullmatch(r"-u[^\s:=-][^\s:]*:\S+", arg):  # curl -uuser:pass
        return "-u" + _user_pass(arg[2:], mark)
    return scan(arg, mark, known)


def _user_pass(value: str, mark: Mark) -> str:
    user, sep, password = value.partition(":")
    return f"{user}:{mark(password, True)}" if sep and password else value


def _json_text(text: str, mark: Mark, known: Known | None) -> str | None:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict | list):
        return None
    try:
        return json.dumps(tree(doc, mark, known), separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        return None


# ---- shell scripts ------------------------------------------------------------------------

def _shell_words(script: str) -> list[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the words as the shell would not see them
        return script.split()


def _quote(word: str) -> str:
    """A word as a shell reads it back; operators and redaction marks stay as they are."""
    if word in _OPERATORS or (
            word and not re.search(r"[\s\"'\\$`;&|<>()#*?]", _MARKS.sub("", word))):
        return word
    return shlex.quote(word)


def _piped_passwords(words: list[str], mark: Mark) -> list[str]:
    """`echo PW | docker login --password-stdin` and `... --password-stdin <<< PW`: the
    words that reach a password-from-stdin option, hidden."""
    out = list(words)
    commands, start = [], 0
    for i, w in enumerate([*words, ";"]):
        if w in _OPERATORS:
            commands.append((start, i, w))
            start = i + 1
    for n, (lo, hi, _op) in enumerate(commands):
        if not any(_PASSWORD_STDIN.fullmatch(w) for w in words[lo:hi]):
            continue
        for i in range(lo, hi - 1):  # a here-string
            if words[i] == "<<<":
                out[i + 1] = mark(words[i + 1], True)
        if n and commands[n - 1][2] == "|":
            plo, phi, _ = commands[n - 1]
            if plo < phi and words[plo].rsplit("/", 1)[-1] in ("echo", "printf", "cat"):
                for i in range(plo + 1, phi):
                    if not words[i].startswith("-") and "%" not in words[i]:
                        out[i] = mark(words[i], True)
    return out


def shell_script(script: str, mark: Mark, known: Known | None, depth: int = 0) -> str:
    """`sh -c SCRIPT`: the script's words redacted by the argv grammar, recursively (each
    command of a pipeline or list on its own); a script with nothing hidden keeps its
    spelling, else it is re-quoted word by word."""
    if depth >= _SHELL_DEPTH:
        return scan(script, mark, known)
    words = _shell_words(script)
    clean = _piped_passwords(words, mark)
    commands, start = [], 0
    for i, w in enumerate([*clean, ";"]):
        if w in _OPERATORS:
            commands.append(argv(clean[start:i], mark, known, depth + 1) + [w])
            start = i + 1
    clean = [w for command in commands for w in command][:-1]
    if clean == words:
        return scan(script, mark, known)
    return _splice(script, words, clean)


def _splice(script: str, words: list[str], clean: list[str]) -> str:
    """The script with each changed word replaced where it stands, so its spacing and quotes
    are kept; a word the shell unescaped (not found as written) makes it re-quoted whole."""
    out, pos = [], 0
    for word, new in zip(words, clean, strict=True):
        at = script.find(word, pos)
        if at < 0:
            return " ".join(_quote(w) for w in clean)
        out += [script[pos:at], new]
        pos = at + len(word)
    out.append(script[pos:])
    return "".join(out)


_SHELL_C = re.compile(r"(?:^|(?<=\s))(?:\S*/)?(?:sh|bash|zsh|dash|ash|ksh)\s+-[a-z]*c[a-z]*\s+")


def command_text(text: str, mark: Mark, known: Known | None) -> str:
    """A shell command line as one string (an image's history `/bin/sh -c ...`, a Cmd in
    shell form): the words before `sh -c` by the argv grammar, the rest as its script."""
    m = _SHELL_C.search(text)
    head, script = (text[:m.end()], text[m.end():]) if m else (text, "")
    text_head = scan(head, mark, known)  # shapes that span words first
    parts = re.split(r"(\s+)", text_head)
    parts[::2] = argv(parts[::2], mark, known)
    return "".join(parts) + (shell_script(script, mark, known) if script else "")
