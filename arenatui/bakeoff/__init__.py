"""The bake-off as one decision: quality beside behaviour at the target load, identical conditions, repeated load
runs, the errors each candidate makes, and the provider's terms; each candidate eliminated (with its reason) or a
contender.

Pure parts, each computing its verdicts with the evidence they rest on: `terms` (requirements met, unknowns to
ask), `conditions` (settings that differ between candidates), `atload` (a load run's segment at the target),
`series` (repeated load runs: their schedule and spread), `failures` (failure modes with intervals, refusals by
category), `decision` (eliminated or contender). `build` reads the stored runs (through `store.read.read_run`) into
one JSON-shaped page; `page` renders it (Markdown, HTML) with the decision report's styling and escaping.
"""
