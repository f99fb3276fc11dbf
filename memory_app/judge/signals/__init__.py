"""What the offline judge reads from two texts: word classes (lexicon.py), tokens and numbers
(text_norm.py), amounts (quantities.py), word alignment (alignment.py), `pair_facts` (features.py),
the texts it can read at all (reach.py) and the exact bound before the token model (gate.py).

Modules: alignment, features, gate, lexicon, quantities, reach, text_norm.
"""
