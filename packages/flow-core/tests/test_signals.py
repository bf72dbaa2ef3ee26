"""``Interrupts``: the first signal interrupts, the second forces (real signals, main thread)."""

from __future__ import annotations

import os
import signal

import pytest

from flow_core import Interrupts


def test_first_signal_interrupts_second_forces() -> None:
    seen: list[int] = []

    def interrupt(signum: int) -> bool:
        seen.append(signum)
        return True

    before = signal.getsignal(signal.SIGTERM)
    with Interrupts(interrupt).installed() as interrupts:
        os.kill(os.getpid(), signal.SIGTERM)  # handled before the next bytecode
        assert seen == [signal.SIGTERM]
        assert interrupts.count == 1
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        assert seen == [signal.SIGTERM]  # the callback ran once only
        assert interrupts.first_signal == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_nothing_to_stop_forces_at_once() -> None:
    interrupts = Interrupts(lambda _signum: False)
    with pytest.raises(KeyboardInterrupt):
        interrupts.handler(signal.SIGINT, None)
    with pytest.raises(KeyboardInterrupt):
        Interrupts().handler(signal.SIGINT, None)


def test_only_the_named_signals_are_taken() -> None:
    before = signal.getsignal(signal.SIGINT)
    with Interrupts(lambda _signum: True, signals=(signal.SIGTERM,)).installed():
        assert signal.getsignal(signal.SIGINT) is before
        assert signal.getsignal(signal.SIGTERM) is not before
