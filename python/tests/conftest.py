"""Shared fixtures: the stores the Rust driver (python/harness/tests/pytest.rs) started for this run."""

import os

import pytest


def _server(var: str):
    url = os.environ.get(var)
    if not url:
        if os.environ.get("FLAKEID_REQUIRE_SERVERS") == "1":
            pytest.fail(f"{var} is not set: the driver starts the server (python/harness/tests/pytest.rs)")
        pytest.skip(f"{var} is not set: run through `cargo test -p flakeid-python-tests`, which starts the server")
    return url


@pytest.fixture
def etcd_url():
    return _server("FLAKEID_TEST_ETCD")


@pytest.fixture
def zookeeper_url():
    return _server("FLAKEID_TEST_ZOOKEEPER")


@pytest.fixture
def postgres_url():
    return _server("FLAKEID_TEST_POSTGRES")
