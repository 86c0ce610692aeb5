"""The model client: one interface to every model the project calls (litellm), below the packages that call it.

`client` holds it — `ModelRequest` / `ModelReply`, the retrying `LiteLLMModel`, `ModelFailure` with its reasons,
the pre-flight and the prices. It imports nothing of the project, so the engine's harnesses, the construction
pipeline's LLM planner and compiler (cases/) and the LLM judges (judges/) all use it without importing each other.
"""
