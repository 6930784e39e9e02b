"""Test doubles that ship with helmflow, out of the product code: the dev server (OpenAI- and
Anthropic-compatible endpoints with latency and faults; ``helmflow dev-server``) and a local
Hugging Face Hub (``python -m helmflow.testing.hub_server``). Tests and benchmarks point clients
and datasets at them; nothing in a board run imports them."""
