"""Case schema, IVC taxonomy, loader and validator, the built-in library, and the self-check."""
