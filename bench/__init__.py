"""The benchmark suite (see bench/README.md): ``python -m bench.run`` or ``make bench``."""
