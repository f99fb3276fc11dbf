"""The embedding cache, private per tenant: `lookup` (the tiers and the rows written for the misses),
`keys` (per-tenant HMACs of a text), `near` (reuse of a near-identical text's vector), `sketch` (the
order-aware guard of that reuse) and `stats` (hit counters, flushed after commit)."""
