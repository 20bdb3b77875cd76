"""The retrieval example from Python: run it, then read the result as objects (start the mock server first)."""

import sys
import tempfile
from pathlib import Path

import arenatui

if __name__ == "__main__":
    result = arenatui.bench(Path(__file__).parent, k_values=[1, 3])
    for row in result.leaderboard():
        print(f"{row.model}: score {row.quality.estimate:.2f} over {row.quality.n} cases, "
              f"pass@3 {result.pass_at_k(3, row.model):.2f}")
    print(result.compare("rag", "plain").verdict)
    print("report:", result.report(sys.argv[1] if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "report.md"))
    print("run id:", result.run_id, "(arena browse", result.run_id + ")")
