"""The console's screens, one per module; `console/app.py` imports them lazily by module name."""
