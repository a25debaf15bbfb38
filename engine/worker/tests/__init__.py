"""The worker's tests, one file per module of the package, run as a package
from engine/ (engine/worker_py_test.go):

  python3 -B -m unittest discover -s worker/tests -t .
"""
