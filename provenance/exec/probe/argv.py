"""A run's command line as identity: the program, and each argument under its own key.

`code.command` keeps the line as typed (context: a person reads it); the identity is
`code.program` (what runs: `python -m runners.worker`, `python <script>`, `vllm`) and
`code.args.<name>` for every option and `code.args.<n>` for the n-th positional argument,
so a refusal names the argument that differs (`code.args.temp: 0.0 -> 0.9`) and a preset
can declare one (`--vary attention-backend` covers `code.args.attention_backend`).

The grammar is the common one, read the same way on both sides of a comparison:
`--name=value`, `--name value` (the next word does not start with `-`), `--flag` alone
(`true`), `-x value`; after `--` every word is positional. Option names lose their dashes
and `-` becomes `_` (`--attention-backend` -> `attention_backend`); a repeated option keeps
every value, in order.

Paths are written by what they are, not where they are (`places`): a declared output or a
directory holding one is `<output>`, the run directory `<run_dir>`, the main script
`<script>` (its content is `code.script.sha256`), a file or directory the run read
`<input>` (its content is under `inputs.*` / `model.files.*`), and so is the directory
holding such a file. A relative path is resolved
against the working directory first, so `-o r1.txt` and `--out r1.txt` match.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from provenance.model.run_sections import CodeSection

# interpreter options that take a value (python -X dev, -W error, --check-hash-based-pycs)
_PY_VALUE_OPTIONS = frozenset({"-X", "-W", "--check-hash-based-pycs"})
_PYTHON = re.compile(r"^python[0-9.]*$")
_NUMBER = re.compile(r"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class Places:
    """Absolute paths -> the name they are written as (see the module docstring)."""

    exact: Mapping[str, str]  # path -> name, for the path and below it (`<output>/log.txt`)
    cwd: str

    def name_of(self, value: str) -> str | None:
        if not value or "\0" in value or value.startswith("-"):
            return None
        path = os.path.normpath(os.path.join(self.cwd, value))
        for place, name in self.exact.items():
            if path == place:
                return name
            if path.startswith(place.rstrip(os.sep) + os.sep):  # `<output>/log.txt`
                return name + path[len(place.rstrip(os.sep)):]
        return None


def places_for(cwd: str, outputs: Sequence[str] = (), run_dir: str | None = None,
               script: str | None = None, inputs: Sequence[str] = ()) -> Places:
    """The places of one run. An output's or input's own directory counts as the file
    (`--out DIR` where the run declared DIR/scores.npz, `--model DIR` where it read
    DIR/model.safetensors), unless it is the working directory or above."""
    cwd = os.path.normpath(cwd)
    exact: dict[str, str] = {}
    if run_dir:
        exact[os.path.normpath(run_dir)] = "<run_dir>"
    if script:
        exact[os.path.normpath(script)] = "<script>"
    for paths, name in ((outputs, "<output>"), (inputs, "<input>")):
        for path in paths:
            path = os.path.normpath(os.path.join(cwd, path))
            exact.setdefault(path, name)
            parent = os.path.dirname(path)
            if parent != cwd and not (cwd + os.sep).startswith(parent.rstrip(os.sep) + os.sep):
                exact.setdefault(parent, name)
    return Places(exact, cwd)


def _written(value: str, places: Places) -> str:
    name = places.name_of(value)
    return value if name is None else name


def _program(argv: list[str], places: Places) -> tuple[list[str], list[str]]:
    """(the program part, the words left for the program's own arguments)."""
    program = [os.path.basename(argv[0])]
    rest = argv[1:]
    if not _PYTHON.match(program[0]):
        return program, rest
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] not in ("-", "-m", "-c"):
        program.append(rest[i])
        if rest[i] in _PY_VALUE_OPTIONS and i + 1 < len(rest):
            i += 1
            program.append(rest[i])
        i += 1
    if i < len(rest):
        if rest[i] in ("-m", "-c") and i + 1 < len(rest):
            program += [rest[i], rest[i + 1]]
            i += 2
        else:
            program.append(_written(rest[i], places))
            i += 1
    return program, rest[i:]


def _name(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_") or flag


def _add(args: dict[str, Any], key: str, value: str) -> None:
    if key in args:
        held = args[key]
        args[key] = [*held, value] if isinstance(held, list) else [held, value]
    else:
        args[key] = value


def parse_args(words: list[str], places: Places) -> dict[str, Any]:
    """`code.args`: options by name, positionals by their index among positionals."""
    args: dict[str, Any] = {}
    positional = 0
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            for rest in words[i + 1:]:
                args[str(positional)] = _written(rest, places)
                positional += 1
            break
        if word.startswith("-") and word != "-" and not _NUMBER.match(word):
            flag, eq, value = word.partition("=")
            if not eq and i + 1 < len(words) and _is_value(words[i + 1]):
                value, eq = words[i + 1], "="
                i += 1
            _add(args, _name(flag), _written(value, places) if eq else "true")
        else:
            args[str(positional)] = _written(word, places)
            positional += 1
        i += 1
    return args


def _is_value(word: str) -> bool:
    return not word.startswith("-") or word == "-" or bool(_NUMBER.match(word))


def command_identity(argv: Sequence[str], places: Places) -> CodeSection:
    """{"program": [...], "args": {...}} of an already redacted argv."""
    words = [str(a) for a in argv]
    if not words:
        return {}
    program, rest = _program(words, places)
    out: CodeSection = {"program": program}
    args = parse_args(rest, places)
    if args:
        out["args"] = args
    return out
