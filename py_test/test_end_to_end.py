"""End to end against mock workers, the way an RL trainer (SkyRL style) drives the router."""

import multiprocessing
import sys
import uuid

import pytest

from helpers import chat, free_port, http, wait_healthy
from vllm_router import Router, RouterArgs
from vllm_router.launch_router import launch_router


def new_session_id() -> str:
    return uuid.uuid4().hex


@pytest.fixture(scope="module")
def trainer_router(mock_workers):
    """launch_router in a daemon multiprocessing child, as SkyRL's VLLMRouter does."""
    # A 1 s start-up check interval (trainers set it too) keeps a slow first probe on a busy
    # machine from costing the default 30 s.
    kwargs = dict(host="0.0.0.0", port=free_port(), policy="sticky_least_loaded",
                  worker_urls=mock_workers, worker_startup_check_interval=1)
    args = RouterArgs(**kwargs)
    args.prometheus_port = free_port()  # trainers reserve and write back both ports
    # forkserver (Python 3.14's default start method) pickles RouterArgs into a fresh process.
    process = multiprocessing.get_context("forkserver").Process(
        target=launch_router, args=(args,), daemon=True, name="vllm-router")
    process.start()
    url = f"http://127.0.0.1:{args.port}"
    wait_healthy(url, timeout=60, alive=process.is_alive)
    yield url, process
    if process.is_alive():
        process.terminate()
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()


def finish(url: str, session_id: str) -> None:
    status, _, body = http("POST", f"{url}/finish_session?session_id={session_id}", body=None)
    assert status == 200, body


def test_new_sessions_spread_turns_stick_finish_frees(trainer_router, mock_workers):
    url, _ = trainer_router
    worker_count = len(mock_workers)
    sessions = [new_session_id() for _ in range(worker_count)]

    # The first 3 new sessions land on 3 distinct workers.
    owners = {}
    for session in sessions[:3]:
        status, worker = chat(url, session, "turn 0")
        assert status == 200 and worker
        owners[session] = worker
    assert len(set(owners.values())) == 3

    # 5 turns of one session stick to its worker.
    first = sessions[0]
    for turn in range(1, 6):
        assert chat(url, first, f"turn {turn}") == (200, owners[first])

    # Fill the last worker, then every worker holds one session.
    status, owners[sessions[3]] = chat(url, sessions[3], "turn 0")
    assert len(set(owners.values())) == worker_count

    # Releasing a session frees its worker: the next new session goes there.
    finish(url, first)
    assert chat(url, new_session_id(), "turn 0") == (200, owners[first])

    for session in sessions[1:]:
        finish(url, session)


def test_requests_without_session_are_served(trainer_router):
    url, _ = trainer_router
    status, worker = chat(url, None, "no session")
    assert status == 200 and worker


def test_finish_unknown_session_is_a_noop(trainer_router):
    url, _ = trainer_router
    finish(url, "never-seen-" + new_session_id())


def test_sigterm_stops_the_trainer_child_with_status_zero(trainer_router):
    # Runs last in this module: it stops the shared router.
    url, process = trainer_router
    process.terminate()
    process.join(15)
    assert process.exitcode == 0


def test_launch_handle_in_a_training_loop(mock_workers):
    """Router.launch(): a training loop starts the router and releases trajectories by calls."""
    args = RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded", worker_urls=mock_workers,
                      worker_startup_check_interval=1)
    with Router.from_args(args).launch() as router:
        wait_healthy(router.url)
        trajectories = [new_session_id() for _ in range(len(mock_workers))]
        for turn in range(3):
            for trajectory in trajectories:
                assert chat(router.url, trajectory, f"turn {turn}")[0] == 200
        active = router.sessions()
        assert sorted(active) == sorted(mock_workers)
        assert all(count == 1 for count in active.values())

        for trajectory in trajectories:
            router.finish_session(trajectory)
        assert sum(router.sessions().values()) == 0
    assert not router.is_running()


def test_chosen_session_header_and_session_bound(mock_workers):
    """RL-trainer settings: only X-Session-ID starts a session; at most max_sessions are kept."""
    args = RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded", worker_urls=mock_workers,
                      worker_startup_check_interval=1, session_id_headers=["x-session-id"],
                      session_id_body_fields=[], max_sessions=2)
    with Router.from_args(args).launch() as router:
        wait_healthy(router.url)
        body = {"model": "mock", "prompt": "x", "max_tokens": 1, "user": "alice"}
        for i in range(5):
            status, _, _ = http("POST", router.url + "/v1/completions", body, {"X-Request-ID": f"gw-{i}"})
            assert status == 200
        assert router.session_stats()["started"] == 0, "a gateway's request ids are not sessions"
        for trajectory in ("a", "b", "c"):
            assert chat(router.url, trajectory, "turn")[0] == 200
        stats = router.session_stats()
        assert (stats["active_sessions"], stats["evicted"]) == (2, 1)
        assert sum(stats["active_by_worker"].values()) == 2


def test_demo_main_job_small(engine_jar, capsys, tmp_path):
    """The README's main job, scaled down: every policy runs the same rollout live and prints its
    group latency beside its hit rate; with matplotlib it draws the plot."""
    from vllm_router import demo

    plot = tmp_path / "rollout.png"
    assert demo.main(["--workers", "2", "--groups", "2", "--samples", "2", "--time-scale", "0.05",
                      "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.split() and line.split()[0] in demo.DEFAULT_POLICIES}
    assert set(rows) == set(demo.DEFAULT_POLICIES)
    for policy, row in rows.items():
        p50, p90 = float(row[1].rstrip("s")), float(row[2].rstrip("s"))
        assert 0 < p50 <= p90, policy
        assert 0 <= int(row[3].rstrip("%")) <= 100, policy
        assert row[-1] == "0", f"{policy}: errors"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "plot: not drawn, matplotlib is missing" in out
    else:
        assert f"plot: {plot}" in out
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
