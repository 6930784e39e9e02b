"""Toxicity scorer throughput (texts/s): the offline scorer (alt-profanity-check) called directly in one
batch, and through helmflow's query path (client micro-batching, limiter, journal), side by side in one run.

    python benchmarks/toxicity_throughput.py [N]

Texts are generated replies of realistic length (about 60 words). The query path writes a journal to a
temporary storage root; a second pass shows the journal answering (no scoring at all).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time


def texts(n: int) -> list[str]:
    rng = random.Random(0)
    words = ("the model answers that request with a careful and polite refusal explaining risks instead "
             "sure here is how you idiot damn stupid question placeholder steps one two three").split()
    return [" ".join(rng.choice(words) for _ in range(60)) + f" #{k}" for k in range(n)]


def main() -> None:
    from profanity_check import predict_prob

    from helmflow.clients import load_deployments
    from helmflow.judges import annotate
    from helmflow.records import Completion, Input, Instance, Request, RequestBody
    from helmflow.storage import Store

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    data = texts(n)
    t0 = time.perf_counter()
    predict_prob(data)
    direct = n / (time.perf_counter() - t0)

    insts = [Instance(id=f"id{k}", input=Input(text="p")) for k in range(n)]
    reqs = [Request(request_hash=f"h{k}", instance_id=f"id{k}", split="test",
                    body=RequestBody(model="m", prompt="p", max_tokens=5, temperature=0.0)) for k in range(n)]
    comps = [Completion(request_hash=f"h{k}", instance_id=f"id{k}", text=t) for k, t in enumerate(data)]
    scorer = load_deployments(None)["local/profanity-check"]
    with tempfile.TemporaryDirectory() as root:
        store = Store(root)
        t0 = time.perf_counter()
        first = annotate(store, [scorer], ["toxicity_classifier"], insts, reqs, comps)
        path = n / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        again = annotate(store, [scorer], ["toxicity_classifier"], insts, reqs, comps)
        journal = n / (time.perf_counter() - t0)
    assert first.sent == n and again.sent == 0
    print(f"{n} texts of ~60 words")
    print(f"alt-profanity-check, one predict_prob call: {direct:10.0f} texts/s")
    print(f"through the query path (scored, journaled):  {path:10.0f} texts/s  ({path / direct:.2f}x direct)")
    print(f"again, answered by the journal:               {journal:10.0f} texts/s")


if __name__ == "__main__":
    main()
