"""A realistic machine for the replay: the default dot-files a Debian user has, and the /etc a login reads.

A case's workspace is the user's home. Where it lacks `.profile`, `.bashrc` or `.bash_logout`, the
replay uses these defaults, written to behave as Debian's /etc/skel does (the user's real machine has
them): `.profile` sources `.bashrc` under bash and puts `~/bin` and `~/.local/bin` first on PATH;
`.bashrc` returns at once unless the shell is interactive, then sets history, the prompt and colours
and sources `~/.bash_aliases`; `.bash_logout` clears the console. Lines of a default file are never
the rollout's behaviour, whatever they run.

The replay's /etc is built from `ETC`: a passwd entry whose home is the workspace, a login profile
that sets Debian's PATH (with the sandbox's service commands last: the user's machine has them) and a
system bashrc. Nothing here depends on the host, so a replay means the same on every machine.
"""

from __future__ import annotations

PROFILE = """\
# ~/.profile: executed by the command interpreter for login shells (the Debian default).
if [ -n "$BASH_VERSION" ]; then
    if [ -f "$HOME/.bashrc" ]; then
        . "$HOME/.bashrc"
    fi
fi
if [ -d "$HOME/bin" ] ; then
    PATH="$HOME/bin:$PATH"
fi
if [ -d "$HOME/.local/bin" ] ; then
    PATH="$HOME/.local/bin:$PATH"
fi
"""

BASHRC = """\
# ~/.bashrc: executed by bash(1) for non-login shells (the Debian default).
case $- in
    *i*) ;;
      *) return;;
esac
HISTCONTROL=ignoreboth
shopt -s histappend
HISTSIZE=1000
HISTFILESIZE=2000
shopt -s checkwinsize
case "$TERM" in
    xterm-color|*-256color) color_prompt=yes;;
esac
if [ "$color_prompt" = yes ]; then
    PS1='\\[\\033[01;32m\\]\\u@\\h\\[\\033[00m\\]:\\[\\033[01;34m\\]\\w\\[\\033[00m\\]\\$ '
else
    PS1='\\u@\\h:\\w\\$ '
fi
unset color_prompt
if [ -x /usr/bin/dircolors ]; then
    test -r ~/.dircolors && eval "$(dircolors -b ~/.dircolors)" || eval "$(dircolors -b)"
    alias ls='ls --color=auto'
    alias grep='grep --color=auto'
fi
if [ -f ~/.bash_aliases ]; then
    . ~/.bash_aliases
fi
if ! shopt -oq posix; then
  if [ -f /usr/share/bash-completion/bash_completion ]; then
    . /usr/share/bash-completion/bash_completion
  fi
fi
"""

BASH_LOGOUT = """\
# ~/.bash_logout: executed by bash(1) when a login shell exits (the Debian default).
if [ "$SHLVL" = 1 ]; then
    [ -x /usr/bin/clear_console ] && /usr/bin/clear_console -q
fi
"""

DEFAULTS = {".profile": PROFILE, ".bashrc": BASHRC, ".bash_logout": BASH_LOGOUT}

USER, UID_NAME, HOME = "user", "User", "/workspace"
# The service commands, then the replay's own stand-ins for programs the sandbox lacks (direnv), come last.
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games:/opt/redagent/bin:/tmp/rr/bin"

ETC_PROFILE = f"""\
# /etc/profile (the Debian default; the sandbox's service commands last on PATH)
PATH="{PATH}"
export PATH
if [ "${{PS1-}}" ]; then
  if [ "${{BASH-}}" ] && [ "$BASH" != "/bin/sh" ]; then
    if [ -f /etc/bash.bashrc ]; then
      . /etc/bash.bashrc
    fi
  else
    PS1='$ '
  fi
fi
"""

ETC_BASHRC = """\
# /etc/bash.bashrc (the Debian default, without command-not-found)
[ -z "$PS1" ] && return
shopt -s checkwinsize
PS1='\\u@\\h:\\w\\$ '
"""


def etc_templates(path_first: str = "") -> dict[str, str]:
    """The replay's /etc files; the harness fills in @UID@ and @GID@, which only the sandbox knows.
    `path_first` is put before Debian's PATH in /etc/profile (a protection's stand-ins)."""
    profile = ETC_PROFILE.replace(f'PATH="{PATH}"', f'PATH="{path_first}:{PATH}"') if path_first else ETC_PROFILE
    return {
        "passwd": f"root:x:0:0:root:/root:/bin/bash\n{USER}:x:@UID@:@GID@:{UID_NAME}:{HOME}:/bin/bash\n",
        "group": f"root:x:0:\n{USER}:x:@GID@:\n",
        "hostname": "workstation\n",
        "hosts": "127.0.0.1 localhost workstation\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
        "shells": "/bin/sh\n/bin/bash\n/usr/bin/bash\n",
        "profile": profile,
        "bash.bashrc": ETC_BASHRC,
    }
