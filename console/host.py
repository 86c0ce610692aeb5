"""What the console's screens use of the app that hosts them: its open store, `show` and its run control.

The console app (console/app.py) hosts every screen; the tests and benchmarks/console_latency.py host one
screen in a minimal app holding only what that screen uses. Textual types `self.app` as `App[Any]`, so a
screen reads it through these functions: each names the one need, checks it where it is read, and returns
it typed. A screen is opened only once the store is (`RedAgentApp.show` refuses before), so the store a
screen reads is never None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from redagent.console.run_control import RunControl
    from redagent.store.db import Store


@runtime_checkable
class StoreHost(Protocol):
    @property
    def store(self) -> Store | None: ...


@runtime_checkable
class ShowHost(Protocol):
    def show(self, name: str, **kwargs: Any) -> None: ...


@runtime_checkable
class RunsHost(Protocol):
    @property
    def runs(self) -> RunControl: ...


def store_of(node: DOMNode) -> Store:
    """The store of the app hosting `node`: open, since screens open only once it is."""
    app = node.app
    assert isinstance(app, StoreHost) and app.store is not None, "a screen is opened only once the store is"
    return app.store


def show(node: DOMNode, name: str, **kwargs: Any) -> None:
    """Open screen `name` through the app hosting `node` (RedAgentApp.show: role, store and stack rules)."""
    app = node.app
    assert isinstance(app, ShowHost), "the console's host app opens screens by name"
    app.show(name, **kwargs)


def runs_of(node: DOMNode) -> RunControl:
    """The run control of the app hosting `node`: the runs it started and drives."""
    app = node.app
    assert isinstance(app, RunsHost), "the runs screen is hosted by the console app, which drives runs"
    return app.runs
