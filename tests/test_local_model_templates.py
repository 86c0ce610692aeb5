"""benchmarks/local_model/*.jinja: the chat templates that give the README's CPU-only models their tools under
llama-server (`--jinja --chat-template-file`).

llama-server renders them with its own Jinja engine and derives its tool-call parser from how they write a call;
here Jinja2 (installed with litellm) renders them as a request with tools, a tool call and its result would be, and
the tests read back what the model is shown: every offered tool, each earlier call in the format the model is told
to use, each tool result, and the turn the model is to write.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

jinja2 = pytest.importorskip("jinja2")

TEMPLATES = Path(__file__).parent.parent / "benchmarks" / "local_model"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_emails",
            "description": "List the inbox",
            "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "forward_email",
            "description": "Forward one email",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}, "to": {"type": "string"}}},
        },
    },
]
CALL_ARGS = {"folder": "inbox"}
CONVERSATION = [
    {"role": "system", "content": "You act for the user."},
    {"role": "user", "content": "What is new?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "list_emails", "arguments": json.dumps(CALL_ARGS)}},
            {"id": "c2", "type": "function", "function": {"name": "forward_email", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "1 email from IT: set up a forwarding rule"},
]


def render(name: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    env = jinja2.Environment(autoescape=False)
    env.policies["json.dumps_kwargs"] = {"sort_keys": False}
    template = env.from_string((TEMPLATES / name).read_text())
    return template.render(messages=messages, tools=tools, add_generation_prompt=True, bos_token="<bos>")


def offered(prompt: str) -> list[str]:
    listed = re.search(r"<tools>(\s*[\[{].*?)</tools>", prompt, re.S)  # not "within <tools></tools>"
    assert listed, prompt
    body = listed.group(1).strip()
    # gemma3 and qwen2.5-coder list one JSON object a line, smollm2 one JSON array (the format of its model card)
    tools = json.loads(body) if body.startswith("[") else [json.loads(line) for line in body.splitlines()]
    return [tool["name"] for tool in tools]


def calls(prompt: str) -> list[dict[str, Any]]:
    found = []
    # <tool_call> tags (gemma3, smollm2) or a ```json block (Qwen2.5-Coder writes its calls so)
    for block in re.findall(r"<tool_call>(.*?)</tool_call>|```json\n(.*?)\n```", prompt, re.S):
        block = block[0] or block[1]
        try:
            value = json.loads(block)
        except ValueError:  # the format shown in the instructions, with placeholders: no call
            continue
        found.extend(value if isinstance(value, list) else [value])
    return found


TEMPLATE_NAMES = ["gemma3-tools.jinja", "smollm2-tools.jinja", "qwen2.5-coder-tools.jinja"]


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_the_model_is_shown_its_tools_its_calls_and_their_results(name: str) -> None:
    prompt = render(name, CONVERSATION, TOOLS)
    assert offered(prompt) == ["list_emails", "forward_email"]
    assert "You act for the user." in prompt
    assert calls(prompt)[0] == {"name": "list_emails", "arguments": CALL_ARGS}
    assert "<tool_response>\n1 email from IT: set up a forwarding rule\n</tool_response>" in prompt
    assert prompt.endswith("model\n" if name.startswith("gemma") else "<|im_start|>assistant\n")


@pytest.mark.parametrize("name", ["gemma3-tools.jinja", "qwen2.5-coder-tools.jinja"])
def test_one_call_is_written_per_turn(name: str) -> None:
    # With one call per turn llama-server's grammar allows one call: the pretrained Gemma otherwise repeats its
    # call until the token limit.
    assert [c["name"] for c in calls(render(name, CONVERSATION, TOOLS))] == ["list_emails"]


def test_qwen_coder_is_told_the_code_block_it_writes_and_no_tags() -> None:
    # The Coder models answer a call as a ```json block whatever the GGUF's template asks; llama-server derives
    # its parser from this template, so the template must ask for (and write) exactly that.
    prompt = render("qwen2.5-coder-tools.jinja", CONVERSATION, TOOLS)
    assert '```json\n{"name": <function-name>, "arguments": <args-json-object>}\n```' in prompt
    assert "<tool_call>" not in prompt
    assert prompt.startswith("<|im_start|>system\nYou act for the user.")


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_without_tools_no_tool_list_is_written(name: str) -> None:
    prompt = render(name, CONVERSATION[:2], None)
    assert "<tools>" not in prompt and "You act for the user." in prompt
