"""Idle memory per connection with permessage-deflate agreed (under
16 KiB, as without it): the connections offer what Chromium and
Firefox offer and get the extension, yet hold no deflate or inflate state
(one of each serves the whole gateway, reset per message), so the number
is test_conn_memory's."""
import unittest

import test_conn_memory


class DeflateConnMemory(test_conn_memory.ConnMemory):
    EXTENSIONS = ("permessage-deflate; client_max_window_bits",
                  "permessage-deflate; server_no_context_takeover; client_no_context_takeover")


if __name__ == "__main__":
    unittest.main(verbosity=2)
