#!/usr/bin/env bash
# The whole test suite: lint, types, then pytest on both cores. README.md's second quick-start line.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check arenatui tests benchmarks
python3 -m mypy
python3 -m pytest -n 2 -q "$@"
