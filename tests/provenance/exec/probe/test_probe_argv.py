"""The command line as identity (probe/argv.py): one key per argument, paths by what they are."""

from __future__ import annotations

from provenance.exec.probe.argv import command_identity, parse_args, places_for


def ident(argv, cwd="/w", **places):
    return command_identity(argv, places_for(cwd, **places))


def test_options_and_positionals_get_their_own_keys():
    got = ident(["/venv/bin/python", "w.py", "--temp", "0.9", "--attention-backend=FLASH_ATTN",
                 "-n", "3", "--verbose", "data", "--", "--not-an-option"])
    assert got["program"] == ["python", "w.py"]
    assert got["args"] == {"temp": "0.9", "attention_backend": "FLASH_ATTN", "n": "3",
                           "verbose": "data", "0": "--not-an-option"}


def test_negative_numbers_are_values_and_repeats_keep_every_value():
    got = parse_args(["--shift", "-1.5", "--tag", "a", "--tag", "b", "--flag"], places_for("/w"))
    assert got == {"shift": "-1.5", "tag": ["a", "b"], "flag": "true"}


def test_python_options_module_and_code_are_the_program():
    assert ident(["python3.11", "-u", "-X", "dev", "-m", "runners.worker", "--out", "o"])[
        "program"] == ["python3.11", "-u", "-X", "dev", "-m", "runners.worker"]
    assert ident(["python", "-c", "print(1)", "x"]) == {"program": ["python", "-c", "print(1)"],
                                                       "args": {"0": "x"}}
    assert ident(["vllm", "serve", "m"]) == {"program": ["vllm"], "args": {"0": "serve", "1": "m"}}


def test_outputs_their_directory_the_script_and_inputs_are_written_by_what_they_are():
    places = dict(outputs=["r1/out.txt"], run_dir="/runs/abc", script="/w/w.py",
                  inputs=["/data/prompt.txt"])
    got = ident(["python", "/w/w.py", "--out", "r1/out.txt", "--dir", "r1", "--run", "/runs/abc/x",
                 "--prompt", "../data/prompt.txt", "--here", "."], **places)
    assert got["program"] == ["python", "<script>"]
    assert got["args"] == {"out": "<output>", "dir": "<output>", "run": "<run_dir>/x",
                           "prompt": "<input>", "here": "."}
    # relative and absolute spellings of one script and one output are one identity
    assert ident(["python", "w.py", "--out", "/w/r1/out.txt"], **places) == ident(
        ["python", "/w/w.py", "--out", "r1/out.txt"], **places)


def test_an_output_in_the_working_directory_does_not_make_the_directory_an_output():
    got = ident(["python", "w.py", "--out", "r1.txt", "--cwd", "/w"], outputs=["r1.txt"])
    assert got["args"] == {"out": "<output>", "cwd": "/w"}
