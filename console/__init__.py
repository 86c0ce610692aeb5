"""The redagent command line (typer) and, later, the Textual console."""
