"""`python -m arenatui`: the `arena` command, with Ctrl-C quiet from the first import to the last byte."""

import signal

try:
    from arenatui.cli import main

    code = main()
except KeyboardInterrupt:  # a Ctrl-C during start-up, or so late that main() had already returned its answer
    code = 130
# Shutting down: a Ctrl-C now (a second press landing late) must not turn into a traceback or a signal death.
try:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # which first runs any handler still pending
except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
raise SystemExit(code)
