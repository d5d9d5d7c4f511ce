"""collector_paused: the cyclic collector off while a parser loads, as it was after (errors included)."""

from __future__ import annotations

import gc

import pytest

from synprep.parse.backends import collector_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_on_again_after_even_after_an_error(collector_on):
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the load failed")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off_and_a_nested_pause_keeps_it_off(collector_on):
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause is not over
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
