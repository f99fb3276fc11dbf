"""A second sentence-transformers model for the model-switch tests, built and saved by the test itself
(no download): a one-layer BERT with random weights over a small word-level vocabulary, mean pooling
and normalisation, with the vector columns' 384 dimensions unless asked for another width."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "user likes green tea coffee lives in paris lyon plays the violin guitar dog cat walks daily "
    "goal weight is kg what does drink where who has a an of and to my i"
)


def tiny_model(folder: Path, dimensions: int = 384) -> Path:
    """Saves the model under `folder / "tiny-st"` (`tiny-st-<dimensions>` for another width; once)
    and returns that directory."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    suffix = "" if dimensions == 384 else f"-{dimensions}"
    target = folder / f"tiny-st{suffix}"
    if (target / "modules.json").exists():
        return target
    base = folder / f"tiny-bert{suffix}"
    base.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS.split()))]
    BertTokenizerFast(vocab={word: i for i, word in enumerate(vocab)}, do_lower_case=True).save_pretrained(
        base
    )
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=dimensions,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(base)
    transformer = models.Transformer(str(base), max_seq_length=60)
    pooling = models.Pooling(config.hidden_size, pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu").save(str(target))
    return target
