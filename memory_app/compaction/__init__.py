"""Pure logic of background compaction, on numpy arrays (no database).

`candidates` finds every pair of one scope's vectors within a cosine-distance radius (blocked
matrix products; an inverted-file partition for very large scopes); `grouping` turns the pairs into
cohesive groups (every member within the radius of every other) so near-duplicate pairs never chain
unrelated facts into one group.
"""

from memory_app.compaction.candidates import CandidatePairs, find_pairs
from memory_app.compaction.grouping import cohesive_groups

__all__ = ["CandidatePairs", "cohesive_groups", "find_pairs"]
