"""Audits: one model under every protocol variant and which protocol published numbers match
(``knobs``, ``protocol``, ``reported``); the published-table check (``published_table``)."""
