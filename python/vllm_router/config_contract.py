"""The configuration contract of the Java engine, generated from `RouterArgs`.

`RouterArgs` is the one definition of the configuration fields; the Java engine does not repeat
them. Building the engine (Maven, `java/core`) runs `python3 -m vllm_router.config_contract FILE`
and packs FILE into the engine jar, where `RouterConfig` takes its defaults and the policy names
from it (see docs/architecture.md, 'The config contract'). Nothing imports this module at run time.

The contract, as JSON:
  fields         every RouterArgs field in dataclass order (the canonical JSON order): name,
                 JSON type, nullable, default; `flag_default` when the command line's default
                 differs (the engine falls back to it for a null Prometheus port and host),
                 `choices` when the flag takes one of a fixed set (the policy names among them),
                 `range` ({min, max, message}) when the value must lie within bounds, `refusal`
                 (the message) when a true value is refused before the engine starts
  defaults_json  the exact text `router_args_to_config_json(RouterArgs())` sends; the engine's
                 canonical JSON of its defaults must equal it byte for byte
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from pathlib import Path

from .router_args import (FIELD_RANGES, FIELD_REFUSALS, RouterArgs, range_error,
                          router_args_to_config_json)

# A field's annotation (a typing object, as upstream's) without Optional -> JSON type.
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", dict: "object"}


def _json_type(annotation) -> tuple[str, bool]:
    """`Optional[List[str]]` -> `("array", True)`; an annotation outside the table raises KeyError."""
    args = typing.get_args(annotation)
    nullable = typing.get_origin(annotation) is typing.Union and type(None) in args
    if nullable:
        (annotation,) = [arg for arg in args if arg is not type(None)]
    return _JSON_TYPES[typing.get_origin(annotation) or annotation], nullable


def _flags() -> dict[str, argparse.Action]:
    """Field name -> its flag (the parser's action whose dest is the field)."""
    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser)
    return {action.dest: action for action in parser._actions}


def config_contract() -> dict:
    """The contract as a JSON-ready dict (see the module docstring)."""
    defaults = dataclasses.asdict(RouterArgs())
    flags = _flags()
    fields = []
    for f in dataclasses.fields(RouterArgs):
        json_type, nullable = _json_type(f.type)
        entry = {"name": f.name, "type": json_type, "nullable": nullable, "default": defaults[f.name]}
        flag = flags.get(f.name)
        if flag is not None and flag.default != entry["default"]:
            entry["flag_default"] = flag.default
        if flag is not None and hasattr(flag.type, "choices"):
            entry["choices"] = list(flag.type.choices)
        if f.name in FIELD_RANGES:
            low, high = FIELD_RANGES[f.name]
            entry["range"] = {"min": low, "max": high, "message": range_error(f.name)}
        if f.name in FIELD_REFUSALS:
            entry["refusal"] = FIELD_REFUSALS[f.name]
        fields.append(entry)
    return {"fields": fields, "defaults_json": router_args_to_config_json(RouterArgs())}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m vllm_router.config_contract OUTPUT_FILE", file=sys.stderr)
        return 2
    output = Path(argv[0])
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as out:
        json.dump(config_contract(), out, ensure_ascii=False, indent=1)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
