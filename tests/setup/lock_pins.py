"""Print `name==version` pins from a PEP 751 lock, for `pip install --no-deps -r`.

Standard library only: it runs before anything is installed. Source-tree entries (the
project itself, installed editable) carry no version and are skipped.
"""

import sys
import tomllib

with open(sys.argv[1], "rb") as fh:
    lock = tomllib.load(fh)
for package in lock["packages"]:
    if "version" in package and "directory" not in package:
        print(f"{package['name']}=={package['version']}")
