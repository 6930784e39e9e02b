"""A board is planned once per `helmflow run`: a custom scenario's file, served over HTTP by
a server that counts every GET, is read twice by a first run (pinned by its sha256 at plan time, then
copied into the store) and once by a rerun (pinned again: it may have changed). It was read 3 times
per first run: planning hashed it twice (as the scenario's revision and as its checksum)."""

from __future__ import annotations

import http.server
import json
import threading
from collections import Counter

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

CSV = (  # items written for this test
    "id,question,a,b,answer,split\n"
    "r1,Which is a prime number?,four,five,B,test\n"
    "r2,Which is an even number?,two,three,A,test\n"
)


@pytest.fixture
def counting_server():
    gets: Counter = Counter()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802
            gets[("HEAD", self.path)] += 1
            self._answer(body=False)

        def do_GET(self):  # noqa: N802
            gets[("GET", self.path)] += 1
            self._answer(body=True)

        def _answer(self, body: bool):
            data = CSV.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Content-Type", "text/csv")
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", gets
    server.shutdown()


def test_a_custom_file_is_read_once_per_run(prefect_server, counting_server, tmp_path):
    url, gets = counting_server
    board = tmp_path / "board.yaml"
    params = {"path": f"{url}/quiz.csv", "choices": "a|b", "id": "id", "split": "split"}
    board.write_text(f"name: reads\nversion: '1'\nmodels: [offline/solver, offline/first-option]\n"
                     f"scenarios:\n  - name: custom\n    params: {json.dumps(params)}\n    label: quiz\n")
    args = ("run", "--board-file", str(board), "--storage", str(tmp_path / "store"))
    out = run_cli(*args)
    assert out.returncode == 0, out.stdout + out.stderr
    first = gets[("GET", "/quiz.csv")]
    again = run_cli(*args, "--force-flow")  # through Prefect again: the flow takes the CLI's plan
    assert again.returncode == 0, again.stdout + again.stderr
    second = gets[("GET", "/quiz.csv")] - first
    print(f"GETs of the custom file: {first} in the first run, {second} in a rerun through the flow")
    assert (first, second) == (2, 1), dict(gets)
