"""What every layer may import and that imports nothing of embench: errors, the registry, hashing, the version."""
