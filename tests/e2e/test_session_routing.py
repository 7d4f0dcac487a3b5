"""Frames reach exactly their own session's connections. The
gateway groups its attachments per session on each instance's link, so
a frame is delivered to its session's group without scanning the others:
this checks the grouping with connections of three sessions joined
interleaved, a session whose every connection left (its group goes) and
then joins again, and one connection leaving from the middle of a group."""
import harness
from harness import E2ETestCase


class SessionRouting(E2ETestCase):

    async def test_frames_reach_only_their_session(self):
        sids = [self.stack.create_session() for _ in range(3)]
        ctl, obs = {}, {}
        # Interleaved: the bindings of the sessions alternate on the link.
        for k in range(2):
            for i, sid in enumerate(sids):
                if k == 0:
                    ctl[i] = await self.connect(sid, sub="ctl%d" % i)
                    await ctl[i].join_fresh("controller")
                o = await self.connect(sid, sub="obs%d-%d" % (i, k), scope="pty:observe")
                await o.join_fresh("observer")
                obs.setdefault(i, []).append(o)

        async def round_trip(tag):
            marks = {i: [len(c.output) for c in [ctl[i]] + obs[i]] for i in obs}
            for i in obs:
                await ctl[i].run("echo %s-s$((%d+100))" % (tag, i), "%s-s%d" % (tag, i + 100))
            for i in obs:
                for c, mark in zip([ctl[i]] + obs[i], marks[i]):
                    await c.wait_output("%s-s%d" % (tag, i + 100), since=mark)
            return marks

        marks = await round_trip("first")
        for i in obs:
            for c, mark in zip([ctl[i]] + obs[i], marks[i]):
                seen = bytes(c.output[mark:])
                for j in obs:
                    if j != i:
                        self.assertNotIn(b"first-s%d" % (j + 100), seen,
                                         "%s got session %d's output" % (c.label, j))

        # One observer leaves from the middle of session 0's group; every
        # connection of session 1 leaves and one comes back.
        await obs[0][0].close()
        for c in [ctl[1]] + obs[1]:
            await c.close()
        ctl[1] = await self.connect(sids[1], sub="ctl1-again")
        await ctl[1].join_fresh("controller")
        obs[0] = obs[0][1:]
        obs[1] = []
        await round_trip("second")


if __name__ == "__main__":
    harness.main()
