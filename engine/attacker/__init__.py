"""The adaptive attacker: a control agent that watches a rollout and moves its attack within the case's threat model.

  channels   the channels a case's threat model offers (derived from the case: its carriers, its tools)
  placement  putting a rewritten attack on a channel of the live sandbox, through the case's own mechanism
  view       the one function that builds what the attacker may observe (nothing its threat model forbids)
  moves      the move an attacker makes, its reply schema, and the scripted move sequence
  policy     the attackers: scripted (deterministic) and model-driven (any litellm model, with its contract)
  session    one rollout's attacker: rounds, budget, success checked by the verifier, events

The attacker never decides success: the loop ends when the case's verifier finds E = 1 after a round,
when the attacker stops, or when its budget of moves is spent (see docs/architecture.md, "Adaptive attacker").
Nothing is imported here: engine/calibration.py reads `channels` and `moves` only, and need not load the session,
the policies and the model client with them. `Channel` is defined in `placement`, which `channels` builds on.
"""
