"""What the GraalPy launcher's argv parse and an in-process program import, and the package's
lazy exports.

`vllm-router launch` runs `engine_config.config_json_from_argv` in an interpreted GraalPy, and
`vllm-router python` runs a program that imports `Router` and `RouterArgs` there, where each module
import costs tens to hundreds of milliseconds, so modules a path does not need must stay out of it.
Measured on CPython here: the package imports the same modules on both runtimes.
"""

import json
import os
import subprocess
import sys

import pytest

import vllm_router

# Modules the parse does not need: together over a second of interpreted imports under GraalPy.
# (`typing` is needed: RouterArgs' fields are annotated with its objects, as upstream's.)
UNNEEDED_BY_THE_PARSE = ["vllm_router.router", "threading", "signal", "logging"]


# Modules only other paths need (argparse: command lines; urllib: the control calls; signal and
# threading: `Router.start()`), kept out of a program's `Router.launch()`.
UNNEEDED_BY_AN_IN_PROCESS_LAUNCH = [
    "argparse", "urllib.parse", "ipaddress", "signal", "logging", "vllm_router.bridge.process",
]


def modules_imported_by(code: str) -> list:
    """Modules that `code` adds to sys.modules in a fresh interpreter.

    `-S` skips site: .pth files of the environment may import typing or threading at start-up,
    which would hide the imports under test.
    """
    package_parent = os.path.dirname(os.path.dirname(vllm_router.__file__))
    probe = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        f"{code}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        env={**os.environ, "PYTHONPATH": package_parent},
        capture_output=True, text=True, check=True,
    )
    return json.loads(result.stdout)


def test_launcher_parse_imports_only_what_it_needs():
    imported = modules_imported_by(
        "from vllm_router.engine_config import config_json_from_argv\n"
        "config_json_from_argv(['--worker-urls', 'http://a:1', '--policy', 'sticky_least_loaded'])"
    )
    assert "vllm_router.engine_config" in imported
    assert [m for m in UNNEEDED_BY_THE_PARSE if m in imported] == []


def test_an_in_process_launch_imports_only_what_it_needs():
    # What `Router.from_args(args).launch()` runs under GraalPy up to the engine's Java calls: the
    # configuration JSON and the GraalPy bridge (which imports `java` only when it starts the engine).
    imported = modules_imported_by(
        "from vllm_router import Router, RouterArgs\n"
        "router = Router.from_args(RouterArgs(worker_urls=['http://a:1'], port=0))\n"
        "router.config_json\n"
        "import vllm_router.bridge.graal"
    )
    assert "vllm_router.bridge.graal" in imported
    assert [m for m in UNNEEDED_BY_AN_IN_PROCESS_LAUNCH if m in imported] == []


def test_the_lazily_imported_modules_come_on_the_paths_that_use_them():
    imported = modules_imported_by(
        "from vllm_router.router_args import CustomHelpFormatter, parse_router_args\n"
        "parse_router_args(['--policy', 'random'])\n"
        "from vllm_router.router import _is_stop_status\n"
        "_is_stop_status(0)\n"
        "from vllm_router.engine_control import EngineControl\n"
        "try:\n"
        "    EngineControl('http://127.0.0.1:1', None).resume(worker='http://w:1')\n"
        "except RuntimeError:\n"
        "    pass"
    )
    assert {"argparse", "signal", "urllib.parse", "urllib.request"} <= set(imported)


def test_logging_is_imported_when_a_pd_policy_note_is_logged():
    imported = modules_imported_by(
        "from vllm_router.engine_config import config_json_from_argv\n"
        "config_json_from_argv(['--vllm-pd-disaggregation', '--prefill', 'http://p:1',\n"
        "                       '--decode', 'http://d:1', '--prefill-policy', 'random'])"
    )
    assert "logging" in imported


def test_router_args_does_not_import_router():
    assert "vllm_router.router" not in modules_imported_by("import vllm_router.router_args")


@pytest.mark.parametrize("name", vllm_router.__all__)
def test_lazy_exports(name):
    from vllm_router import engine_config, router, router_args, version

    defining = {"PolicyType": engine_config, "policy_from_str": engine_config, "Router": router,
                "RouterHandle": router, "RouterArgs": router_args, "__version__": version}
    assert getattr(vllm_router, name) is getattr(defining[name], name)
    assert name in dir(vllm_router)


def test_submodules_are_attributes_after_a_plain_import():
    imported = modules_imported_by(
        "import vllm_router\n"
        "assert vllm_router.router.Router is vllm_router.Router\n"
        "assert vllm_router.router_args.RouterArgs is vllm_router.RouterArgs\n"
        "assert vllm_router.version.__version__ == vllm_router.__version__\n"
        "assert {'router', 'router_args', 'version'} <= set(dir(vllm_router))"
    )
    assert "vllm_router.router" in imported


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        vllm_router.no_such_name


def test_router_module_names_are_unchanged():
    from vllm_router import engine_config, router

    assert router.PolicyType is engine_config.PolicyType
    assert router.policy_from_str is engine_config.policy_from_str
