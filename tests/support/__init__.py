"""Test support: helpers the tests import as ``tests.support.<module>``, and the test doubles (a local
Hugging Face Hub, a Perspective API, Prefect servers, fault injectors) no user runs. Fixtures live in
``tests/conftest.py``; nothing in the product imports this package."""
