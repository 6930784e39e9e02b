"""Indexes that spare a command imports: the scenario registry imports a scenario's module when the scenario is
first looked up, and the command line imports the module of the command it names; each index must name
exactly what its modules register."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "HELMFLOW_PLUGINS": ""})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_scenario_index_names_what_each_built_in_module_registers():
    out = _fresh("""
        from helmflow.scenarios import SCENARIOS
        indexed = dict(SCENARIOS._modules)
        SCENARIOS.load_all()
        registered = {name: cls.__module__ for name, cls in SCENARIOS._items.items()
                      if cls.__module__.startswith("helmflow.scenarios.")}
        assert registered == indexed, (sorted(registered.items() - indexed.items()),
                                       sorted(indexed.items() - registered.items()))
        print(len(indexed))
    """)
    assert int(out) > 100


def test_looking_up_a_scenario_imports_its_module_alone_and_every_name_is_listed():
    out = _fresh("""
        import sys
        from helmflow.scenarios import SCENARIOS, get_scenario
        assert {"dyck_language", "mmlu", "image2latex", "gsm"} <= set(SCENARIOS.names())
        assert "mmlu" in SCENARIOS and "no_such_scenario" not in SCENARIOS
        assert get_scenario("dyck_language", {"num_parenthesis_pairs": 2}).name == "dyck_language"
        loaded = sorted(m for m in sys.modules if m.startswith("helmflow.scenarios.") and m != "helmflow.scenarios.base")
        print(" ".join(loaded))
        assert SCENARIOS.get("gsm").__module__ == "helmflow.scenarios.gsm8k"
    """)
    # besides Dyck's own module, only AIR-Bench's, whose taxonomy its metric (a built-in metric) reads
    assert set(out.split()) - {"helmflow.scenarios.air_bench"} == {"helmflow.scenarios.dyck"}, out


def test_an_unknown_scenario_names_every_known_one_imported_or_not():
    out = _fresh("""
        from helmflow.registry import UnknownNameError
        from helmflow.scenarios import SCENARIOS
        try:
            SCENARIOS.get("no_such_scenario")
        except UnknownNameError as exc:
            print(exc)
    """)
    assert out.startswith("unknown scenario 'no_such_scenario'; known: ") and "mmlu" in out and "wmt_14" in out, out


def test_the_command_index_names_what_each_command_module_registers():
    import argparse
    import importlib

    from helmflow.cli import COMMANDS

    for module, names in COMMANDS.items():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).add_parser(sub)
        assert tuple(sub.choices) == names, module


def test_a_command_line_builds_the_parser_of_its_command_alone():
    from helmflow.cli import COMMAND_MODULES, command_modules

    assert command_modules(["--plugin", "eval", "run", "demo"]) == ["helmflow.cli.run"]
    assert command_modules(["--plugin=x.py", "show", "demo"]) == ["helmflow.cli.boards"]
    for everything in ([], ["--help"], ["no-such-command"]):
        assert command_modules(everything) == COMMAND_MODULES
    out = _fresh("""
        import sys
        from helmflow.cli import COMMANDS, build_parser
        args = build_parser(["eval", "dyck_language", "--models", "offline/echo"]).parse_args(
            ["eval", "dyck_language", "--models", "offline/echo"])
        assert args.func.__name__ == "cmd_eval", args
        print(" ".join(m for m in COMMANDS if m in sys.modules))
    """)
    assert out.split() == ["helmflow.cli.eval"], out
