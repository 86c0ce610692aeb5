"""The HTML `console --web` serves: the console page (textual-serve's page, with nothing fetched from another
host, and a sign-out button), the sign-in form, the short page that hands a new session's key to the browser, and
the one that takes it back at sign-out.

Everything here is static text plus values the server made itself (a nonce, a session key, a clean URL); no
request value is echoed. Each page carries a Content-Security-Policy (`policy`) that allows scripts only from
this server or with the page's nonce, connections only to this server, and no framing.
"""

from __future__ import annotations

import html
import json

# The browser keeps the session's key here: local storage belongs to one origin (scheme, host and port), while
# a cookie for a host goes to every port of it.
KEY_STORAGE = "redagent-console-key"


def policy(nonce: str) -> str:
    """The pages' Content-Security-Policy. Inline styles are allowed (xterm.js sets them); scripts are not."""
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src 'self' 'nonce-{nonce}'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


def _script_value(value: str) -> str:
    """A string literal safe inside an inline <script>."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_STYLE = """
      body { background: #0c181f; margin: 0; color: rgba(255, 255, 255, 0.95);
             font-family: "Roboto Mono", menlo, monospace; }
      .plain { max-width: 44rem; margin: 10vh auto; padding: 2rem; background: #12232d; line-height: 1.5; }
      .plain input { width: 100%; box-sizing: border-box; padding: 0.5rem; margin: 0.5rem 0 1rem;
                     font-family: inherit; }
      .plain .error { color: #ff9b9b; }
      button { padding: 12px 28px; background-color: #5e0ba7; color: rgba(255, 255, 255, 0.95); border: none;
               font-family: "Roboto Mono", menlo, monospace; margin: 16px; cursor: pointer; }
      button:hover { background: #ac5af4; }
"""

# The fonts textual-serve ships, served by this server: its own page asks fonts.googleapis.com for them.
_FONTS = """
      @font-face { font-family: "Roboto Mono"; font-style: normal; font-weight: 100 700;
                   src: url("/static/fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
      @font-face { font-family: "Roboto Mono"; font-style: italic; font-weight: 100 700;
                   src: url("/static/fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
"""


def _page(title: str, body: str, head: str = "") -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="referrer" content="same-origin">
    <link rel="icon" href="data:,">
    <title>{html.escape(title)}</title>
    <style>{_FONTS}{_STYLE}</style>{head}
  </head>
  <body>
{body}
  </body>
</html>
"""


def sign_in_page(title: str, message: str | None = None, nonce: str | None = None) -> str:
    """The form that opens a session without putting the token in any URL (so never in the browser's history). With
    a nonce, the page also replaces its own address with the form's (an address that carried a token)."""
    error = f'<p class="error">{html.escape(message)}</p>' if message else ""
    clean = (
        f"""
    <script nonce="{nonce}">window.history.replaceState(null, "", "/login");</script>"""
        if nonce
        else ""
    )
    return _page(
        title,
        f"""    <div class="plain">
      <h1>{html.escape(title)}</h1>
      {error}
      <p>This console needs a token: the one its server printed when it started, or yours from
      <code>redagent team add</code>.</p>
      <form method="post" action="/login">
        <label for="token">Console token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required autofocus>
        <button type="submit">Open the console</button>
      </form>
    </div>{clean}""",
    )


def signed_out_page(title: str, nonce: str) -> str:
    """Answer to a sign-out: the session's key leaves this origin's local storage, and the tab goes to the form."""
    return _page(
        title,
        f"""    <div class="plain">Signed out. <a href="/login">Sign in again</a>.</div>
    <script nonce="{nonce}">
      try {{ window.localStorage.removeItem({_script_value(KEY_STORAGE)}); }} catch (e) {{}}
      window.location.replace("/login");
    </script>""",
    )


def session_page(title: str, nonce: str, key: str, target: str) -> str:
    """Answer to a token: keep the session's key in this origin's local storage, then go to `target` in place
    of the current history entry, so the address with the token is not the one the tab keeps."""
    return _page(
        title,
        f"""    <noscript><div class="plain">The console needs JavaScript.</div></noscript>
    <script nonce="{nonce}">
      try {{ window.localStorage.setItem({_script_value(KEY_STORAGE)}, {_script_value(key)}); }} catch (e) {{}}
      window.location.replace({_script_value(target)});
    </script>""",
    )


def console_page(title: str, nonce: str, font_size: int) -> str:
    """textual-serve's page (textual.js and xterm.css from this server) without its remote font. The websocket
    address is made in the page from the key in local storage: the page itself carries no secret, so reading
    it with a stolen cookie gives nothing that opens a console."""
    return _page(
        title,
        f"""    <div class="dialog-container intro-dialog">
      <div class="shade"></div>
      <div class="intro">
        <div>{html.escape(title)}</div>
        <button type="button" id="start">Start</button>
      </div>
    </div>
    <div class="dialog-container closed-dialog">
      <div class="shade"></div>
      <div class="intro">
        <div class="message">Session ended.</div>
        <button type="button" id="restart">Restart</button>
      </div>
    </div>
    <div class="plain no-key">This browser holds no key for this console session. Open the address with your
      token again, or <a href="/login">sign in</a>.</div>
    <form method="post" action="/logout" class="sign-out"><button type="submit" id="sign-out">Sign out</button></form>
    <div id="terminal" class="textual-terminal" data-font-size="{font_size}"></div>
    <script nonce="{nonce}">
      (function () {{
        var key = null;
        try {{ key = window.localStorage.getItem({_script_value(KEY_STORAGE)}); }} catch (e) {{}}
        var terminal = document.getElementById("terminal");
        if (key) {{
          var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
          terminal.dataset.sessionWebsocketUrl = scheme + window.location.host + "/ws/" + encodeURIComponent(key);
        }} else {{
          terminal.remove();
          document.body.classList.add("-no-key");
        }}
        function restart() {{
          var params = new URLSearchParams(window.location.search);
          params["delete"]("delay");
          var query = params.toString();
          window.location.href = window.location.pathname + (query ? "?" + query : "");
        }}
        document.getElementById("start").addEventListener("click", restart);
        document.getElementById("restart").addEventListener("click", restart);
        // Keys go to the console from the first one: xterm's input takes the focus once the console's first
        // output arrived (textual.js marks the body -first-byte; before that the socket that carries "focus" to
        // the app is not open), and again whenever the tab comes back. Until then the app showed no footer and
        // took no key before a click.
        function focusTerminal() {{
          var input = terminal.querySelector(".xterm-helper-textarea");
          if (input && document.body.classList.contains("-first-byte")) {{
            input.focus({{ preventScroll: true }});
            return true;
          }}
          return false;
        }}
        if (key && !focusTerminal()) {{
          var watcher = new MutationObserver(function () {{
            if (focusTerminal()) watcher.disconnect();
          }});
          watcher.observe(document.body, {{ attributes: true, attributeFilter: ["class"] }});
        }}
        window.addEventListener("focus", function () {{
          if (key && document.activeElement === document.body) focusTerminal();
        }});
      }})();
    </script>""",
        head=f"""
    <link rel="stylesheet" href="/static/css/xterm.css">
    <script src="/static/js/textual.js"></script>
    <style>{_CONSOLE_STYLE}</style>""",
    )


# textual-serve's own page styles (templates/app_index.html), kept so the console looks the same.
_CONSOLE_STYLE = """
      .dialog-container { position: absolute; width: 100vw; height: 100vh; display: flex; align-items: center;
                          justify-content: center; z-index: 10; }
      .shade { position: absolute; width: 100%; height: 100%; background: #0c181f;
               background-image: url("/static/images/background.png"); }
      .intro { width: 640px; height: 240px; font-size: 16px; z-index: 20; text-align: center; opacity: 1;
               background-color: #12232d; display: flex; align-items: center; justify-content: center;
               margin: 32px; }
      body.-first-byte .intro-dialog, body.-first-byte .intro-dialog .shade {
        opacity: 0; transition: opacity 0.3s ease-out; display: none; }
      body .textual-terminal { opacity: 0; transition: opacity 0.3s ease-out; }
      body.-first-byte .textual-terminal { opacity: 1; transition: opacity 0.3s ease-out; }
      .closed-dialog { opacity: 0; display: none; }
      body.-closed .closed-dialog { opacity: 1; display: flex; }
      #start { display: none; }
      #start.-delay { display: flex; }
      .no-key { display: none; }
      .sign-out { position: fixed; top: 0; right: 0; z-index: 30; margin: 0; }
      .sign-out button { margin: 0; padding: 1px 8px; font-size: 11px; opacity: 0.6; }
      .sign-out button:hover { opacity: 1; }
      body.-no-key .no-key { display: block; }
      body.-no-key .intro-dialog { display: none; }
"""
