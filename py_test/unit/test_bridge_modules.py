"""The bridge's modules import one another in one direction only (no cycle)."""

import ast
from pathlib import Path

import vllm_router.bridge

BRIDGE = Path(vllm_router.bridge.__file__).parent
MODULES = {path.stem for path in BRIDGE.glob("*.py")}


def bridge_imports(module: str) -> set:
    """Bridge modules that `module` imports, at the top or inside a function."""
    tree = ast.parse((BRIDGE / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or node.module == "vllm_router.bridge":
                target = node.module if node.level == 1 else None
                if target:
                    found.add(target.split(".")[0])
                else:  # `from . import x`: a sibling module, or a name defined in __init__
                    found |= {a.name if a.name in MODULES else "__init__" for a in node.names}
            elif node.module and node.module.startswith("vllm_router.bridge."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("vllm_router.bridge.")}
    return found - {module}


def find_cycle(graph: dict):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target, path + [target])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle:
                return cycle
    return None


def test_no_import_cycle_between_bridge_modules():
    graph = {module: bridge_imports(module) for module in MODULES}
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"process": {"class_cache"}, "class_cache": {"process"}}) == \
        ["class_cache", "process", "class_cache"]


def test_every_starter_of_the_engine_jar_uses_the_shared_command_module():
    for module in ("process", "class_cache"):
        assert "engine_command" in bridge_imports(module)
