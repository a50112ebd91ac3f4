"""The layers contract covers the whole package (pyproject.toml, ``[tool.importlinter]``).

``lint-imports`` (``make lint``) checks imports only between modules on a floor: a module
left off every floor could import upwards unseen. So every module is on one, and a
package whose children sit on different floors (``autograder`` itself, ``autograder.i18n``)
imports nothing but its own children. docs/ARCHITECTURE.md draws the floors as the contract
states them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def contract() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return dict(layers)


def floor_modules() -> list[str]:
    layers = contract()["layers"]
    assert isinstance(layers, list)
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def on_a_floor(module: str, floors: list[str]) -> bool:
    return any(module == floor or module.startswith(floor + ".") for floor in floors)


def test_the_contract_lists_no_exception() -> None:
    assert set(contract()) == {"name", "type", "layers"}, "fix the import instead of ignoring it"


def test_every_module_is_on_a_floor_or_parents_floors() -> None:
    floors = floor_modules()
    graph = grimp.build_graph("autograder")
    off = sorted(m for m in graph.modules if not on_a_floor(m, floors))
    parents = [m for m in off if any(floor.startswith(m + ".") for floor in floors)]
    assert off == parents, f"put these modules on a floor in pyproject.toml: {sorted(set(off) - set(parents))}"
    assert parents == ["autograder", "autograder.i18n"]
    for parent in parents:
        imported = graph.find_modules_directly_imported_by(parent)
        outside = sorted(m for m in imported if not m.startswith(parent + "."))
        assert outside == [], f"{parent} is on no floor, so it may import only its own modules: {outside}"


def test_the_architecture_page_draws_the_floors_the_contract_states() -> None:
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (.+?) \| .+ \|$", page, flags=re.MULTILINE)
    drawn = [modules.replace("`", "").replace("\\|", "|") for _, modules in rows]
    layers = contract()["layers"]
    assert isinstance(layers, list)
    assert drawn == [layer.replace("autograder.", "") for layer in layers]
    assert [int(number) for number, _ in rows] == list(range(len(layers), 0, -1))
