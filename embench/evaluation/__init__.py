"""How results are scored and kept: the protocol axes as one list of choices, suites, result
records with their store and provenance."""
