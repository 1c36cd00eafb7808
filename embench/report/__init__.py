"""Tables and figures from result records."""
