"""The results view of a stored run: the screen (`screen.py`), what it shows gathered off the UI loop (`data.py`),
and the detail screens it opens (`detail.py`). Imports nothing here, so any of its modules can be imported first."""
