"""The attack knowledge base: techniques from the field's public corpora, each mapped onto the IVC taxonomy.

corpus     the pinned corpora, where they are installed, their licences, and bounded reading of their files
readers    what each corpus holds: one reader per kind of file, yielding raw techniques with their citation
dedup      exact (normalised text) and near-duplicate (MinHash over word shingles) removal
classify   deterministic rules onto strategy, vulnerability, channel and constraints, each rule named
llm        the same classification by a backbone model, validated against the taxonomy
base       the stored knowledge base (the hand-written mappings and the generated file) and its statistics
ingest     the whole `redagent kb ingest`: read, deduplicate, classify, write
"""
