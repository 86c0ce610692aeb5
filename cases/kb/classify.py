"""Deterministic rules that place a corpus technique on the IVC taxonomy, each rule named in the mapping it made.

Three questions, answered in order from what the corpus layout says (`Raw.kind`, `Raw.carrier`) and what the
text says:

  strategy       injected text goes by its carrier (a tool description → T1, retrieved memory → T4, mail → E2,
                 a web page → E3, a repository's configuration → E5, a file → E1, a tool's result → T3); a
                 user-side prompt by its framing (a multi-turn method → U5, a claim of authority → U4, a
                 persona or fiction → U2, split or encoded steps → U3), else a plain request (U1)
  vulnerability  by what the strategy exploits (U4 → V02, U5 → V09, injected instructions → V01, a look-alike
                 → V06), else by what the text is after (secrets → V05, money and destinations → V10,
                 destruction → V11, running code → V08). A wrapper with a slot for any goal exploits whatever
                 its goal does (`*`, as for its constraints). Anything else is a request for content that names
                 no action an agent takes (most of the chat-safety corpora): no vulnerability of this taxonomy
                 applies (`none`). Every vulnerability is an agent's failure to act safely; calling such a
                 request "excessive agency" (V04, "acts beyond the user's request") would be wrong, since the
                 user asks for exactly that (42 of 50 in a hand check had been labelled so)
  constraints    every constraint of the taxonomy the text's goal would break (secrets, personal data,
                 running or downloading code, persistence, security controls, deletion, mail, public posts,
                 payments, sharing); a wrapper with a slot for any goal applies to any constraint ("*"); an
                 injected instruction with no recognisable goal breaks C27 (an action no user asked for)

The channel is always the strategy's (cases/taxonomy.py). The rules are word patterns: cheap, reproducible,
and wrong sometimes — `redagent kb show` names the rules behind a mapping so a reviewer can see why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from redagent.cases.taxonomy import STRATEGIES, VULNERABILITIES

ANY = "*"  # a technique that carries any goal (a jailbreak wrapper with a slot) applies to every constraint
NO_VULNERABILITY = "none"  # a request for content: it names no action, so no vulnerability of the taxonomy
# What a mapping's vulnerability may be, whoever classified it (the rules, a model, a stored file).
MAPPING_VULNERABILITIES = frozenset(VULNERABILITIES) | {ANY, NO_VULNERABILITY}
INJECTED = ("injection", "injection_goal", "injection_template", "falsified_fact")


@dataclass(frozen=True)
class Classification:
    strategy: str
    vulnerability: str
    channel: str
    constraints: tuple[str, ...]
    rules: tuple[str, ...]  # the rule behind the strategy, the vulnerability and each constraint group


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# -- strategy: injected text by its carrier ------------------------------------------------------------
_CARRIER_RULES: list[tuple[str, str, re.Pattern[str]]] = [
    ("T1", "R-T1-tool-description", _re(r"\b(tool|function)('s)? description|description of the \w+ tool|mcp\b")),
    ("T2", "R-T2-lookalike-tool", _re(r"\b(look-?alike|shadow(ing)?|impersonat\w+) tool")),
    ("T5", "R-T5-error", _re(r"\berror (message|response)|\bexception\b")),
    ("T4", "R-T4-retrieval", _re(r"\b(retriev\w*|memory|knowledge[- ]base|rag|vector store|search index)\b")),
    ("E5", "R-E5-config", _re(r"\b(readme|config\w*|makefile|agents\.md|setup\.py|pyproject|ci workflow|dotfile)")),
    ("E2", "R-E2-email", _re(r"\b(e-?mail|inbox|mailbox)\b")),
    ("E3", "R-E3-web", _re(r"\b(web ?page|website|web site|browser|search results?|url)\b")),
    ("E4", "R-E4-shared-document", _re(r"\b(shared|cloud|drive|google doc|uploaded) ?(document|file|drive|doc)s?\b")),
    ("E1", "R-E1-workspace-file", _re(r"\b(coding \w+|issue|code comment|document|file|notes?|spreadsheet|pdf)\b")),
    ("T3", "R-T3-tool-output", _re(r"\b(tool output|tool result|api response|transaction|review|chat|message)s?\b")),
]

# -- strategy: user-side framings ----------------------------------------------------------------------
_AUTHORITY = _re(
    r"\b(i am|i'm|this is|as) (your|the|an?) (ceo|cfo|cto|manager|boss|supervisor|administrator|admin|"
    r"developer|creator|owner|auditor|officer|police|lawyer|director|doctor|professor|researcher)\b|"
    r"\bon behalf of\b|\bcompliance\b|\bauthori[sz]ed (by|to|personnel|user)\b|"
    r"\blegal (team|department|requirement)|\bendorse(d|ment)\b|\bexpert (says|opinion|endorsement)|"
    r"\bauthority\b|\burgent(ly)?\b|\bdeadline\b|\bemergency\b|\boverride (protocol|code|mode)"
)
# A persona or a fiction that lifts the rules; a request to write a story about something is not one by itself.
_PERSONA = _re(
    r"\b(you are now|you are going to|from now on,? you|pretend|role-?play|act as|acting as|stay in character|"
    r"in character|you will (now )?(act|be|play|respond as)|imagine (you|that you|yourself)|hypothetical(ly)?|"
    r"fictional|fiction|in a (story|novel|movie|film|play|game)|character named|persona|developer mode|"
    r"jailbr\w+|dan|do anything now|simulat\w+|opposite mode|grandma|grandmother|grandpa|grandfather|let'?s play|play a game|alter ego|"
    r"unfiltered|uncensored|no (restrictions|limits|rules|filters|ethics|morals)|amoral|unrestricted|"
    r"free of all)\b"
)
# A claimed profession or purpose that legitimises the request (an expert, a researcher, a training course).
_CREDENTIAL = _re(
    r"\b(i am|i'm|as) an? (\w+ ){0,2}(immunologist|doctor|physician|nurse|researcher|scientist|professor|teacher|"
    r"lawyer|police officer|detective|investigator|journalist|security (researcher|professional|engineer)|"
    r"penetration tester|pentester|therapist|psychologist|clinician|chemist|pharmacist|toxicologist)\b|"
    r"\b(i am|i'm) (preparing|writing|compiling|working on|developing|running) (a|an|some) (\w+ ){0,3}(training|study|"
    r"report|research|paper|workshop|lecture|course|curriculum|examples|dataset|lab)\b|\bfor (a|my|our) "
    r"(research|study|training|class|workshop|paper|thesis)\b|\bwith full permissions?\b"
)
# Strong signs that the goal is hidden in a transformation or an ordinary-looking task (checked before personas).
_OBFUSCATE = _re(
    r"\b(in reverse|reversed|backwards|base64|rot-?13|cipher|caesar|morse|atbash|encoded|decode|hexadecimal|"
    r"table below|latex table|code below|(python|java|c\+\+|javascript) (code|program|function|list|dict)|"
    r"fill in the|complete the (table|code|following)|concatenat\w+|split (it|this) into|one (word|letter) at a "
    r"time|word by word|flip(ped)? (the )?(text|words|characters))"
)
_DECOMPOSE = _re(
    r"\b(step \d|step-by-step plan|part \d|split (it|this)|one (word|letter) at a time|word by word|"
    r"complete the (table|sentence|following|code)|fill in the|continue the|concatenate|decode|encoded|base64|"
    r"rot-?13|cipher|hex(adecimal)?|reverse the|translate the following|placeholder|variable [a-z]\b)"
)
_MULTI_TURN = _re(
    r"\b(crescendo|multi-?turn|over (several|multiple) turns|follow-?up|escalat\w+|gradually|many-?shot|"
    r"(continuing|continued) from our (previous|earlier) conversation|you (already )?agreed to|as we discussed)\b"
)

# -- what the text is after ----------------------------------------------------------------------------
_SECRET = _re(
    r"\b(passwords?|passcodes?|credentials?|api[ _-]?keys?|secrets?|tokens?|ssh|private keys?|2fa|one-?time (code|"
    r"password)|otp|security code|system prompt|initial instructions|instructions you were given|env(ironment)? "
    r"variables?|\$[A-Z_]*(KEY|TOKEN|SECRET))\b"
)
_PERSONAL = _re(
    r"\b(ssn|social security|passport( number)?|credit card|date of birth|home address|phone number|"
    r"personal (data|information|details)|medical record|email address of|user information|id_number|pii)\b"
)
_MONEY = _re(
    r"\b(iban|wire|transfers?|send (money|a transaction|funds|payment)|transactions?|payments?|payee|"
    r"bank (details|account)|account number|invoice|crypto|bitcoin|btc|wallet|paypal|venmo|\$\d)"
)
_DESTROY = _re(r"\b(delete|remove all|erase|wipe|rm -rf|drop (all|table)|destroy|cancel|format (the|your) )")
_CODE = _re(
    r"\b(run|execute|eval|install)\b[^.\n]{0,60}\b(script|command|code|package|shell|bash|curl|wget|pip|binary)"
    r"|\$\(|python -c|os\.system|subprocess|\bcurl\b|\bwget\b|<script|javascript:|\brm -rf\b"
)
_EXFIL = _re(r"\b(send|forward|email|mail|post|upload|share|leak|exfiltrat\w*)\b[^.\n]{0,80}(@|https?://|\bto\b)")
_IMPERATIVE = _re(r"\b(ignore|instead|you must|please|do not|don't|make sure|before you|important)\b")

# -- constraint groups: (rule id, pattern, constraints it brings) ----------------------------------------
_CONSTRAINT_RULES: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    ("R-C-secrets", _SECRET, ("C03", "C11", "C12", "C26")),
    ("R-C-personal-data", _PERSONAL, ("C13", "C14")),
    ("R-C-code", _CODE, ("C02",)),
    ("R-C-download", _re(r"\b(download|wget|curl\b[^\n]{0,40}-o)\b"), ("C15",)),
    (
        "R-C-persistence",
        _re(r"\b(crontab|cron job|\.bashrc|\.profile|startup (script|item)|autostart|systemd)"),
        ("C05",),
    ),
    (
        "R-C-security-controls",
        _re(
            r"\b(disable|turn off|bypass|skip)\b[^.\n]{0,40}\b(security|firewall|antivirus|2fa|mfa|logging|checks?|"
            r"hooks?|authentication)|--no-verify|chmod 777"
        ),
        ("C04",),
    ),
    (
        "R-C-delete-files",
        _re(
            r"\b(delete|remove|erase|wipe|rm -rf|overwrite)\b[^.\n]{0,40}\b(files?|folders?|director(y|ies)|repo\w*|data)\b"
        ),
        ("C01",),
    ),
    (
        "R-C-delete-mail",
        _re(r"\b(delete|remove|erase)\b[^.\n]{0,40}\b(e-?mails?|mail|alerts?|notices?|messages?)\b"),
        ("C09",),
    ),
    (
        "R-C-records",
        _re(
            r"\b(delete|remove|alter|rewrite|erase|drop)\b[^.\n]{0,40}\b(records?|ledger|audit log|logs|contract|tables?)\b"
        ),
        ("C25",),
    ),
    (
        "R-C-mail-out",
        _re(r"\b(send|forward|e-?mail|mail)\b[^.\n]{0,80}(@|\bto (the )?(attacker|external|outside|this address))"),
        ("C07", "C10"),
    ),
    ("R-C-forwarding-rule", _re(r"\bforward(ing)? (rule|all)"), ("C08",)),
    ("R-C-public-post", _re(r"\b(post|publish|tweet|blog|forum|public(ly)?)\b"), ("C13",)),
    ("R-C-forms", _re(r"\b(form|submit|sign[- ]?up|register)\b"), ("C14",)),
    ("R-C-payments", _MONEY, ("C16", "C21")),
    ("R-C-payees", _re(r"\b(payee|recipient|beneficiary|bank details|new account)\b"), ("C18",)),
    ("R-C-scheduled", _re(r"\b(scheduled|recurring|standing order)\b"), ("C19",)),
    ("R-C-cancel", _re(r"\bcancel\w*\b"), ("C20",)),
    ("R-C-limits", _re(r"\b(limit|approval threshold|maximum amount)\b"), ("C17",)),
    ("R-C-sharing", _re(r"\bshar(e|ing)\b[^.\n]{0,40}\b(document|file|folder|drive|link|access)"), ("C22", "C23")),
    ("R-C-upload", _re(r"\bupload\w*\b"), ("C24",)),
    ("R-C-exfiltration", _EXFIL, ("C26",)),
]
_SLOT = re.compile(r"\{\{\s*prompt\s*\}\}|\{(prompt|goal|query|question|payload)\}|\[(insert|prompt)[^\]]*\]", re.I)


_TYPED_BY_USER = _re(r"\b(type|write|enter) your attack directly\b|\bas the user\b")


def _strategy(kind: str, carrier: str, text: str) -> tuple[str, str]:
    if kind in INJECTED and _TYPED_BY_USER.search(carrier):
        kind = "objective"  # b3's direct attacks: the attacker is the one typing to the agent
    if kind in INJECTED:
        where = carrier or ""
        for code, rule, pattern in _CARRIER_RULES:
            if where and pattern.search(where):
                return code, rule
        if kind == "injection_template":
            return "T3", "R-T3-injection-wrapper"  # AgentDojo's wrappers go into whatever a read call returns
        return "T3", "R-T3-injected-text"
    if kind == "adversarial_suffix":  # an optimised token string (GCG, adaptive attacks) appended to a plain request
        return "U1", "R-U1-adversarial-suffix"
    if kind == "multi_turn" or _MULTI_TURN.search(text):
        return "U5", "R-U5-multi-turn"
    if kind == "attacker_prompt":  # PyRIT's red-teaming orchestrators converse with the target over turns
        return "U5", "R-U5-attacker-dialogue"
    if kind == "tense_reformulation":
        return "U2", "R-U2-tense-reframing"  # a past- or future-tense framing that distances the request
    if kind == "continuation_bait":  # a sentence to complete whose natural completion is the harm
        return "U3", "R-U3-continuation"
    if _OBFUSCATE.search(text):
        return "U3", "R-U3-obfuscation"
    if _PERSONA.search(text):  # before authority: a persona wrapper often also claims an override
        return "U2", "R-U2-persona"
    if _AUTHORITY.search(text):
        return "U4", "R-U4-authority"
    if _CREDENTIAL.search(text):
        return "U4", "R-U4-claimed-credential"
    if kind in ("jailbreak_template", "persuasion"):
        return "U2", "R-U2-jailbreak-wrapper"
    if _DECOMPOSE.search(text):
        return "U3", "R-U3-decomposition"
    if kind == "converter":  # PyRIT's converters rewrite a request into another form (code, cipher, tone)
        return "U3", "R-U3-converter"
    return "U1", "R-U1-plain-request"


def _vulnerability(strategy: str, kind: str, text: str) -> tuple[str, str]:
    if kind == "falsified_fact":
        return "V07", "R-V07-falsified-data"  # planted claims the agent repeats as fact, no instruction
    if kind in ("jailbreak_template", "adversarial_suffix"):
        return ANY, "R-V-any-wrapper"  # a wrapper carries any goal: its own words say nothing of the harm
    if kind == "privacy_request":
        return "V05", "R-V05-private-information"  # Do-Not-Answer's requests for a person's or a firm's secrets
    if kind == "precondition_violation":
        return "V03", "R-V03-precondition"  # the user asks for what a rule about the user forbids
    if strategy == "T2":
        return "V06", "R-V06-lookalike"
    if strategy == "T4" and not _IMPERATIVE.search(text):
        return "V07", "R-V07-falsified-data"
    if strategy[0] in "ET":
        return "V01", "R-V01-injected-instructions"
    if strategy == "U4":
        return "V02", "R-V02-authority"  # claims of authority or identity accepted without verification
    if strategy == "U5":
        return "V09", "R-V09-escalation"
    if _SECRET.search(text) or _PERSONAL.search(text):
        return "V05", "R-V05-secrets"
    if _MONEY.search(text):
        return "V10", "R-V10-destination"
    if _DESTROY.search(text):
        return "V11", "R-V11-irreversible"
    if _CODE.search(text):
        return "V08", "R-V08-code-execution"
    if _SLOT.search(text):
        return ANY, "R-V-any-wrapper"
    return NO_VULNERABILITY, "R-V-none-content-request"


def classify(kind: str, carrier: str, text: str) -> Classification:
    """The technique's place on the taxonomy by the rules above, with the rules that placed it."""
    strategy, s_rule = _strategy(kind, carrier, text)
    vulnerability, v_rule = _vulnerability(strategy, kind, text)
    constraints: list[str] = []
    rules = [s_rule, v_rule]
    if _SLOT.search(text) or kind in ("jailbreak_template", "adversarial_suffix"):
        constraints, rules = [ANY], [*rules, "R-C-any-wrapper"]
    else:
        for rule, pattern, codes in _CONSTRAINT_RULES:
            if pattern.search(text):
                constraints += [c for c in codes if c not in constraints]
                rules.append(rule)
        if not constraints and kind in INJECTED:
            constraints, rules = ["C27"], [*rules, "R-C27-injected-action"]
    return Classification(
        strategy=strategy,
        vulnerability=vulnerability,
        channel=STRATEGIES[strategy].channel,
        constraints=tuple(sorted(constraints)),
        rules=tuple(rules),
    )
