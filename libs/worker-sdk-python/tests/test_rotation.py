"""Which queue a free slot pulls and how long it waits (``_rotation``)."""
from __future__ import annotations

import unittest
from typing import Callable, List, Tuple

from po_worker._rotation import SHARED_WAIT_SECONDS, Route, Rotation


def routes(n: int) -> List[Route]:
    return [Route(f"app_7_h{i}_StageNext", f"h{i}", lambda *_: None) for i in range(n)]


def take_all(r: Rotation, n: int) -> List[Tuple[Route, int, Callable[[], None]]]:
    return [r.take() for _ in range(n)]


class RotationTest(unittest.TestCase):
    def test_one_queue_every_slot_long_polls(self) -> None:
        r = Rotation(routes(1), 4, 20)
        self.assertEqual([w for _, w, _ in take_all(r, 4)], [20] * 4)

    def test_a_queue_left_by_its_poller_is_covered_within_the_shared_wait(self) -> None:
        # Six queues, eight slots (the conformance worker): when the only poller of a queue takes a
        # delivery, a pull still in flight must come back within the shared wait to cover it.
        r = Rotation(routes(6), 8, 20)
        pulls = take_all(r, 8)
        self.assertEqual(len({rt.queue for rt, _, _ in pulls}), 6)
        live = list(range(8))
        for taker in (0, 3, 5):
            pulls[taker][2]()
            r.add_busy(1)
            live.remove(taker)
            self.assertTrue(any(pulls[i][1] <= SHARED_WAIT_SECONDS for i in live),
                            f"after {pulls[taker][0].queue} took a delivery every other pull waits 20 s")

    def test_long_polls_only_with_a_slot_more_than_queues(self) -> None:
        self.assertEqual([w for _, w, _ in take_all(Rotation(routes(3), 3, 20), 3)], [SHARED_WAIT_SECONDS] * 3)
        self.assertEqual([w for _, w, _ in take_all(Rotation(routes(4), 2, 20), 2)], [SHARED_WAIT_SECONDS] * 2)

    def test_spares_are_capped_at_one_per_queue(self) -> None:
        r = Rotation(routes(2), 10, 20)
        pulls = take_all(r, 10)
        spares = [p for p in pulls if p[1] == SHARED_WAIT_SECONDS]
        self.assertEqual(len(spares), 2)
        spares[0][2]()
        spares[0][2]()  # a second release changes nothing
        self.assertEqual(r.take()[1], SHARED_WAIT_SECONDS)
        self.assertEqual(r.take()[1], 20)

    def test_a_poll_wait_below_the_shared_wait_is_kept(self) -> None:
        self.assertEqual([w for _, w, _ in take_all(Rotation(routes(3), 3, 1), 3)], [1] * 3)
        self.assertEqual(Rotation(routes(3), 3, 0).take()[1], 0)


if __name__ == "__main__":
    unittest.main()
