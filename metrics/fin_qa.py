"""HELM's FinQA metric (``fin_qa_metrics.py``, whose helper is FinQA's own ``evaluate.py``): a model writes a
program in FinQA's small DSL; ``program_accuracy`` (the main metric) says whether it is symbolically the gold
program, ``execution_accuracy`` whether running it on the instance's table gives the gold answer.

The model's program is data, never code: it is cut into tokens (FinQA's ``program_tokenization``), checked
against the DSL's shape (``op(``, argument, argument, ``)`` per step), and

- run by :func:`run_program`, an interpreter of the ten operations over floats (``add``, ``subtract``,
  ``multiply``, ``divide``, ``exp``, ``greater``, ``table_max``, ``table_min``, ``table_sum``,
  ``table_average``), arguments being numbers as FinQA reads them (``1,000``, ``5%``, ``const_100``,
  ``const_m1``), ``#n`` (step n's result) or a table row's name; any error makes the program invalid,
  as FinQA's bare ``except`` does, and the result is rounded to 5 places;
- compared by :func:`equal_program`, FinQA's symbolic check: each distinct argument (and each table step) of the
  gold program becomes a symbol ``a0``, ``a1``…, in order of appearance; a predicted program using any other
  argument, or a step referring to a later one, is wrong; otherwise both become expressions over those symbols
  and are equal when sympy's ``simplify`` gives the same expression. FinQA builds the expressions as strings
  and has sympy parse them (``eval`` underneath); here they are built from sympy's symbols and operators
  directly, the same expressions, so no text of the model's is ever parsed as Python.

Numbers match FinQA's: an execution result is right when ``math.isclose`` to the gold answer (or equal to
``yes``/``no``). Needs sympy (the ``finance`` extra).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.first_use import first_use

if TYPE_CHECKING:
    from sympy import Expr

OPS = ("add", "subtract", "multiply", "divide", "exp", "greater", "table_max", "table_min", "table_sum",
       "table_average")
ARITHMETIC = ("add", "subtract", "multiply", "divide", "exp", "greater")
MAX_STEPS = 64  # far beyond what 100 output tokens can hold; a guard for programs from elsewhere


@first_use
def _sympy():
    import sympy

    return sympy


class Invalid(Exception):
    """A program FinQA's evaluator rejects (bad shape, unknown argument, arithmetic error)."""


def tokenize(program: str) -> list[str]:
    """FinQA's ``program_tokenization``: steps split at ``", "``, cut after ``(`` and around ``)``; ``EOF`` last."""
    out: list[str] = []
    for tok in program.split(", "):
        current = ""
        for c in tok:
            if c == ")" and current:
                out.append(current)
                current = ""
            current += c
            if c in "()":
                out.append(current)
                current = ""
        if current:
            out.append(current)
    out.append("EOF")
    return out


def _well_formed(tokens: list[str]) -> bool:
    """FinQA's structure check (tokens without ``EOF``): every fourth token an ``op(``, the next-but-two ``)``."""
    for i, token in enumerate(tokens):
        if i % 4 == 0 and token.strip("(") not in OPS:
            return False
        if (i + 1) % 4 == 0 and token != ")":
            return False
    return True


def _steps(tokens: list[str]) -> list[tuple[str, str, str, str]]:
    """(step text, op, arg1, arg2) per step, cut as FinQA cuts them (``|``-joined, split at ``)``)."""
    out = []
    for step in "|".join(tokens).split(")")[:-1]:
        step = step.strip()
        parts = step.split("(")
        if len(parts) != 2:
            raise Invalid(f"step {step!r} is not op(arg1, arg2)")
        args = parts[1].strip("|").strip().split("|")
        if len(args) < 2:
            raise Invalid(f"step {step!r} has fewer than two arguments")
        out.append((step, parts[0].strip("|").strip(), args[0].strip(), args[1].strip()))
        if len(out) > MAX_STEPS:
            raise Invalid(f"more than {MAX_STEPS} steps")
    return out


def to_number(text: str) -> float:
    """FinQA's ``str_to_num``: commas dropped; ``N%`` is N/100; ``const_N`` is N (``const_m1`` is -1)."""
    text = text.replace(",", "")
    try:
        return float(text)
    except ValueError:
        pass
    if "%" in text:
        try:
            return float(text.replace("%", "")) / 100.0
        except ValueError:
            raise Invalid(f"{text!r} is not a number") from None
    if "const" in text:
        text = text.replace("const_", "")
        try:
            return float("-1" if text == "m1" else text)
        except ValueError:
            raise Invalid(f"{text!r} is not a constant") from None
    raise Invalid(f"{text!r} is not a number")


def _row_numbers(cells: list[Any]) -> list[float]:
    """FinQA's ``process_row``: ``$`` dropped, anything from ``(`` on dropped, then :func:`to_number`."""
    return [to_number(str(cell).replace("$", "").strip().split("(")[0].strip()) for cell in cells]


def _step_ref(arg: str, results: dict[int, Any]) -> Any:
    try:
        return results[int(arg.replace("#", ""))]
    except (KeyError, ValueError):
        raise Invalid(f"{arg!r} names no earlier step") from None


def run_program(tokens: list[str], table: list[list[Any]]) -> float | str:
    """FinQA's ``eval_program``: the program's last result (a float rounded to 5 places, or ``yes``/``no``);
    :class:`Invalid` when FinQA's evaluator would flag it."""
    tokens = tokens[:-1]  # EOF
    if not _well_formed(tokens):
        raise Invalid("not a program of the DSL")
    results: dict[int, Any] = {}
    result: Any = None
    row: list[float] | None = None  # FinQA keeps the last table row across steps (a quirk kept: a `#n` table step)
    try:
        for i, (_, op, arg1, arg2) in enumerate(_steps(tokens)):
            if op in ARITHMETIC:
                x = _step_ref(arg1, results) if "#" in arg1 else to_number(arg1)
                y = _step_ref(arg2, results) if "#" in arg2 else to_number(arg2)
                if op == "add":
                    result = x + y
                elif op == "subtract":
                    result = x - y
                elif op == "multiply":
                    result = x * y
                elif op == "divide":
                    result = x / y
                elif op == "exp":
                    result = x ** y
                else:
                    result = "yes" if x > y else "no"
                results[i] = result
            elif "table" in op:
                rows = {r[0]: r[1:] for r in table}
                if "#" in arg1:
                    _step_ref(arg1, results)
                elif arg1 not in rows:
                    raise Invalid(f"the table has no row {arg1!r}")
                else:
                    row = _row_numbers(rows[arg1])
                if row is None:
                    raise Invalid("a table step without a row")
                if op == "table_max":
                    result = max(row)
                elif op == "table_min":
                    result = min(row)
                elif op == "table_sum":
                    result = sum(row)
                elif op == "table_average":
                    result = sum(row) / len(row)
                results[i] = result
        if result not in ("yes", "no"):
            if result is None:
                raise Invalid("no result")
            result = round(result, 5)
    except Invalid:
        raise
    except Exception as exc:  # noqa: BLE001 - FinQA's bare except: overflow, division by zero, complex, types...
        raise Invalid(f"{type(exc).__name__}: {exc}") from None
    return result


def _expression(steps: list[tuple[str, str, str, str]], symbols: dict[str, Expr], index: int,
                memo: dict[int, Expr]) -> Expr:
    """FinQA's ``symbol_recur`` as a sympy expression (memoised per step: the same tree, built once)."""
    sympy = _sympy()
    if index in memo:
        return memo[index]
    step, op, arg1, arg2 = steps[index]
    if "table" in op:
        return symbols[step]

    def part(arg: str) -> Expr:
        if "#" in arg:
            return _expression(steps, symbols, int(arg.replace("#", "")), memo)
        return symbols[arg]

    x, y = part(arg1), part(arg2)
    if op == "add":
        out = x + y
    elif op == "subtract":
        out = x - y
    elif op == "multiply":
        out = x * y
    elif op == "divide":
        out = x / y
    elif op == "exp":
        out = x ** y
    elif op == "greater":
        out = sympy.StrictGreaterThan(x, y)
    else:
        raise Invalid(f"unknown operation {op!r}")
    memo[index] = out
    return out


def equal_program(gold: list[str], pred: list[str]) -> bool:
    """FinQA's ``equal_program`` (token lists, ``EOF`` last): the gold program's arguments as symbols, the
    prediction allowed only those, both programs' last steps simplified by sympy and compared."""
    sympy = _sympy()
    gold_steps = _steps(gold[:-1])
    names: dict[str, str] = {}
    for step, op, arg1, arg2 in gold_steps:
        for key in ([step] if "table" in op else [a for a in (arg1, arg2) if "#" not in a]):
            names.setdefault(key, f"a{len(names)}")
    symbols = {key: sympy.Symbol(name) for key, name in names.items()}
    pred = pred[:-1]
    if not _well_formed(pred):
        return False
    try:
        pred_steps = _steps(pred)
        for i, (step, op, arg1, arg2) in enumerate(pred_steps):
            if "table" in op:
                if step not in symbols:
                    return False
                continue
            for arg in (arg1, arg2):
                if "#" not in arg and arg not in symbols:
                    return False
                if "#" in arg and int(arg.strip("#")) >= i:
                    return False
        if not pred_steps:
            return False
        predicted = sympy.simplify(_expression(pred_steps, symbols, len(pred_steps) - 1, {}))
    except Exception:  # noqa: BLE001 - FinQA's bare except around the prediction: not equal
        return False
    return bool(sympy.simplify(_expression(gold_steps, symbols, len(gold_steps) - 1, {})) == predicted)


def execution_correct(gold_answer: str, tokens: list[str], table: list[list[Any]]) -> bool:
    """HELM's ``_get_execution_accuracy``: the program runs, and gives ``yes``/``no`` as the gold does or a
    float ``math.isclose`` to it."""
    try:
        result = run_program(tokens, table)
    except Invalid:
        return False
    if gold_answer in ("yes", "no"):
        return result == gold_answer
    return isinstance(result, float) and math.isclose(float(gold_answer), result)


def _fin_qa_instance(instance: Any) -> None:
    if not instance.correct_references or "exe_ans" not in instance.extra or "table" not in instance.extra:
        raise MetricError(f"metric 'fin_qa' needs a gold program and extra['exe_ans'] and extra['table'] (the fin_qa "
                          f"scenario); instance {instance.id!r} lacks them")


@metric("fin_qa", version="1", requires=("sympy",), extra="finance", check=_fin_qa_instance,
        helm=HelmEquivalent(("program_accuracy", "execution_accuracy")))
def fin_qa(x: MetricInput) -> dict[str, float]:
    if not x.completions:
        return {}
    generated = tokenize(x.completions[0].text.strip())
    gold = tokenize(x.correct_texts[0])
    try:
        program = equal_program(gold, generated)
    except Invalid:  # a gold program FinQA's own check would stop at
        program = False
    return {"program_accuracy": float(program),
            "execution_accuracy": float(execution_correct(x.instance.extra["exe_ans"], generated,
                                                           x.instance.extra["table"]))}


def unitxt_program_accuracy(gold_program: str, output: str) -> float:
    """unitxt's ``FinQAEval`` ``program_accuracy`` (ToRR's fin_qa): the output's first non-empty line (the card's
    ``take_first_non_empty_line``) cut into tokens, then FinQA's ``equal_program`` called as unitxt calls it,
    **the prediction first**: the prediction's arguments become the symbols and the gold program must use only
    those, so a prediction with extra, unused steps can still equal the gold. Any error is 0, as unitxt's bare
    ``except`` makes it."""
    from helmflow.metrics.table_reasoning import first_line

    try:
        return float(equal_program(tokenize(first_line(output)), tokenize(gold_program)))
    except Exception:  # noqa: BLE001 - unitxt's bare except around the check: 0
        return 0.0


@metric("program_accuracy_unitxt", version="1", requires=("sympy",), extra="torr")
def program_accuracy_unitxt(x: MetricInput) -> dict[str, float]:
    if not x.completions or not x.correct_texts:
        return {}
    return {"program_accuracy": unitxt_program_accuracy(x.correct_texts[0], x.completions[0].text)}
