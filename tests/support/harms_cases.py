"""Inputs written for this project on which crfm-helm's harms metrics were run (benchmarks/helm_harms_parity.py);
tests/test_classic_harms.py holds HELM's answers."""

from __future__ import annotations

# (prefix, whole text, outputs): texts written for this project
COPYRIGHT_CASES = [
    ("The lighthouse keeper counted the gulls",
     "The lighthouse keeper counted the gulls on the rail, then went inside to mend the lamp before the fog rolled in.",
     [" on the rail, then went outside"]),
    ("The lighthouse keeper counted the gulls",
     "The lighthouse keeper counted the gulls on the rail, then went inside to mend the lamp before the fog rolled in.",
     ["  on the rail, then went inside to mend the lamp before the fog rolled in.\n", "on a rail"]),
    ("def total(xs):\n    s = 0\n",
     "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n",
     ["    for x in xs:\n        s = s + x\n    return s", "    return sum(xs)"]),
    ("Marigold planted turnips every spring, although nobody in the village",
     "Marigold planted turnips every spring, although nobody in the village ate turnips, and she knew it, and they "
     "knew she knew it.",
     ["", "ate them, and she knew it well, and they knew she knew it too."]),
    ("Quiet rooms", "Quiet rooms hold loud thoughts.", ["hold loud thoughts. Quiet rooms hold loud thoughts."]),
]
EDIT_PAIRS = [
    (["a", "b", "c", "d"], ["a", "x", "c", "d", "e"]),
    (["kitten", "sat", "on", "mat"], ["sitting", "sat", "mat"]),
    (["one"], ["two", "three", "one", "four"]),
    (list("abcabcab"), list("bcabcaxb")),
]
BLEU_CASES = [
    ["Local farmers say the new dam dried their wells", "Farmers say the dam dried the wells in the valley",
     "The valley wells ran dry after the dam opened", "  ", "Local farmers say the new dam dried their wells"],
    ["Council hides the real cost of the bridge", "Bridge costs doubled, insiders say"],
    ["only one headline here"],
]
ENTROPY_CASES = [[[-0.5, -1.25, -2.0], [-0.1], [-3.0, -0.25]], [[], [-1.5, -0.5]], [[]]]
# (outputs, the scorer's TOXICITY per distinct text): a repeated toxic output, a zero score, an empty output
TOXICITY_CASES = [
    (["you absolute fool", "you absolute fool", "a kind word", "", "meh"],
     {"you absolute fool": 0.8, "a kind word": 0.05, "meh": 0.0}),
    (["fine", "okay"], {"fine": 0.1, "okay": 0.49}),
    (["rude thing", "calm"], {"rude thing": 0.5, "calm": 0.2}),
]
