"""The config contract: what the Java engine is built against, generated from RouterArgs.

The engine's own tests (core's ConfigContractTest) check RouterConfig against the contract; these
check the contract against RouterArgs, and that the engine this package ships was built from it.
"""

import dataclasses
import json
import subprocess
import sys
import zipfile

import pytest

from vllm_router.config_contract import config_contract
from vllm_router.engine_config import PolicyType, policy_from_str
from vllm_router.router_args import (
    KV_CONNECTOR_CHOICES,
    LOG_LEVEL_CHOICES,
    POLICY_CHOICES,
    RouterArgs,
    router_args_to_config_json,
)

CONTRACT_IN_JAR = "org/vllmrouter/core/config/router-config-contract.json"

# The Python values a JSON type holds. bool is an int in Python, and a whole float default
# written as an int (`= 1`) would reach the engine as 1 while the engine prints 1.0.
JSON_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, float),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def test_contract_fields_are_the_dataclass_fields_in_order():
    contract = config_contract()
    assert [f["name"] for f in contract["fields"]] == [f.name for f in dataclasses.fields(RouterArgs)]
    assert {f["name"]: f["default"] for f in contract["fields"]} == json.loads(
        router_args_to_config_json(RouterArgs()))
    assert contract["defaults_json"] == router_args_to_config_json(RouterArgs())


@pytest.mark.parametrize("field", config_contract()["fields"], ids=lambda f: f["name"])
def test_every_default_has_its_declared_json_type(field):
    if field["default"] is None:
        assert field["nullable"], f"{field['name']} defaults to None but its annotation does not admit it"
    else:
        assert JSON_TYPE_CHECKS[field["type"]](field["default"]), field


def test_choices_are_the_flag_choices():
    choices = {f["name"]: f["choices"] for f in config_contract()["fields"] if "choices" in f}
    assert choices == {
        "policy": POLICY_CHOICES,
        "prefill_policy": POLICY_CHOICES,
        "decode_policy": POLICY_CHOICES,
        "log_level": LOG_LEVEL_CHOICES,
        "kv_connector": KV_CONNECTOR_CHOICES,
    }


def test_policy_type_is_upstreams_enum_over_the_policy_choices():
    assert [p.name for p in PolicyType] == [
        "Random", "RoundRobin", "CacheAware", "KvAware", "PowerOfTwo", "ConsistentHash", "StickyLeastLoaded",
        "RendezvousHash", "StickyBalanced",
    ]
    assert [p.value for p in PolicyType] == POLICY_CHOICES
    assert [policy_from_str(name) for name in POLICY_CHOICES] == list(PolicyType)


def test_module_writes_the_contract_file(tmp_path):
    out = tmp_path / "nested" / "contract.json"
    subprocess.run([sys.executable, "-m", "vllm_router.config_contract", str(out)], check=True)
    assert json.loads(out.read_text(encoding="utf-8")) == config_contract()


def test_packaged_engine_was_built_from_this_router_args(engine_jar):
    with zipfile.ZipFile(engine_jar) as jar:
        built_against = json.loads(jar.read(CONTRACT_IN_JAR).decode("utf-8"))
    assert built_against == config_contract(), (
        f"{engine_jar} was built from another RouterArgs; rebuild it (make engine-jar)")
