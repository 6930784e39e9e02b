"""unitxt's own rendering of a ToRR dataset, for comparing prompts with helmflow's: a catalog card whose loader is
swapped for rows a test writes (handed on as the card's own loader would), under ToRR's recipe for a variant."""

from __future__ import annotations

from typing import Any


def unitxt_test_split(card_name: str, data: dict[str, list[dict[str, Any]]], serialization: str,
                      augmentation: str) -> list[dict[str, Any]]:
    """The test split of ``card_name`` on ``data``, rendered with ToRR's serializer and augmentor for the
    (serialization, augmentation) variant, no demonstrations."""
    from unitxt import load_dataset
    from unitxt.artifact import fetch_artifact
    from unitxt.loaders import LoadFromDictionary

    card, _ = fetch_artifact(card_name)
    card.loader = LoadFromDictionary(data=data, data_classification_policy=["public"])
    recipe, _ = fetch_artifact(f"recipes.torr.{card_name.split('.')[1]}.{serialization}.{augmentation}"
                               "_augmentation_5_demos")  # ToRR's own serializer and augmentor for the variant
    return list(load_dataset(card=card, template_card_index=0, serializer=recipe.serializer,
                             augmentor=recipe.augmentor, num_demos=0, split="test"))
