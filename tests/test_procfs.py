"""The one /proc/PID/stat parser and the walks built on it (process tree, session, children)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from dbperf.host import procfs


@pytest.mark.unit
def test_a_command_with_spaces_and_parentheses_is_split_after_the_last_parenthesis():
    text = "4242 (a (b) c) S 17 4242 99 0 -1 4194560 1 0 0 0 7 3 11 5 20 0 1 0 100 0 0\n"
    s = procfs.parse_stat(4242, text)
    assert (s.pid, s.comm, s.state, s.ppid, s.session) == (4242, "a (b) c", "S", 17, 99)
    assert (s.user_ticks, s.system_ticks) == (7 + 11, 3 + 5)


@pytest.mark.unit
def test_walks_find_this_process_its_child_and_its_session():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        me = procfs.stat(os.getpid())
        assert me is not None and me.pid == os.getpid() and me.ppid == os.getppid()
        tree = procfs.process_tree(os.getpid())
        assert tree[0] == os.getpid() and child.pid in tree
        assert child.pid in procfs.own_children()
        assert child.pid in procfs.children_named(os.path.basename(sys.executable))
        assert child.pid in procfs.session_members(me.session)
        assert procfs.stat(2**22 + 1) is None  # beyond pid_max: no such process
    finally:
        child.kill()
        child.wait()


@pytest.mark.unit
def test_a_listening_socket_is_found_by_port_and_in_its_owners_fds():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening, \
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bound:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        bound.bind(("127.0.0.1", 0))  # bound, not listening: not a listener
        port, other = listening.getsockname()[1], bound.getsockname()[1]
        found = procfs.tcp_listeners(port)
        assert found is not None and len(found) == 1
        assert found <= procfs.socket_inodes([os.getpid()])
        assert procfs.tcp_listeners(other) == set()
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert not found & procfs.socket_inodes([child.pid]), "a process that does not hold it is not its owner"
        finally:
            child.kill()
            child.wait()
