"""The network check (posture.py)."""

import os
import unittest

from .. import posture


class Network(unittest.TestCase):
    """The check a worker makes before anything scanned runs where the
    sandbox's lack of network is its platform's (Kubernetes)."""

    HEADER = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"

    def check(self, routes, environ=b""):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            r, r6, env = (os.path.join(d, n) for n in ("route", "route6", "environ"))
            with open(r, "w") as fh:
                fh.write(self.HEADER + "".join(routes))
            open(r6, "w").close()
            with open(env, "wb") as fh:
                fh.write(environ)
            return posture.reachable(timeout=0.5, route=r, route6=r6, environ=env)

    def test_only_loopback_is_nothing_reachable(self):
        self.assertEqual(self.check(["lo\t0000007F\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n"]), "")

    def test_a_gateway_that_answers_is_reachable(self):
        # A gateway of 127.0.0.1 on eth0: its ports answer (or refuse,
        # which is an answer too).
        got = self.check(["eth0\t00000000\t0100007F\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"])
        self.assertTrue(got.startswith("127.0.0.1 port"), got)

    def test_the_api_service_from_pid_1s_environment(self):
        got = self.check([], b"PATH=/bin\0KUBERNETES_SERVICE_HOST=127.0.0.1\0KUBERNETES_SERVICE_PORT=1\0")
        self.assertEqual(got, "127.0.0.1 port 1")
