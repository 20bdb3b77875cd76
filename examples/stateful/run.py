"""The stateful example from Python: a process solver, the result's figures and a report."""

import sys
import tempfile
from pathlib import Path

import arenatui

if __name__ == "__main__":  # worker processes import this file again: the guard keeps them from running it
    result = arenatui.bench(Path(__file__).parent, k_values=[1, 2])
    print(f"average score {result.average_score():.2f}, pass@2 {result.pass_at_k(2):.2f}, run {result.run_id}")
    print("report:", result.report(sys.argv[1] if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "report.html", format="html"))
