"""SIGHUP re-reads --instances-file: an instance added to the file gets a
link and serves sessions; one removed from it is gone (404), while
instances given with --instance stay."""
import unittest

from harness import FileStack, FrameValidator


class InstancesReload(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        FrameValidator.get()
        cls.fs = FileStack("# no instances yet\n")
        cls.fs.start()
        cls.stack = cls.fs.stack

    @classmethod
    def tearDownClass(cls):
        problems = cls.fs.stop()
        if problems:
            raise AssertionError("daemon problems:\n" + "\n".join(problems))

    def test_add_then_remove_an_instance(self):
        fs = self.fs
        self.assertNotIn("inst-extra", fs.ready())
        fs.reload("inst-extra unix:{sock}\n")
        fs.wait_for(lambda: fs.ready().get("inst-extra") == "up",
                    "the added instance's link is up")
        r = self.stack.http("POST", "/agents/inst-extra/sessions", {"command": ["/bin/sh"]},
                            token=self.stack.token(sub="ops", scope="sessions",
                                                   instance_id="inst-extra"))
        self.assertEqual(r.status, 201, r)

        fs.reload("# inst-extra retired\n")
        fs.wait_for(lambda: "inst-extra" not in fs.ready(), "the removed instance is gone")
        r = self.stack.http("GET", "/agents/inst-extra/sessions",
                            token=self.stack.token(sub="ops", scope="sessions",
                                                   instance_id="inst-extra"))
        self.assertEqual(r.status, 404, r)
        # The --instance flag's instance is never dropped by a reload.
        self.assertEqual(fs.ready().get(self.stack.instance), "up")


if __name__ == "__main__":
    unittest.main(verbosity=2)
