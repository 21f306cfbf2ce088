import apsw
import sqlite_vec
import zmq


def pytest_report_header(config):
    return (f"apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()}), "
            f"sqlite-vec {sqlite_vec.__version__ if hasattr(sqlite_vec, '__version__') else '?'}, "
            f"pyzmq {zmq.pyzmq_version()} (libzmq {zmq.zmq_version()})")
