"""Stdlib patterns a trainer or a test harness uses in-process, each reduced to what any Linux
CPython prints for it; prints one JSON object, case name -> result. Run under `python` and under
`vllm-router python`, the two reports must be equal (py_test/test_python_host.py)."""

import http.server
import json
import os
import selectors
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import urllib.request


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


def bound_port_before_listen():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1] > 0


def http_server_on_port_zero():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        return {"port_known": port > 0, "get": get(f"http://127.0.0.1:{port}/health")}
    finally:
        server.shutdown()
        server.server_close()


def create_server_echo():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            peer, _ = listener.accept()
            with peer:
                client.sendall(b"ping")
                data = peer.recv(16)
                peer.sendall(data.upper())
                return {"port_known": port > 0, "echo": client.recv(16).decode()}


def selectors_readiness():
    a, b = socket.socketpair()
    with a, b, selectors.DefaultSelector() as selector:
        selector.register(a, selectors.EVENT_READ, "a")
        idle = selector.select(timeout=0)
        b.sendall(b"x")
        ready = [key.data for key, events in selector.select(timeout=5) if events & selectors.EVENT_READ]
        return {"idle": len(idle), "ready": ready, "read": a.recv(1).decode()}


def subprocess_pipes():
    child = subprocess.run(["sh", "-c", "tr a-z A-Z; exit 3"], input="through a pipe", capture_output=True,
                           text=True, timeout=60)
    echo = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, _ = echo.communicate(b"cat says hi")
    return {"sh": [child.returncode, child.stdout], "cat": [echo.returncode, out.decode()]}


def router_over_stdlib_workers():
    """The engine started in this program over two http.server workers that serve from threads."""
    from vllm_router import Router, RouterArgs

    workers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello) for _ in range(2)]
    for worker in workers:
        threading.Thread(target=worker.serve_forever, daemon=True).start()
    urls = [f"http://127.0.0.1:{w.server_address[1]}" for w in workers]
    try:
        args = RouterArgs(worker_urls=urls, port=0, prometheus_port=0, policy="round_robin",
                          worker_startup_timeout_secs=30, worker_startup_check_interval=1)
        with Router.from_args(args).launch() as router:
            return [get(router.url + "/v1/models") for _ in range(2)]
    finally:
        for worker in workers:
            worker.shutdown()
            worker.server_close()


def socketserver_thread():
    class Upper(socketserver.StreamRequestHandler):
        def handle(self):
            self.wfile.write(self.rfile.readline().upper())

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Upper) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with socket.create_connection(server.server_address, timeout=10) as client:
            client.sendall(b"line\n")
            reply = client.makefile().readline()
        server.shutdown()
        return reply


def signal_handler():
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(1000):
            if received:
                break
            threading.Event().wait(0.01)
        return {"received": [signal.Signals(s).name for s in received], "previous_default": previous == signal.SIG_DFL}
    finally:
        signal.signal(signal.SIGUSR1, previous)


def parent_pid():
    return os.getppid() == int(os.environ["EXPECTED_PPID"])


def proc_self():
    with open("/proc/self/stat") as f:
        stat = f.read().split()
    with open("/proc/self/status") as f:
        status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
    return {"stat_pid": int(stat[0]) == os.getpid(), "status_pid": int(status["Pid"]) == os.getpid(),
            "ppid": int(status["PPid"]) == os.getppid()}


CASES = [bound_port_before_listen, http_server_on_port_zero, create_server_echo, selectors_readiness,
         subprocess_pipes, socketserver_thread, router_over_stdlib_workers, signal_handler, parent_pid, proc_self]


def main():
    report = {}
    for case in CASES:
        try:
            report[case.__name__] = case()
        except BaseException as e:  # a case that fails shows how, the others still run
            report[case.__name__] = f"{type(e).__name__}: {e}"
    print(json.dumps(report, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
