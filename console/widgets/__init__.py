"""Widgets shared by the console's screens: the evidence panes and the line-rendered lists they are built from."""

from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.trajectory import EntryList, TrajectoryView

__all__ = ["EntryList", "EvidencePanes", "TrajectoryView"]
