"""`python -m provenance`: the same as the `prov` console script."""

from provenance.cli import main

if __name__ == "__main__":
    main()
