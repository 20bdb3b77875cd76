import signal

from arenatui.cli import main

try:
    code = main()
except KeyboardInterrupt:  # a Ctrl-C so late that main() had already returned its answer
    code = 130
# Shutting down: a Ctrl-C now (a second press landing late) must not turn into a traceback or a signal death.
signal.signal(signal.SIGINT, signal.SIG_IGN)
raise SystemExit(code)
