"""An answer's score without blocking the event loop: on the loop while quick, in a bounded thread when slow."""

from __future__ import annotations

import os

import anyio

from arenatui.config.schema import Case, Project
from arenatui.kernel.threads import in_daemon_thread
from arenatui.scoring import REGEX_TIMEOUT_S, Score, ScorerSet, ScoringError, ScoringSlow

SCORE_ON_LOOP_S = 0.02
"""How long a regex scorer may hold the event loop; one that needs longer runs again in a thread, with up
to REGEX_TIMEOUT_S, so in-flight calls keep being timed and Ctrl-C keeps working."""


class Scoring:
    """The project's scorers, and the threads their slow work may take."""

    def __init__(self, project: Project) -> None:
        self.scorers = ScorerSet(project.scorers, project.path.parent)
        # code_exec and user functions run in threads; this many at once, so a slow scorer cannot take every
        # thread the engine's other work needs (anyio's default pool has 40)
        self._slow = anyio.CapacityLimiter(max(1, os.cpu_count() or 1))

    async def after(self, e: Exception, output: str, case: Case) -> Score | str:
        """The verdict after scoring on the loop raised `e`, or why there is none (a message): one call's
        scoring error, never the sweep's end.

        A regex that needs longer than SCORE_ON_LOOP_S is run again in a thread (its matcher lets go of the
        GIL) for up to REGEX_TIMEOUT_S, so a pathological pattern neither blocks the loop nor hangs the sweep."""
        scorers = self.scorers
        try:
            if isinstance(e, ScoringSlow):
                async with self._slow:
                    return await in_daemon_thread(scorers.score, output, case, REGEX_TIMEOUT_S)
            raise e
        except ScoringError as err:
            return str(err)
        except Exception as err:  # a scorer bug: this call's error, not the sweep's end
            return f"scorer {scorers.for_case(case).cfg.name!r} raised {type(err).__name__}: {err}"
