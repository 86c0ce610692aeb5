"""The case-construction pipeline: knowledge base → IVC plans → compiled cases → checks → frozen library."""
