"""Records round-trip through their Parquet schemas; the request hash covers exactly what is sent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from helmflow.records import (
    INSTANCE_SCHEMA,
    ContentPart,
    Input,
    Instance,
    Reference,
    RequestBody,
    instance_from_row,
    instance_to_row,
    to_table,
)
from helmflow.versions import request_hash

IMAGE = ContentPart(type="image", uri="s3://media/cat.png", sha256="ab" * 32, mime="image/png")


def _instances() -> list[Instance]:
    return [
        Instance(id="t", input=Input(text="What is 2 + 2?"), references=[Reference(text="4", correct=True)]),
        Instance(
            id="c",
            split="train",
            input=Input(messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi ☃"}]),
            extra={"checklist": ["a", "b"], "n": 3},
        ),
        Instance(id="m", input=Input(parts=[ContentPart(type="text", text="Describe:"), IMAGE]), sub_split="vision"),
    ]


def test_instances_round_trip_through_parquet(store):
    table = to_table([instance_to_row(i) for i in _instances()], INSTANCE_SCHEMA)
    store.write_parquet("instances/x/v.parquet", table)
    back = [instance_from_row(r) for r in store.read_parquet("instances/x/v.parquet").to_pylist()]
    assert back == _instances()
    assert back[2].input.parts[1].sha256 == "ab" * 32


def test_input_needs_exactly_one_kind():
    with pytest.raises(ValidationError, match="exactly one"):
        Input(text="a", messages=[{"role": "user", "content": "b"}])
    with pytest.raises(ValidationError, match="exactly one"):
        Input()


def test_media_part_needs_uri_sha_and_mime():
    with pytest.raises(ValidationError, match="needs 'uri', 'sha256' and 'mime'"):
        ContentPart(type="image", uri="s3://x.png")


def test_request_hash_is_the_sha256_of_the_canonical_body():
    import hashlib

    from helmflow.records import ChatMessage, ImageRequest, ReasoningOptions
    from helmflow.versions import canonical_json

    bodies = [
        RequestBody(model="m", prompt="Q: é?\nA:", max_tokens=5, temperature=0.7, stop=["\n", "}"], logprobs=True),
        RequestBody(model="m", messages=[ChatMessage(role="system", content="be brief"),
                                         ChatMessage(role="user", content="hi")], max_tokens=3, temperature=0,
                    reasoning=ReasoningOptions(effort="low"), echo=False),
        RequestBody(model="m", parts=[ContentPart(type="text", text="Describe:"), IMAGE], max_tokens=5, temperature=0,
                    image_detail="low"),
        RequestBody(model="m", prompt="a cat", max_tokens=1, temperature=1, image_generation=ImageRequest(n=2)),
    ]
    for body in bodies:
        dumped = body.model_dump(mode="json", exclude_none=True)
        for part in dumped.get("parts") or []:
            part.pop("uri", None)
        expected = hashlib.sha256(canonical_json({"body": dumped, "sample": 2}).encode()).hexdigest()
        assert request_hash(body, 2) == expected


def test_request_hash_covers_body_image_and_sample_index():
    body = RequestBody(model="m", parts=[ContentPart(type="text", text="Describe:"), IMAGE], max_tokens=5, temperature=0)
    other_image = body.model_copy(update={"parts": [body.parts[0], IMAGE.model_copy(update={"sha256": "cd" * 32})]})
    h = request_hash(body, 0)
    assert request_hash(body, 0) == h
    assert request_hash(body, 1) != h
    assert request_hash(other_image, 0) != h
    assert request_hash(body.model_copy(update={"temperature": 0.5}), 0) != h
