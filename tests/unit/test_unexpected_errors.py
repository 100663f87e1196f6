"""An unexpected failure inside the broker reaches the client as a generic error with an id; the details
(which may hold server paths) stay in the broker's log under the same id."""
from __future__ import annotations

import errno
import logging

from broker_core.errors import UnknownError
from broker_core.frontends.grpc.streams import unexpected as _unexpected

SERVER_PATH = "/srv/pulsarlike/data/topics/persistent/public/default/t/00000000000000000000.log"


def _failure() -> OSError:
    return OSError(errno.ENAMETOOLONG, "File name too long", SERVER_PATH)


def test_the_client_sees_a_generic_message_without_the_server_path():
    err = _unexpected(_failure())
    assert isinstance(err, UnknownError)
    assert "internal broker error" in err.message
    assert "/srv" not in err.message and "File name too long" not in err.message


def test_the_error_id_is_in_the_message_its_fields_and_the_broker_log(caplog):
    with caplog.at_level(logging.ERROR, logger="broker_core.frontends.grpc.servicer"):
        err = _unexpected(_failure())
    assert err.error_id in err.message
    assert err.fields == {"error_id": err.error_id}
    record = caplog.records[-1]
    assert f"error_id={err.error_id}" in record.getMessage()
    assert SERVER_PATH in record.getMessage()  # the operator keeps the details


def test_each_failure_gets_its_own_error_id():
    assert _unexpected(_failure()).error_id != _unexpected(_failure()).error_id
