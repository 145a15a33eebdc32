"""One check run in a forked child while the parent runs another (`verify` with two jobs or more).

The child inherits what the parent has decoded and mapped (fork: nothing is copied or sent there) and
sends back only the check's result and its problem rows. Where there is no fork, or with one job, the
check runs in the parent when its result is asked for. An error the check raises is raised in the parent
as it would have been there; a child that dies without answering is an error naming the check.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Generic, TypeVar

from formats.errors import MqtoolError
from store.checks.problems import ProblemList

R = TypeVar("R")


class ForkedCheck(Generic[R]):
    """`check(problems)` started now in a child (`jobs` > 1 and fork available), else deferred."""

    def __init__(
        self, name: str, check: Callable[[ProblemList], R], problems: ProblemList, jobs: int
    ) -> None:
        self.name = name
        self._check = check
        self._store, self._max_rows = problems.store, problems.max_rows
        self._process = None
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("fork")
            self._answer, sender = context.Pipe(duplex=False)
            self._process = context.Process(target=self._child, args=(sender,), daemon=True)
            self._process.start()
            sender.close()

    def _child(self, sender) -> None:
        try:
            problems = ProblemList(self._store, self._max_rows)
            value = self._check(problems)
            sender.send((True, value, problems.table()))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent, which raises it
            sender.send((False, exc, None))
        finally:
            sender.close()
            os._exit(0)  # no atexit handlers, no flushing of the parent's inherited buffers

    def result(self, problems: ProblemList) -> R:
        """The check's result; its problem rows are added to `problems`."""
        if self._process is None:
            return self._check(problems)
        try:
            ok, value, table = self._answer.recv()
        except EOFError:
            raise MqtoolError(f"the {self.name} check's worker died without an answer") from None
        finally:
            self._answer.close()
            self._process.join()
        if not ok:
            raise value
        problems.extend(table)
        return value
