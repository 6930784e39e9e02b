"""A tiny randomly initialised GPT-2 and its BPE, built from a config (no download): tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

POSITIONS = 256
CORPUS = ["What is 12 + 30? 42", "What is 7 * 6? 42", "cat dog cat dog", "Answer: 12"] * 20


def build_tiny_model(folder: Path, seed: int = 0, eos_token: str = "<|endoftext|>") -> Path:
    """A GPT-2 of 2 layers and its BPE tokenizer, saved as a checkpoint folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), eos_token=eos_token).save_pretrained(folder)
    eos = tok.token_to_id(eos_token)
    torch.manual_seed(seed)
    config = GPT2Config(
        n_layer=2, n_embd=32, n_head=2, n_positions=POSITIONS, vocab_size=tok.get_vocab_size(),
        bos_token_id=eos, eos_token_id=eos,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder
