"""The five service surfaces, the tool gateway, state diff, the verifier language and isolation."""
