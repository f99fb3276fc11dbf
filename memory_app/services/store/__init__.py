"""The write path (memory_store_many and its judge, config, validation and actions), edits
of one memory, forgetting, and filling vectors of memories stored while embedding was down.

Modules: actions, config, edit, embedding_backfill, forget, locks, memories, types, validation, write.
"""
