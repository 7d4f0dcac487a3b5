"""The static route (--static-dir) never serves through a symbolic link
inside the directory: a linked directory in the middle of the path, a
linked file at its end, inside or outside the directory, all answer 404
while the real files beside them are served."""
import os
import shutil
import tempfile
import unittest

import harness


class StaticLinks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ptg-static-")
        web = os.path.join(cls.tmp, "web")
        outside = os.path.join(cls.tmp, "outside")
        os.makedirs(os.path.join(web, "js"))
        os.makedirs(outside)
        for path, text in ((os.path.join(web, "index.html"), "<html>page</html>"),
                           (os.path.join(web, "js", "app.js"), "app();"),
                           (os.path.join(outside, "secret.txt"), "secret")):
            with open(path, "w") as f:
                f.write(text)
        os.symlink(outside, os.path.join(web, "out"))
        os.symlink("js", os.path.join(web, "jslink"))
        os.symlink("index.html", os.path.join(web, "page.html"))
        os.symlink("../../outside/secret.txt", os.path.join(web, "js", "up.txt"))
        cls.stack = harness.Stack(gateway_args=["--static-dir", web]).start()

    @classmethod
    def tearDownClass(cls):
        harness.stop_stack(cls.stack)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_real_files_served(self):
        r = self.stack.http("GET", "/")
        self.assertEqual((r.status, r.body), (200, b"<html>page</html>"))
        r = self.stack.http("GET", "/js/app.js")
        self.assertEqual((r.status, r.body), (200, b"app();"))

    def test_links_not_followed(self):
        for path in ("/out/secret.txt", "/jslink/app.js", "/page.html", "/js/up.txt"):
            r = self.stack.http("GET", path)
            self.assertEqual(r.status, 404, "%s: %r" % (path, r))
            self.assertNotIn(b"secret", r.body)
            self.assertNotIn(b"app();", r.body)


if __name__ == "__main__":
    unittest.main()
