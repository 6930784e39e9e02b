"""Time to perturb 1,000 instances, per perturbation (prints a table; not a test).

The instances are the 40 fixture texts of ``tests/data/perturbation_fixture.jsonl`` (each a sentence
with two references) under 1,000 distinct ids, so every instance draws its own random stream. The
first call builds a perturbation's patterns (the misspelling table compiles 6,523 alternatives); it
is timed apart, as ``setup``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from helmflow.perturbations import PERTURBATIONS, SETS
from helmflow.records import Input, Instance, Reference

N = 1000
ROWS = [json.loads(x) for x in (Path(__file__).resolve().parents[1] / "tests/data/perturbation_fixture.jsonl").read_text().splitlines()]


def main() -> None:
    instances = [Instance(id=f"id{i}", input=Input(text=ROWS[i % len(ROWS)]["input"]),
                          references=[Reference(text=r["text"], correct=r["correct"]) for r in ROWS[i % len(ROWS)]["references"]])
                 for i in range(N)]
    names = [n for n in dict.fromkeys(m for s in SETS.values() for m in s)]
    print(f"{'perturbation':<14} {'setup ms':>9} {'ms / 1,000 instances':>22} {'changed':>8}")
    for name in names:
        p = PERTURBATIONS.get(name)
        start = time.perf_counter()
        p.apply(instances[0])
        setup = time.perf_counter() - start
        start = time.perf_counter()
        out = [p.apply(i) for i in instances]
        took = time.perf_counter() - start
        changed = sum(a != b for a, b in zip(out, instances))
        print(f"{name:<14} {setup * 1e3:>9.1f} {took * 1e3 * 1000 / N:>22.1f} {changed:>8}")


if __name__ == "__main__":
    main()
