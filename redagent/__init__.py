"""REDAgentBench: executable red-teaming and faithful measurement of tool-using LLM agents.

The code lives in the top-level folders llm/ cases/ sandbox/ engine/ judges/ store/ console/, installed
as the subpackages redagent.cases, redagent.sandbox, … (see setup.py).
"""

__version__ = "0.1.0"
