"""Tiny randomly initialised models built from a config (no download) for tests and benchmarks: a GPT-2
and its BPE, a LLaVA-style vision-language model with its processor, a CLIP, and a Stable Diffusion pipeline."""

from __future__ import annotations

from pathlib import Path

POSITIONS = 256
CORPUS = ["What is 12 + 30? 42", "What is 7 * 6? 42", "cat dog cat dog", "Answer: 12"] * 20


#: a chat template with a thinking switch (as Qwen3's has): switched on, the assistant turn opens ``<think>``
THINKING_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% if enable_thinking is defined and enable_thinking %} <think>"
    "{% endif %}{% endif %}"
)


def build_tiny_model(folder: Path, seed: int = 0, eos_token: str = "<|endoftext|>",
                     chat_template: str | None = None) -> Path:
    """A GPT-2 of 2 layers and its BPE tokenizer (with ``chat_template``, if given), saved as a checkpoint folder."""
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
    fast = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), eos_token=eos_token)
    if chat_template is not None:
        fast.chat_template = chat_template
    fast.save_pretrained(folder)
    eos = tok.token_to_id(eos_token)
    torch.manual_seed(seed)
    config = GPT2Config(
        n_layer=2, n_embd=32, n_head=2, n_positions=POSITIONS, vocab_size=tok.get_vocab_size(),
        bos_token_id=eos, eos_token_id=eos,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


#: a LLaVA-style template: one line per turn, images where their parts are
VLM_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] | upper }}: {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
IMAGE_SIDE, PATCH = 16, 8  # the processor resizes every image to 16x16: 4 patches, 4 image positions


def build_tiny_vlm(folder: Path, seed: int = 0, chat_template: bool = True) -> Path:
    """A LLaVA (2-layer CLIP vision tower, 2-layer Llama) and its processor, saved as a checkpoint folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessorPil,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>", "<image>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(CORPUS + ["How many shapes are there? 3", "USER: ASSISTANT: A B C D"] * 20, trainer)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), eos_token="<|endoftext|>",
                                        extra_special_tokens={"image_token": "<image>"})
    LlavaProcessor(
        image_processor=CLIPImageProcessorPil(size={"shortest_edge": IMAGE_SIDE},
                                              crop_size={"height": IMAGE_SIDE, "width": IMAGE_SIDE}),
        tokenizer=tokenizer, patch_size=PATCH, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=VLM_TEMPLATE if chat_template else None,
    ).save_pretrained(folder)
    eos = tok.token_to_id("<|endoftext|>")
    torch.manual_seed(seed)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                                       image_size=IMAGE_SIDE, patch_size=PATCH, projection_dim=16),
        text_config=LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                num_key_value_heads=2, vocab_size=tok.get_vocab_size(), max_position_embeddings=POSITIONS,
                                bos_token_id=eos, eos_token_id=eos, pad_token_id=eos),
        image_token_index=tok.token_to_id("<image>"), image_seq_length=(IMAGE_SIDE // PATCH) ** 2,
    )
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    return folder


CLIP_SIDE = 32  # the tiny CLIP's processor resizes and crops every image to 32x32 (16 patches of 8)


def build_tiny_clip(folder: Path, seed: int = 0) -> Path:
    """A CLIP (2-layer text and vision towers, 16 dimensions) with its processor: a byte-level CLIP BPE
    (every byte, alone and word-final, and a few merges written here) and a CLIP image processor, saved
    as a checkpoint folder that ``CLIPModel`` / ``CLIPProcessor.from_pretrained`` load by path."""
    import torch
    from tokenizers import pre_tokenizers
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPProcessor, CLIPTokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = [("r", "e"), ("re", "d</w>"), ("c", "i"), ("ci", "r"), ("l", "e</w>"), ("a", "n"), ("an", "d</w>")]
    vocab = {t: i for i, t in enumerate([*alphabet, *(c + "</w>" for c in alphabet), *(a + b for a, b in merges),
                                         "<|startoftext|>", "<|endoftext|>"])}
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = CLIPTokenizer(vocab=vocab, merges=merges)
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": CLIP_SIDE},
                                            crop_size={"height": CLIP_SIDE, "width": CLIP_SIDE})
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    bos, eos = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "max_position_embeddings": 77, "bos_token_id": bos,
                     "eos_token_id": eos, "pad_token_id": eos},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": CLIP_SIDE, "patch_size": 8},
        projection_dim=16,
    )
    CLIPModel(config).save_pretrained(folder)
    return folder


DIFFUSION_SIDE = 16  # the tiny pipeline's default image: an 8x8 latent decoded by a VAE that doubles it


def build_tiny_diffusers(folder: Path, seed: int = 0) -> Path:
    """A Stable Diffusion pipeline of random weights (a 2-block UNet with cross-attention, a 2-block VAE, a
    2-layer CLIP text encoder and the byte-level CLIP BPE of :func:`build_tiny_clip`, a DDIM scheduler), saved
    as the folder ``DiffusionPipeline.from_pretrained`` loads."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from tokenizers import pre_tokenizers
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = [("r", "e"), ("re", "d</w>")]
    vocab = {t: i for i, t in enumerate([*alphabet, *(c + "</w>" for c in alphabet), *(a + b for a, b in merges),
                                         "<|startoftext|>", "<|endoftext|>"])}
    torch.manual_seed(seed)
    bos, eos = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    text = CLIPTextModel(CLIPTextConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77,
                                        bos_token_id=bos, eos_token_id=eos, pad_token_id=eos))
    unet = UNet2DConditionModel(sample_size=DIFFUSION_SIDE // 2, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
                                attention_head_dim=2, norm_num_groups=4)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 8),
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        layers_per_block=1, norm_num_groups=4, sample_size=DIFFUSION_SIDE)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1)
    StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=77),
                            unet=unet, scheduler=scheduler, safety_checker=None, feature_extractor=None,
                            requires_safety_checker=False).save_pretrained(folder)
    return folder
