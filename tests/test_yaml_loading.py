"""YAML files (boards, models files, HELM's catalogues) parse through libyaml: the same data as PyYAML's
pure-Python parser, and for a malformed file the same error."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from helmflow.errors import HelmflowError, load_yaml, read_yaml_file
from tests.support.cli import REPO

TRACKED = subprocess.run(["git", "ls-files", "*.yaml", "*.yml"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.split()


def test_libyaml_is_what_parses():
    assert getattr(yaml, "__with_libyaml__", False), "PyYAML without libyaml: load_yaml falls back to safe_load"


@pytest.mark.parametrize("name", TRACKED)
def test_every_yaml_file_of_the_repo_loads_as_pyyaml_loads_it(name):
    text = (REPO / name).read_bytes().decode("utf-8-sig")
    assert load_yaml(text) == yaml.safe_load(text)


EDGES = ["a: yes\nb: 0o17\nc: 1_000\nd: 2026-12-04\ne: .inf\nf: ~\n", "- &x {k: [1, 2]}\n- *x\n",
         "s: 'it''s'\nt: \"\\u00e9\\t\"\nu: |\n  two\n  lines\n", "k: 1\nk: 2\n", "\ufeffkey: v\n"]


@pytest.mark.parametrize("text", EDGES)
def test_resolved_values_match(text):
    assert repr(load_yaml(text)) == repr(yaml.safe_load(text))


@pytest.mark.parametrize("text", ["deployments: [\n", "a: b: c\n", "key: [1, 2\nother: 3\n", "\tkey: v\n"])
def test_a_malformed_file_gives_pyyamls_own_error(tmp_path, text):
    with pytest.raises(yaml.YAMLError) as expected:
        yaml.safe_load(text)
    path = tmp_path / "board.yaml"
    path.write_text(text)
    with pytest.raises(HelmflowError) as got:
        read_yaml_file(path, "board file")
    assert str(got.value) == f"board file {path} is not valid YAML: {' '.join(str(expected.value).split())}"
