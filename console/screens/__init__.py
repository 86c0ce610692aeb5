"""The console's screens, one per module, and their registry: `console/app.py` and the help screen find a screen
class by name here, imported lazily by module name, so a screen module never imports the app."""

from __future__ import annotations

import importlib

from textual.screen import Screen

# Screen name → class name in console/screens/<name>.py.
SCREENS = {
    "runs": "RunsScreen",
    "rollouts": "RolloutsScreen",
    "rollout": "RolloutScreen",
    "statistics": "StatisticsScreen",
    "audit": "AuditScreen",
    "adjudication": "AdjudicationScreen",
    "case_review": "CaseReviewScreen",
    "help": "HelpScreen",
}


class ScreenUnavailable(LookupError):
    """A screen module is missing or does not define its screen class."""


def screen_class(name: str) -> type[Screen]:
    """The screen class registered under `name`, imported on first use."""
    if name not in SCREENS:
        raise ScreenUnavailable(f"no screen named {name!r}")
    try:
        module = importlib.import_module(f"redagent.console.screens.{name}")
        return getattr(module, SCREENS[name])
    except (ImportError, AttributeError) as exc:
        raise ScreenUnavailable(f"the {name} screen is not available ({exc})") from None


def screen_name(screen: Screen) -> str:
    """The registry name of a screen instance (its module's last part), e.g. "runs"."""
    return getattr(screen, "SCREEN_NAME", None) or type(screen).__module__.rsplit(".", 1)[-1]
