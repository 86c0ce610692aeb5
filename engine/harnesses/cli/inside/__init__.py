"""Programs that run inside a CLI's sandbox with only the standard library (bound read-only at /opt/redagent)."""
